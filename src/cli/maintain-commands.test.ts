import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-maintain-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const run = (database: string, ...argv: string[]) => runCli(database, argv);

describe('mneme maintain', () => {
  it('prints what each task did, one line per task', async () => {
    const database = join(folder, 'all.db');
    await run(database, 'add', 'Oz prefers dark mode in the editor', '--scope', 'personal', '--user', 'oz');
    await run(database, 'add', 'Oz prefers dark mode in every editor', '--scope', 'personal', '--user', 'oz');
    const result = await run(database, 'maintain', '--now', '2030-01-01T00:00:00Z');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toBe(
      [
        'maintenance at 2030-01-01T00:00:00.000Z',
        'decay (ebbinghaus): 2 checked, 2 decayed, 2 archived',
        'episodes: 0 episodes from 0 messages in 0 channels',
        'consolidate: 0 checked, 0 merged into 0',
        'link: 0 checked, 0 links created, 0 removed (no embedding model: only links to archived memories were removed)',
        'dream: skipped (no chat model configured)',
        '',
      ].join('\n'),
    );
  });

  it('runs one task with --task, and prints JSON with --json', async () => {
    const database = join(folder, 'one.db');
    await run(database, 'add', 'The release train leaves every Tuesday');
    await run(database, 'add', 'The release train leaves every second Tuesday');
    const result = await run(database, 'maintain', '--task', 'consolidate', '--json');
    expect(result.code).toBe(0);
    expect(Object.keys(JSON.parse(result.stdout))).toEqual(['now', 'consolidate']);
    expect(JSON.parse(result.stdout).consolidate).toEqual({ checked: 2, clusters: 1, merged: 2, skipped: null });
    expect((await run(database, 'list')).stdout).toContain('The release train leaves every second Tuesday');
  });

  it('refuses an unknown task or time with exit code 2', async () => {
    const database = join(folder, 'bad.db');
    const task = await run(database, 'maintain', '--task', 'nap');
    expect(task.code).toBe(2);
    expect(task.stderr).toBe(
      "mneme: option '--task <task>' argument 'nap' is invalid. Allowed choices are decay, episodes, consolidate, link, dream, all.\n",
    );
    const time = await run(database, 'maintain', '--now', 'soon');
    expect(time.code).toBe(2);
    expect(time.stderr).toMatch(/now must be an ISO 8601 time/);
  });
});
