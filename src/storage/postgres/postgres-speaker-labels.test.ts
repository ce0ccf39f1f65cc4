import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerKey } from '../../core/scope.js';
import { globalMemory } from '../global-memory.fixture.js';
import type { NewMemory } from '../memory-store.js';
import { createPgPoolDatabase, type PostgresDatabase } from './postgres-database.js';
import { createPgliteDatabase } from './postgres-pglite-database.js';
import { hasPostgresBinaries, startTestPostgresServer, type TestPostgresServer } from './postgres-server.fixture.js';
import { freshPostgresStorage } from './postgres-test-database.fixture.js';

/**
 * A user who renames themselves leaves their old name to be labelled in the memories that call them by it (ADR 44).
 * The rename read and locked every memory that names the user (`FOR UPDATE`), whatever its text: a user key renaming
 * itself in a loop held the write that long each time. Only the memories whose text can hold the name are read now.
 */

const at = Date.parse('2026-03-02T10:00:00Z');

/** A fact of Eve's, without a vector. */
function personal(content: string): NewMemory {
  return globalMemory(content, {
    scope: 'personal',
    owner: ownerKey('personal', { userId: 'eve' }),
    userId: 'eve',
    source: 'extraction',
  });
}

const holding = ['DANA prefers tea', 'Dana-approved invoices only', 'Ask 🙂Dana about the lease'];
const others = Array.from({ length: 20 }, (_, index) => `Prefers item number ${index} on Tuesdays`);

function describeRename(name: string, database: () => PostgresDatabase) {
  describe(name, () => {
    it('reads and locks only the memories whose text can hold the name a user leaves', async () => {
      const storage = await freshPostgresStorage(database)();
      await storage.directory.putUser({ id: 'eve', displayName: 'Dana' }, at);
      const written = await storage.memories.insert([...holding, ...others].map(personal), { at, actor: 'tester' });
      // A row a transaction locks or changes takes its id as xmax: the rename's transaction is the one that moves it.
      const unnamed = written.slice(holding.length).map((memory) => Number(memory.id));
      const xmax = async () =>
        (
          await database().query<{ xmax: string }>(
            'SELECT xmax::text AS xmax FROM memories WHERE id = ANY($1::bigint[]) ORDER BY id',
            [unnamed],
          )
        ).rows.map((row) => row.xmax);
      const before = await xmax();
      await storage.directory.putUser({ id: 'eve', displayName: 'Dora' }, at + 1);
      const after = await storage.memories.get(written.map((memory) => memory.id));
      expect(after.slice(0, holding.length).map((memory) => memory.content)).toEqual([
        'Dana (eve) prefers tea',
        'Dana (eve)-approved invoices only',
        'Ask 🙂Dana (eve) about the lease',
      ]);
      // The rename locked none of the memories without the name.
      expect(await xmax()).toEqual(before);
      expect(after.slice(holding.length).map((memory) => memory.content)).toEqual(others);
    });
  });
}

let pglite: PostgresDatabase;
beforeAll(async () => {
  pglite = await createPgliteDatabase('pglite:memory:');
});
afterAll(async () => {
  await pglite?.close();
});
describeRename('PGlite', () => pglite);

if (hasPostgresBinaries) {
  let server: TestPostgresServer;
  let pool: PostgresDatabase;
  beforeAll(async () => {
    server = await startTestPostgresServer();
    pool = createPgPoolDatabase(server.url);
  });
  afterAll(async () => {
    await pool?.close();
    await server?.stop();
  });
  describeRename('PostgreSQL 15 server', () => pool);
}
