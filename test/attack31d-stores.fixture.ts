import { afterAll, beforeAll, describe } from 'vitest';
import { createPgPoolDatabase, type PostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { freshPostgresStorage } from '../src/storage/postgres/postgres-test-database.fixture.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';

/**
 * Runs `tests` on each store, each in a `describe` of its name: SQLite `:memory:`, PGlite and (when its binaries are
 * there) the PostgreSQL 15 server, the last two on an empty schema per storage opened.
 */
export function onEachStore(tests: (open: () => Promise<Storage>) => void): void {
  describe('SQLite', () => tests(async () => createSqliteStorage({ path: ':memory:' })));
  describe('PGlite', () => {
    let pglite: PostgresDatabase;
    beforeAll(async () => {
      pglite = await createPgliteDatabase('pglite:memory:');
    });
    afterAll(async () => {
      await pglite?.close();
    });
    tests(() => freshPostgresStorage(() => pglite)());
  });
  if (!hasPostgresBinaries) return;
  describe('PostgreSQL 15 server', () => {
    let server: TestPostgresServer;
    let pool: PostgresDatabase;
    beforeAll(async () => {
      server = await startTestPostgresServer();
      pool = createPgPoolDatabase(server.url);
    }, 60_000);
    afterAll(async () => {
      await pool?.close();
      await server?.stop();
    });
    tests(() => freshPostgresStorage(() => pool)());
  });
}
