import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgliteDatabase, PGLITE_OWNER_FILE } from '../src/storage/postgres/postgres-pglite-database.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';

const run = promisify(execFile);
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23b-pglite-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

/** The built CLI in a process of its own, as a user runs it beside a `mneme serve`. */
async function cliProcess(database: string, argv: readonly string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run(process.execPath, [mnemeBinary, '--db', database, ...argv], {
      env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
    });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stderr: failed.stderr ?? '' };
  }
}

/** README, PostgreSQL: a `pglite:<folder>` is PGlite in one process; a second process on it must not lose writes. */
describe('a pglite:<folder> database opened by two processes at once', () => {
  it('never acknowledges a memory that a second process wrote and then loses it once the first process stops', {
    timeout: 120_000,
  }, async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    const database = `pglite:${join(folder, 'store')}`;
    const made = await runCli(database, ['add', 'The first memory names the kestrel server']);
    expect(made.code, made.stderr).toBe(0);

    const serve = await startServeProcess(database, children);
    const byServe = await serve.call('POST', '/api/memories', { content: 'The serve process stored the osprey note' });
    expect(byServe.status).toBe(201);

    // A second process on the same folder while the first has it open.
    const second = await cliProcess(database, ['add', 'The second process stored the heron note']);

    const later = await serve.call('POST', '/api/memories', {
      content: 'The serve process later stored the plover note',
    });
    expect(later.status).toBe(201);
    const exited = new Promise((resolve) => serve.child.once('exit', resolve));
    serve.child.kill('SIGTERM');
    await exited;

    const listed = await runCli(database, ['list', '--json'], { create: false });
    expect(listed.code, listed.stderr).toBe(0);
    const contents = (JSON.parse(listed.stdout) as { memories: { content: string }[] }).memories.map(
      (memory) => memory.content,
    );
    expect(contents).toContain('The serve process stored the osprey note');
    expect(contents).toContain('The serve process later stored the plover note');
    // Refused with a line saying why (exit 6, busy), and nothing of it stored.
    expect(second.code).toBe(6);
    expect(second.stderr).toMatch(/^mneme: .*is open in another process \(pid \d+\)/);
    expect(contents).not.toContain('The second process stored the heron note');
  });

  it('opens a folder again after the process that had it open was killed with kill -9', {
    timeout: 120_000,
  }, async () => {
    const database = `pglite:${join(folder, 'killed')}`;
    expect((await runCli(database, ['add', 'The wren note was stored first'])).code).toBe(0);
    const serve = await startServeProcess(database, children);
    expect(
      (await serve.call('POST', '/api/memories', { content: 'The serve process stored the finch note' })).status,
    ).toBe(201);
    const exited = new Promise((resolve) => serve.child.once('exit', resolve));
    serve.child.kill('SIGKILL');
    await exited;
    const added = await cliProcess(database, ['add', 'The lark note came after the kill']);
    expect(added.code, added.stderr).toBe(0);
    const listed = await runCli(database, ['list', '--json'], { create: false });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('The wren note was stored first');
    // Acknowledged by the killed process: in the files at commit (PGlite's fsync is off: not past a power cut).
    expect(listed.stdout).toContain('The serve process stored the finch note');
    expect(listed.stdout).toContain('The lark note came after the kill');
  });

  it('opens a folder whose owner file names this very process, left by an earlier process of the same pid', {
    timeout: 60_000,
  }, async () => {
    // A container's process is often pid 1 again after a restart: the file its killed predecessor left names it.
    const store = join(folder, 'same-pid');
    const database = `pglite:${store}`;
    expect((await runCli(database, ['add', 'The swift note was stored first'])).code).toBe(0);
    writeFileSync(join(store, 'mneme-pglite.pid'), `${process.pid}\n`);
    const listed = await runCli(database, ['list'], { create: false });
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toContain('The swift note was stored first');
  });
});

async function storedContents(database: string): Promise<string[]> {
  const listed = await runCli(database, ['list', '--json', '--limit', '500'], { create: false });
  expect(listed.code, listed.stderr).toBe(0);
  return (JSON.parse(listed.stdout) as { memories: { content: string }[] }).memories.map((memory) => memory.content);
}

describe('the claim on a pglite:<folder> database', () => {
  it('opens a folder whose owner file names a running process that is not mneme, left by one that died', {
    timeout: 60_000,
  }, async () => {
    // The pid a killed mneme left in the folder now belongs to another program (pids are reused).
    const store = join(folder, 'reused-pid');
    const database = `pglite:${store}`;
    expect((await runCli(database, ['add', 'The robin note was stored first'])).code).toBe(0);
    const other = spawn('sleep', ['60']);
    children.push(other);
    writeFileSync(join(store, PGLITE_OWNER_FILE), `${other.pid}\n`);
    const added = await cliProcess(database, ['add', 'The thrush note came after the restart']);
    expect(added.code, added.stderr).toBe(0);
    expect(await storedContents(database)).toEqual(
      expect.arrayContaining(['The robin note was stored first', 'The thrush note came after the restart']),
    );
  });

  it('lets several processes started at once on a folder a killed process left keep every write they acknowledged', {
    timeout: 180_000,
  }, async () => {
    const store = join(folder, 'stampede');
    const database = `pglite:${store}`;
    expect((await runCli(database, ['add', 'The stampede store was made'])).code).toBe(0);
    // A dead process's claim, as kill -9 leaves it.
    const dead = spawn('true');
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(join(store, PGLITE_OWNER_FILE), `${dead.pid}\n`);
    const notes = ['alpha', 'bravo', 'charlie', 'delta'].map((word) => `The ${word} process stored its note`);
    const runs = await Promise.all(notes.map((note) => cliProcess(database, ['add', note])));
    const stored = await storedContents(database);
    for (const [index, note] of notes.entries()) {
      const { code, stderr } = runs[index] ?? { code: -1, stderr: '' };
      if (code === 0) expect(stored, `${note} was acknowledged`).toContain(note);
      else {
        // Refused as busy (exit 6) with the line that says why, and nothing of it stored.
        expect(code, stderr).toBe(6);
        expect(stderr).toMatch(/is open in another process/);
        expect(stored).not.toContain(note);
      }
    }
    expect(runs.some((result) => result.code === 0)).toBe(true);
  });

  it('opens one folder through a symbolic link, and through two paths in one process as one PGlite', async () => {
    const store = join(folder, 'aliased');
    mkdirSync(store);
    const alias = join(folder, 'alias');
    symlinkSync(store, alias);
    const first = await createPgliteDatabase(`pglite:${alias}`);
    const second = await createPgliteDatabase(`pglite:${store}`);
    try {
      await first.exec("CREATE TABLE notes (note text); INSERT INTO notes VALUES ('the linnet note')");
      expect((await second.query<{ note: string }>('SELECT note FROM notes')).rows).toEqual([
        { note: 'the linnet note' },
      ]);
    } finally {
      await first.close();
      await second.close();
    }
    const again = await createPgliteDatabase(`pglite:${alias}`);
    try {
      expect((await again.query<{ note: string }>('SELECT note FROM notes')).rows).toEqual([
        { note: 'the linnet note' },
      ]);
    } finally {
      await again.close();
    }
  });
});
