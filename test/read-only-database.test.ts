import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';
import { tmpfsMounts } from './tmpfs-mounts.js';

/**
 * wt-a: a database mneme may not write. SQLite opens such a file read-only without a word, so `mneme serve` started
 * on it and answered every write 500 STORE_FAILED, and `mneme mcp` took a session whose every memory failed; on a
 * read-only mount without the file's -shm, every command said only "unable to open database file". A service now
 * refuses such a file at open, in one line that says which file, why and what to do (exit 7, nothing started), and
 * a read-only mount is named when SQLite cannot open the file there at all. Commands that only read still open a
 * file they may not write (test/availability.test.ts: `mneme search` on a read-only file).
 *
 * Tests run as root, whom a file's mode does not stop. Two simulations of what a user meets: a tmpfs remounted
 * read-only (a read-only mount; needs the right to mount), and `chmod 444` with mneme run as the user `nobody` (a file
 * the user mneme runs as may not write; needs root and setpriv). Each is skipped when it cannot be set up.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-read-only-'));
chmodSync(folder, 0o755);
const { mount, canMount, unmountAll } = tmpfsMounts(folder);

afterAll(() => {
  unmountAll();
  rmSync(folder, { recursive: true, force: true });
});

const nobody = 65534;
const canRunAsNobody = (() => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('setpriv', [`--reuid=${nobody}`, `--regid=${nobody}`, '--clear-groups', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** True when `mneme serve` got as far as listening (it is stopped then). */
  listened: boolean;
}

/** Runs the built `mneme` (as `nobody` when asked) until it exits, or, for `serve`, until it listens; 30 s at most. */
function runMneme(args: readonly string[], options: { asNobody?: boolean } = {}): Promise<Run> {
  const command = options.asNobody ? 'setpriv' : process.execPath;
  const argv = options.asNobody
    ? [`--reuid=${nobody}`, `--regid=${nobody}`, '--clear-groups', process.execPath, mnemeBinary, ...args]
    : [mnemeBinary, ...args];
  const child = spawn(command, argv, {
    env: { PATH: process.env.PATH, HOME: folder, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let listened = false;
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (!listened && /listening on http/.test(stderr)) {
        listened = true;
        child.kill('SIGKILL');
      }
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, listened });
    });
  });
}

/** A database with one memory in it, closed (its -wal and -shm removed, as after a clean stop). */
async function databaseWithAMemory(path: string): Promise<void> {
  const made = await runCli(path, ['add', 'the spare key is under the blue pot']);
  expect(made.code).toBe(0);
}

describe.skipIf(!canMount)(
  'a database on a read-only mount (a tmpfs remounted read-only; needs the right to mount)',
  () => {
    let path = '';
    beforeAll(async () => {
      const disk = mount('disk', 16 << 20);
      if (disk === null) throw new Error('mount failed after the probe');
      path = join(disk, 'mneme.db');
      await databaseWithAMemory(path);
      execFileSync('mount', ['-o', 'remount,ro', disk]);
    });

    it('keeps mneme serve from starting, with one line that says the mount is read-only, exit code 7', {
      timeout: 60_000,
    }, async () => {
      const served = await runMneme(['--db', path, 'serve', '--port', '0']);
      expect(served).toMatchObject({ listened: false, code: 7, stdout: '' });
      // `mneme: opening <path>`, then the refusal.
      expect(served.stderr.trimEnd().split('\n').at(-1)).toMatch(
        /^mneme: cannot open the database at .*mneme\.db: the file is on a read-only file system \(a read-only mount\), and a service that would refuse every write does not start on it: mount it read-write, or copy the file \(with its -wal\) somewhere writable and open the copy$/,
      );
    });

    it('answers a command that reads or writes there with one line naming the read-only mount, exit code 7', {
      timeout: 60_000,
    }, async () => {
      for (const args of [
        ['search', 'spare key'],
        ['add', 'a memory for a read-only mount'],
      ]) {
        const run = await runMneme(['--db', path, ...args]);
        expect(run).toMatchObject({ listened: false, code: 7, stdout: '' });
        expect(run.stderr).toMatch(
          /^mneme: cannot open the database at .*mneme\.db: the file is on a read-only file system \(a read-only mount\), where SQLite cannot create the -shm file it needs even to read a database in WAL mode: mount it read-write, or copy the file \(with its -wal\) somewhere writable and open the copy\n$/,
        );
      }
    });

    it('refuses createMneme asked for a writable database with STORE_FAILED naming the read-only mount', async () => {
      const opened = await createMneme({ path, writable: true }).catch((error: unknown) => error);
      expect(isMnemeError(opened, 'STORE_FAILED')).toBe(true);
      expect((opened as Error).message).toMatch(/the file is on a read-only file system \(a read-only mount\)/);
    });
  },
);

describe.skipIf(!canRunAsNobody)(
  'a database file the user mneme runs as may not write (chmod 444, run as nobody; needs root and setpriv)',
  () => {
    let path = '';
    beforeAll(async () => {
      const data = join(folder, 'shared');
      mkdirSync(data);
      chmodSync(data, 0o777);
      path = join(data, 'mneme.db');
      await databaseWithAMemory(path);
      chmodSync(path, 0o444);
    });

    const refusal = new RegExp(
      `^mneme: cannot open the database at .*mneme\\.db: the file is read-only to the user mneme runs as \\(uid ${nobody}\\), and a service that would refuse every write does not start on it: give that user write access to the file, its -wal and -shm and its folder \\(chmod u\\+w, chown\\), or copy it somewhere writable and open the copy \\(commands that only read, such as mneme search, still open it\\)$`,
    );

    it('keeps mneme serve from starting, where it answered every write 500, with one line and exit code 7', {
      timeout: 60_000,
    }, async () => {
      const before = readFileSync(path);
      const served = await runMneme(['--db', path, 'serve', '--port', '0'], { asNobody: true });
      expect(served).toMatchObject({ listened: false, code: 7, stdout: '' });
      expect(served.stderr.trimEnd().split('\n').at(-1)).toMatch(refusal);
      // Refused before SQLite opened it: no -wal or -shm made, the file as it was.
      expect(readFileSync(path).equals(before)).toBe(true);
      expect([existsSync(`${path}-wal`), existsSync(`${path}-shm`)]).toEqual([false, false]);
    });

    it('keeps mneme mcp from starting a session whose every memory would fail, with that line and exit code 7', {
      timeout: 60_000,
    }, async () => {
      const session = await runMneme(['--db', path, 'mcp', '--user', 'ann'], { asNobody: true });
      expect(session).toMatchObject({ code: 7, stdout: '' });
      expect(session.stderr.trimEnd().split('\n').at(-1)).toMatch(refusal);
    });
  },
);
