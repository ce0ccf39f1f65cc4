import { afterAll, describe, expect, it } from 'vitest';
import { createPgPoolDatabase } from '../src/storage/postgres/postgres-database.js';
import { latestPostgresSchemaVersion, migratePostgres } from '../src/storage/postgres/postgres-migrations.js';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { createPostgresStorage } from '../src/storage/postgres/postgres-storage.js';

/*
 * An export reads users, projects, topics, channels and memberships a page at a time in byte order, as SQLite sorts
 * (ADR 49). A primary key's index is in the database's collation: on a database collated by a language, each page
 * sorted the whole table (measured at 50,000 users on the test server: 24 ms a page of 500, 0.26 ms through an index
 * in byte order). PostgreSQL's step 15 adds those indexes (ADR 51); a database of an earlier release gets them when
 * this mneme opens it.
 */

let server: Promise<TestPostgresServer> | undefined;
afterAll(async () => {
  await (await server)?.stop();
});

const at = Date.parse('2026-03-02T10:00:00Z');
const USERS = ['Zoe', 'alice', 'bob_2', 'bob-1', 'bob1'];

describe.skipIf(!hasPostgresBinaries)('the indexes in byte order of step 15', () => {
  it('are added to a database of step 13 collated by ICU en-US, whose pages of an export then walk them', async () => {
    server ??= startTestPostgresServer();
    const options = ['--template=template0', '--locale=C', '--locale-provider=icu', '--icu-locale=en-US'];
    const database = createPgPoolDatabase(await (await server).database('byte_order_indexes', options));
    try {
      // The database as the release before this step left it, with users, spaces and members.
      expect(await migratePostgres(database, 13)).toBe(13);
      const old = await createPostgresStorage({ database, ownsDatabase: false, migrateTo: 13 });
      for (const id of USERS) await old.directory.putUser({ id, displayName: `Person ${id}` }, at);
      await old.memberships.putChannel({ id: 'Room-B', visibility: 'private', members: USERS }, at);
      await old.close();

      const storage = await createPostgresStorage({ database, ownsDatabase: false });
      try {
        const { rows: steps } = await database.query<{ version: number }>(
          'SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1',
        );
        expect(steps[0]?.version).toBe(latestPostgresSchemaVersion);
        const { rows: indexes } = await database.query<{ indexname: string; indexdef: string }>(
          `SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%_in_byte_order' ORDER BY indexname`,
        );
        expect(indexes.map((index) => index.indexname)).toEqual([
          'channels_in_byte_order',
          'members_in_byte_order',
          'projects_in_byte_order',
          'topics_in_byte_order',
          'users_in_byte_order',
        ]);
        for (const { indexdef } of indexes) expect(indexdef).toContain('COLLATE "C"');
        // The rows stay, read in byte order.
        const users = await storage.transfer.users(null, 10);
        expect(users.map((user) => user.id)).toEqual([...USERS].sort());

        // A page in byte order is read from the index, not sorted (the planner told to sort only when it must).
        const plan = await database.transaction(async (transaction) => {
          await transaction.query(
            "SELECT set_config('enable_sort', 'off', true), set_config('enable_seqscan', 'off', true)",
          );
          const { rows } = await transaction.query<{ 'QUERY PLAN': string }>(
            `EXPLAIN SELECT id FROM users WHERE id COLLATE "C" > 'alice' ORDER BY id COLLATE "C" LIMIT 500`,
          );
          const { rows: members } = await transaction.query<{ 'QUERY PLAN': string }>(
            `EXPLAIN SELECT kind, space_id, user_id FROM members
             WHERE (kind COLLATE "C", space_id COLLATE "C", user_id COLLATE "C") > ('channel', 'Room-B', 'alice')
             ORDER BY kind COLLATE "C", space_id COLLATE "C", user_id COLLATE "C" LIMIT 500`,
          );
          return [...rows, ...members].map((row) => row['QUERY PLAN']).join('\n');
        });
        expect(plan).toContain('users_in_byte_order');
        expect(plan).toContain('members_in_byte_order');
        expect(plan).not.toMatch(/Sort/);
      } finally {
        await storage.close();
      }
    } finally {
      await database.close();
    }
  }, 120_000);
});

if (!hasPostgresBinaries) {
  describe(`the indexes in byte order of step 15 (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('are added to a database of step 13', () => {});
  });
}
