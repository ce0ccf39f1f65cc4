import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack28b-doctor-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Wt-attack28b, `--as` on the CLI: `mneme doctor` opens the database itself, so `--as bob` did not apply to it, and a
 * user read the vector index's status (its model, how many active memories of every scope have no vector) that
 * `Mneme.as` refuses a user (`vectorStatus`, as `mneme --as bob reembed` is refused). It is refused as the other
 * commands that open the database themselves are: exit 2, one line, nothing printed.
 */
it('refuses --as on doctor, which reads the whole database', async () => {
  const database = join(folder, 'doctor.db');
  const added = await runCli(database, ['add', 'Ann keeps her passport in the blue drawer', '--user', 'ann'], {
    create: true,
  });
  expect(added.code).toBe(0);
  expect((await runCli(database, ['--as', 'bob', 'reembed'])).code).toBe(5);
  const doctor = await runCli(database, ['--as', 'bob', 'doctor']);
  expect(doctor.code).toBe(2);
  expect(doctor.stdout).toBe('');
  expect(doctor.stderr).toMatch(/^mneme: --as does not apply to mneme doctor.*\n$/);
  expect((await runCli(database, ['doctor'])).code).toBe(0);
});
