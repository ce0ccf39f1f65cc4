import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-pglite-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** README, The CLI: a mistyped --db never silently starts an empty database; `pglite:<folder>` goes wherever a path goes. */
describe('a pglite:<folder> database on the command line', () => {
  it('that does not exist is refused by a command that does not create one (exit 3), and no folder is made', async () => {
    const missing = join(folder, 'typo', 'store');
    const database = `pglite:${missing}`;
    for (const argv of [['search', 'coffee'], ['add', 'x'], ['list']]) {
      const run = await runCli(database, argv, { create: false });
      expect(run, argv.join(' ')).toEqual({
        code: 3,
        stdout: '',
        stderr: `mneme: no database at ${database}: check --db or MNEME_DB, or create it (mneme init, or --create)\n`,
      });
    }
    const doctor = await runCli(database, ['doctor'], { create: false });
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain('database: not created yet');
    const copy = await runCli(
      join(folder, 'unused.db'),
      ['copy', '--from', database, '--to', join(folder, 'copy.db')],
      {
        create: false,
      },
    );
    expect(copy).toMatchObject({ code: 3, stderr: `mneme: there is no database at ${database}; check --from\n` });
    expect(existsSync(join(folder, 'typo'))).toBe(false);
    expect(existsSync(join(folder, 'copy.db'))).toBe(false);
  });

  it('is made with --create, its missing parent folders too, and opened afterwards without it', {
    timeout: 60_000,
  }, async () => {
    const database = `pglite:${join(folder, 'new', 'parents', 'store')}`;
    const added = await runCli(database, ['add', 'The staging server is called kestrel']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const listed = await runCli(database, ['list'], { create: false });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('The staging server is called kestrel');
  });

  it('that names a file is refused before PGlite opens it (exit 7)', async () => {
    const file = join(folder, 'a-file.db');
    writeFileSync(file, '');
    const run = await runCli(`pglite:${file}`, ['list'], { create: false });
    expect(run).toEqual({
      code: 7,
      stdout: '',
      stderr: `mneme: cannot use pglite:${file} as the database: ${file} is not a folder (PGlite keeps a database in a folder); give another --db or MNEME_DB\n`,
    });
  });
});
