import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

/**
 * `mneme policy set` (and `init --set`) take settings as key=value pairs. A setting given twice with two values
 * (`decay=ebbinghaus decay=salience`, a script that appends to a line) was taken as the last one without a word and
 * stored as a new version, changing how every memory decays: a malformed request that changed something.
 */
describe('a setting given twice to mneme policy set or init --set', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-policy-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('is refused with exit 2 and one line, and the policy stays as it was', async () => {
    const path = join(folder, 'twice.db');
    expect((await runCli(path, ['init'])).code).toBe(0);
    const run = await runCli(path, ['policy', 'set', 'decay=ebbinghaus', 'decay=salience']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('mneme: the setting decay is given twice (ebbinghaus, then salience): give it once\n');
    const history = await runCli(path, ['--json', 'policy', 'history']);
    expect((JSON.parse(history.stdout) as unknown[]).length).toBe(1);
  });

  it('is refused by init --set too, before the database is made', async () => {
    const path = join(folder, 'init.db');
    const run = await runCli(path, ['init', '--set', 'recall.topK=8', '--set', 'recall.topK=9']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('mneme: the setting recall.topK is given twice (8, then 9): give it once\n');
    expect(existsSync(path)).toBe(false);
  });

  it('still takes the same value given twice', async () => {
    const path = join(folder, 'same.db');
    const run = await runCli(path, ['--json', 'init', '--set', 'recall.topK=8', 'recall.topK=8']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ overrides: { recall: { topK: 8 } } });
  });
});
