import { afterAll, beforeAll } from 'vitest';
import { describeStorageContract } from '../memory-store.contract.js';
import { describeTransferStoreContract } from '../transfer-store.contract.js';
import type { PostgresDatabase } from './postgres-database.js';
import { createPgliteDatabase } from './postgres-pglite-database.js';
import { freshPostgresStorage } from './postgres-test-database.fixture.js';

let database: PostgresDatabase;

beforeAll(async () => {
  database = await createPgliteDatabase('pglite:memory:');
});

afterAll(async () => {
  await database.close();
});

describeStorageContract(
  'PGlite + pgvector',
  freshPostgresStorage(() => database),
);
// Every vector search through the HNSW graph (iterative scans), however small the viewer's scope.
describeStorageContract(
  'PGlite + pgvector, HNSW only',
  freshPostgresStorage(() => database, { exactScanLimit: 0 }),
);
describeTransferStoreContract(
  'PGlite',
  freshPostgresStorage(() => database),
  { snapshots: false },
);
