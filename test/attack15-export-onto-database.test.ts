import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-export-db-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Attack finding (wt-attack15): `mneme --db mneme.db export --out mneme.db` (a slip of the keyboard, or
 * a script's variables swapped) exited 0, "exported 4 lines to mneme.db": the export was renamed over the
 * database file, and every later command said the file is not a mneme database. Everything was lost.
 */
describe('mneme export --out naming the database itself', () => {
  it('is refused with exit 2 and one line, under any spelling of the path, and the database stays whole', async () => {
    const database = join(folder, 'mneme.db');
    expect(
      (await runCli(database, ['add', 'Ann keeps bees on the roof', '--scope', 'personal', '--user', 'ann'])).code,
    ).toBe(0);
    symlinkSync(database, join(folder, 'link.db'));
    for (const out of [database, join(folder, '.', 'mneme.db'), join(folder, 'link.db'), `${database}-wal`]) {
      const run = await runCli(database, ['export', '--out', out], { create: false });
      expect(run.code, out).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^mneme: --out names the database .+; give another file\n$/);
    }
    const listed = await runCli(database, ['--json', 'list', '--user', 'ann'], { create: false });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).total).toBe(1);
    // Another file is written as before.
    const other = await runCli(database, ['export', '--out', join(folder, 'backup.jsonl')], { create: false });
    expect(other.code, other.stderr).toBe(0);
  });
});
