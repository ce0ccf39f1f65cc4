import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgPoolDatabase } from '../src/storage/postgres/postgres-database.js';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';

/*
 * Found by running every command against a PostgreSQL 15 server as a new user would (session 32): since PostgreSQL 15
 * only a database's owner may create tables in its `public` schema. A user given a database made by another (the usual
 * way: an administrator creates the database, the application gets a role) saw only the server's words,
 * `permission denied for schema public`, at every command, and nothing of what to do.
 */

describe.skipIf(!hasPostgresBinaries)('a PostgreSQL user that may not create mneme tables', () => {
  let server: TestPostgresServer;
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('is told in one line what is missing and how to give it, and the way out works', async () => {
    const admin = createPgPoolDatabase(await server.database('not_owned'));
    try {
      await admin.query('CREATE ROLE app LOGIN');
      const url = (await server.database('not_owned')).replace('mneme@', 'app@');
      const refused = await runCli(url, ['add', 'The deploy runs on Kubernetes']);
      expect(refused.code).toBe(7);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/^mneme: opening the database at .*: permission denied for schema public: /);
      expect(refused.stderr).toContain('ALTER DATABASE <database> OWNER TO <user>');
      expect(refused.stderr).toContain('GRANT CREATE, USAGE ON SCHEMA public TO <user>');

      await admin.query('GRANT CREATE, USAGE ON SCHEMA public TO app');
      const added = await runCli(url, ['add', 'The deploy runs on Kubernetes']);
      expect(added).toMatchObject({ code: 0, stderr: '' });
    } finally {
      await admin.close();
    }
  }, 120_000);
});

if (!hasPostgresBinaries) {
  describe(`a PostgreSQL user that may not create mneme tables (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('is told what is missing', () => {});
  });
}
