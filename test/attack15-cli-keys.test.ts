import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-keys-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Attack finding (wt-attack15): `mneme keys create --label app --user ""` (a script's `--user "$USER_ID"`
 * with the variable unset) dropped the empty user and created an administrator key, exit 0; the README's
 * own recipe keeps only the key's line (`| head -n 1`), so nothing said the key acts for every user.
 */
describe('mneme keys create with an empty --user', () => {
  it('is refused with exit 2 and one line, and creates no key', async () => {
    const database = join(folder, 'keys.db');
    const run = await runCli(database, ['keys', 'create', '--label', 'chat app', '--user', '']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^mneme: invalid API key: userId: .+\n$/);
    const listed = await runCli(database, ['--json', 'keys', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([]);
    // A user-bound key is made as before.
    const bound = await runCli(database, ['keys', 'create', '--label', 'chat app', '--user', 'ann']);
    expect(bound.code, bound.stderr).toBe(0);
    expect(bound.stdout).toMatch(/bound to user ann/);
  });
});
