import { type ChildProcess, execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
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
