import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { accessByOthers } from '../src/storage/make-folders.js';
import { runCli } from './cli-harness.js';

/**
 * A store holds every user's memories and messages: another account of the machine must not read it. Before, a new
 * store was made with the process's umask (the file 0644, its folders 0755), so on a shared machine anyone could copy
 * every user's direct messages out of `./data/mneme.db`; an export the same.
 */
const root = mkdtempSync(join(tmpdir(), 'mneme-modes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => statSync(path).mode & 0o777;
const onPosix = process.platform !== 'win32';

describe.runIf(onPosix)('the files mneme makes for a store', () => {
  it('are readable by their owner alone: the SQLite file, its -wal and -shm, the folders made for it, an export', async () => {
    const folder = join(root, 'new', 'data');
    const path = join(folder, 'mneme.db');
    const mneme = await createMneme({ path, embedder: 'none' });
    try {
      await mneme.remember({ content: 'The door code is 4417', scope: 'personal', userId: 'ann' });
      const files = readdirSync(folder).sort();
      expect(files).toEqual(['mneme.db', 'mneme.db-shm', 'mneme.db-wal']);
      for (const file of files) expect(modeOf(join(folder, file)).toString(8), file).toBe('600');
    } finally {
      await mneme.close();
    }
    expect(modeOf(folder).toString(8)).toBe('700');
    expect(modeOf(join(root, 'new')).toString(8)).toBe('700');

    const out = join(root, 'export.jsonl');
    const exported = await runCli(path, ['export', '--out', out], { create: false });
    expect(exported.code, exported.stderr).toBe(0);
    expect(modeOf(out).toString(8)).toBe('600');
  });

  it('are readable by their owner alone for a new PGlite folder', { timeout: 60_000 }, async () => {
    const folder = join(root, 'pg', 'store');
    const mneme = await createMneme({ path: `pglite:${folder}`, embedder: 'none' });
    await mneme.close();
    expect(modeOf(folder).toString(8)).toBe('700');
    expect(modeOf(join(root, 'pg')).toString(8)).toBe('700');
  });
});

describe.runIf(onPosix)('a store other accounts can read', () => {
  /** A store made as before: the file 0644 in folders 0755 (the temporary root too: mkdtemp makes it 0700). */
  async function oldStore(name: string): Promise<{ folder: string; path: string }> {
    const folder = join(root, name);
    const path = join(folder, 'mneme.db');
    const mneme = await createMneme({ path, embedder: 'none' });
    await mneme.remember({ content: 'Bo keeps the spare key under the mat', scope: 'personal', userId: 'bo' });
    await mneme.close();
    chmodSync(root, 0o755);
    chmodSync(folder, 0o755);
    chmodSync(path, 0o644);
    return { folder, path };
  }

  async function serviceWarnings(path: string): Promise<string[]> {
    const warnings: string[] = [];
    const mneme = await createMneme({
      path,
      embedder: 'none',
      writable: true,
      logger: { warn: (message) => warnings.push(message) },
    });
    await mneme.close();
    return warnings;
  }

  it('is named by a service at its start and by doctor, with the fix, and keeps its mode', async () => {
    const { path } = await oldStore('old');
    try {
      const warnings = await serviceWarnings(path);
      expect(warnings).toEqual([
        `${path} can be read by every account on this machine (mode 644): it holds every user's memories and messages; chmod 600 ${path} and its -wal and -shm, or chmod 700 the folder it is in`,
      ]);
      const doctor = await runCli(path, ['--json', 'doctor'], { create: false });
      expect(doctor.code, doctor.stderr).toBe(0);
      expect(JSON.parse(doctor.stdout).database.readableByOthers).toBe(warnings[0]);
      expect(modeOf(path).toString(8)).toBe('644');

      chmodSync(path, 0o640);
      expect(await serviceWarnings(path)).toEqual([
        `${path} can be read by the accounts of its group (mode 640): it holds every user's memories and messages; chmod 600 ${path} and its -wal and -shm, or chmod 700 the folder it is in`,
      ]);
    } finally {
      chmodSync(root, 0o700);
    }
  });

  it('names the chmod of the store a shell can run, and judges a linked store by the folders above the store', async () => {
    const { folder, path } = await oldStore('my store');
    try {
      expect(accessByOthers(path, 'file')).toContain(`chmod 600 '${path}' and its -wal and -shm`);
      const closed = join(root, 'closed-links');
      mkdirSync(closed, { mode: 0o700 });
      const link = join(closed, 'mneme.db');
      symlinkSync(path, link);
      expect(accessByOthers(link, 'file')).toContain(`can be read by every account on this machine (mode 644)`);
      chmodSync(folder, 0o700);
      const open = join(root, 'open-links');
      mkdirSync(open, { mode: 0o755 });
      symlinkSync(path, join(open, 'mneme.db'));
      expect(accessByOthers(join(open, 'mneme.db'), 'file')).toBeNull();
    } finally {
      chmodSync(root, 0o700);
    }
  });

  it('is not named once its file or a folder above it is closed to the others', async () => {
    const { folder, path } = await oldStore('closed');
    try {
      chmodSync(folder, 0o700);
      expect(await serviceWarnings(path)).toEqual([]);
      chmodSync(folder, 0o755);
      chmodSync(path, 0o600);
      expect(await serviceWarnings(path)).toEqual([]);
      const doctor = await runCli(path, ['--json', 'doctor'], { create: false });
      expect(JSON.parse(doctor.stdout).database.readableByOthers).toBeNull();
    } finally {
      chmodSync(root, 0o700);
    }
  });
});
