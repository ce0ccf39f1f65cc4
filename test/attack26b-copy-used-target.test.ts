import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack26b-copy-target-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-b, attack 26b): `mneme copy` refused a target only when it held memories or messages, and
 * copied with INSERT OR IGNORE, keeping every row already there. A target someone had initialised (`mneme init`)
 * and declared a channel in took the whole copy and reported every count equal, yet kept its own rows: the
 * policy of another preset, and the channel public where the source has it private, so a user who is no member
 * of it recalled its room memories on the copy. A target holding only an API key took every row, then failed
 * on the counts with all of them written. The copy now refuses a target holding any row it would copy, before
 * it writes anything (unless the target holds an unfinished copy of the same source).
 */
describe('mneme copy into a database that is not new', () => {
  it('refuses it before writing anything, so no channel of the source becomes public and no preset changes', async () => {
    const source = join(folder, 'source.db');
    expect((await runCli(source, ['init', '--preset', 'matrix-bot'])).code).toBe(0);
    expect(
      (await runCli(source, ['channels', 'put', 'plans', '--visibility', 'private', '--members', 'ann'])).code,
    ).toBe(0);
    expect(
      (await runCli(source, ['add', '--scope', 'room', '--channel', 'plans', 'The secret plan is blue'])).code,
    ).toBe(0);

    const used = join(folder, 'used.db');
    expect((await runCli(used, ['init'])).code).toBe(0);
    expect((await runCli(used, ['channels', 'put', 'plans', '--visibility', 'public', '--members', 'ann'])).code).toBe(
      0,
    );
    const keyed = join(folder, 'keyed.db');
    expect((await runCli(keyed, ['keys', 'create', '--label', 'ops'])).code).toBe(0);

    for (const target of [used, keyed]) {
      const copied = await runCli('unused', ['copy', '--from', source, '--to', target]);
      // Before: exit 0 and "every table's count matches" into used.db; exit 7 after writing every row into keyed.db.
      expect(copied.code).toBe(4);
      expect(copied.stderr).toMatch(
        /already holds rows \(.*\), which a copy would keep instead of the source's; copy into a new database/,
      );
      expect((await runCli(target, ['--as', 'bob', 'search', 'secret plan', '--channel', 'plans'])).stdout).not.toMatch(
        /secret plan/,
      );
      const mneme = await createMneme({ path: target, logger: quiet });
      try {
        expect((await mneme.list({ archived: 'include', limit: 10 })).memories).toEqual([]);
      } finally {
        await mneme.close();
      }
    }

    // Into a new database the copy holds the source's policy and audience.
    const fresh = join(folder, 'fresh.db');
    expect((await runCli('unused', ['copy', '--from', source, '--to', fresh])).code).toBe(0);
    expect((await runCli(fresh, ['policy', 'show'])).stdout).toMatch(/^preset: matrix-bot/);
    expect((await runCli(fresh, ['--as', 'bob', 'search', 'secret plan', '--channel', 'plans'])).code).not.toBe(0);
  }, 120_000);
});
