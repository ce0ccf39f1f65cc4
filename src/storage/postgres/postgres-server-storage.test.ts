import { afterAll, beforeAll, describe, it } from 'vitest';
import { describeStorageContract } from '../memory-store.contract.js';
import { describeTransferStoreContract } from '../transfer-store.contract.js';
import { createPgPoolDatabase, type PostgresDatabase } from './postgres-database.js';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from './postgres-server.fixture.js';
import { freshPostgresStorage } from './postgres-test-database.fixture.js';

// Debian's postgresql-15 has no pgvector: this run covers everything but vector search, and says so.
if (hasPostgresBinaries) {
  let server: TestPostgresServer;
  let database: PostgresDatabase;

  beforeAll(async () => {
    server = await startTestPostgresServer();
    database = createPgPoolDatabase(server.url);
  });

  afterAll(async () => {
    await database?.close();
    await server?.stop();
  });

  describeStorageContract(
    'PostgreSQL 15 server',
    freshPostgresStorage(() => database),
    { vectorSearch: false },
  );
  describeTransferStoreContract(
    'PostgreSQL 15 server',
    freshPostgresStorage(() => database),
  );
} else {
  describe(`PostgreSQL 15 server (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('runs the storage contract on a real server', () => {});
  });
}
