import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-search-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let databases = 0;

/** Runs the CLI in-process against its own database file. */
function cli() {
  const database = join(folder, `search-${databases++}.db`);
  return (...argv: string[]) => runCli(database, argv);
}

describe('mneme search and mneme context', () => {
  it('searches as a viewer and prints rank, id, score, match, scope and content of each hit', async () => {
    const run = cli();
    await run('add', 'kestrel is the staging server');
    await run('add', 'Oz named his cat kestrel', '--scope', 'personal', '--user', 'oz', '--importance', '0.9');
    await run('add', 'Ann has a kestrel mug', '--scope', 'personal', '--user', 'ann');

    const asOz = await run('search', 'kestrel', '--user', 'oz');
    expect(asOz).toMatchObject({ code: 0, stderr: '' });
    const lines = asOz.stdout.trimEnd().split('\n');
    const times = String.raw`\(created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, accessed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)`;
    expect(lines[0]).toMatch(
      new RegExp(String.raw`^1\. #2 0\.\d{3} fts \[personal:oz\] ${times} Oz named his cat kestrel$`),
    );
    expect(lines[1]).toMatch(
      new RegExp(String.raw`^2\. #1 0\.\d{3} fts \[global\] ${times} kestrel is the staging server$`),
    );
    expect(lines[2]).toBe('(lexical only: no embedding model is configured)');
    expect(asOz.stdout).not.toContain('Ann');

    const explained = await run('search', 'kestrel', '--top', '1', '--explain');
    expect(explained.stdout).toMatch(
      /^1\. #1 .*\n {3}fts #1, calibrated 1\.00 \| relevance 1\.00x0\.8 .* = 0\.\d{3}\n/,
    );
  });

  it('prints when each hit was made and when it was last accessed, to the second, or never', async () => {
    const run = cli();
    await run('add', 'kestrel is the staging server');
    const json = JSON.parse((await run('search', 'kestrel', '--inspect', '--json')).stdout);
    const createdAt = String(json.hits[0].memory.createdAt).replace(/\.\d+Z$/, 'Z');
    const inspected = await run('search', 'kestrel', '--inspect');
    expect(inspected.stdout).toContain(`[global] (created ${createdAt}, accessed never) kestrel is the staging server`);

    await run('search', 'kestrel');
    const [memory] = JSON.parse((await run('list', '--json')).stdout).memories;
    const accessedAt = String(memory.lastAccessedAt).replace(/\.\d+Z$/, 'Z');
    expect((await run('search', 'kestrel', '--inspect')).stdout).toContain(
      `(created ${createdAt}, accessed ${accessedAt}) kestrel`,
    );
  });

  it('touches nothing with --inspect, in search and context; a search without it counts the access', async () => {
    const run = cli();
    await run('add', 'Oz prefers dark mode', '--scope', 'personal', '--user', 'oz');
    // The stored fields a retrieval writes (strength, shown as of now, fades with the wall clock: left out).
    const read = async () => {
      const { accessCount, lastAccessedAt, salience, importance } = JSON.parse(
        (await run('get', '1', '--json')).stdout,
      );
      return { accessCount, lastAccessedAt, salience, importance };
    };
    const before = await read();
    const inspected = JSON.parse((await run('search', 'dark mode', '--user', 'oz', '--inspect', '--json')).stdout);
    expect(inspected.hits[0].memory).toMatchObject({ id: 1, accessCount: 0, lastAccessedAt: null });
    expect((await run('context', 'dark mode', '--user', 'oz', '--inspect')).stdout).toContain('Oz prefers dark mode');
    expect(await read()).toEqual(before);

    await run('search', 'dark mode', '--user', 'oz');
    expect(await read()).toMatchObject({ accessCount: 1, lastAccessedAt: expect.any(String) });
  });

  it('prints the whole result as JSON with --json, in recent-first mode when asked', async () => {
    const run = cli();
    await run('add', 'kestrel is the staging server');
    await run('add', 'the printer is on floor 2');
    const result = await run('search', 'kestrel', '--mode', 'recent-first', '--json');
    const parsed = JSON.parse(result.stdout);
    expect(parsed).toMatchObject({ mode: 'recent-first', vectorLeg: 'not-in-mode' });
    expect(parsed.hits.map((hit: { match: string }) => hit.match)).toEqual(['fts', 'recent']);
    expect(parsed.hits[0].memory).toMatchObject({ content: 'kestrel is the staging server', accessCount: 1 });
  });

  it('prints the context block, or says there is nothing to recall', async () => {
    const run = cli();
    await run('add', 'Oz prefers dark mode', '--scope', 'personal', '--user', 'oz', '--importance', '1');
    const block = await run('context', 'dark mode please', '--user', 'oz');
    expect(block.code).toBe(0);
    expect(block.stdout).toMatch(
      /^\[Relevant Memories\]\n\(quoted memories: .*\)\n- \d{4}-\d\d-\d\d \[general\]: "Oz prefers dark mode"\n {2}\(match: fts, importance: 5\)\n$/,
    );
    expect((await run('context', 'dark mode please')).stdout).toBe('no memories found\n');
  });

  it('refuses a bad --top or --mode with exit code 2 and one clear line', async () => {
    const run = cli();
    const tooMany = await run('search', 'kestrel', '--top', '500');
    expect(tooMany).toMatchObject({ code: 2, stdout: '' });
    expect(tooMany.stderr).toBe(
      "mneme: option '--top <n>' argument '500' is invalid. expected a whole number from 1 to 100\n",
    );
    const mode = await run('search', 'kestrel', '--mode', 'fastest');
    expect(mode).toMatchObject({ code: 2, stdout: '' });
    expect(mode.stderr).toBe(
      "mneme: option '--mode <mode>' argument 'fastest' is invalid. Allowed choices are hybrid, recent-first.\n",
    );
    expect((await run('context', '   ')).stderr).toMatch(/query must not be empty/);
  });
});
