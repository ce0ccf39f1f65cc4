import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// Attack (session 5, wt-attack5; the fault predates ebbc3da): the vector index holds the model it was
// configured with in memory (`current`). Another process that opens the same database with another model
// of the same dimensions empties the index and declares its model; this process still stores vectors of its
// old model there, and a search by either model then ranks vectors of the other.
const folder = mkdtempSync(join(tmpdir(), 'mneme-model-switch-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});

function open(path: string) {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  return { database, index: createSqliteVectorIndex(database, {}) };
}

describe('attack5: two processes, two embedding models', () => {
  it('refuses a vector of the model another connection replaced, rather than storing it under the new one', () => {
    const path = join(folder, 'models.db');
    const serving = open(path);
    serving.index.configure({ model: 'old-model', dimensions: 4 });
    // Another process (a `mneme reembed` with the new model) opens the same file and switches the index.
    const other = open(path);
    other.index.configure({ model: 'new-model', dimensions: 4 });
    let refused = false;
    try {
      serving.database.transaction(() =>
        serving.index.put(1, 'global', { model: 'old-model', vector: Float32Array.from([1, 0, 0, 0]) }),
      )();
    } catch {
      refused = true;
    }
    const stored = serving.database.prepare<[], number>('SELECT count(*) FROM memory_vector_slices').pluck().get();
    const model = serving.database.prepare<[], string>('SELECT model FROM vector_index').pluck().get();
    expect(model).toBe('new-model');
    // Either the put is refused, or nothing of the old model is left in the index of the new one.
    expect({ refused, stored }).toEqual({ refused: true, stored: 0 });
  });

  it("keeps the old process's new memories out of the new model's index (through two engines on one file)", async () => {
    const path = join(folder, 'engines.db');
    const quiet = { warn: () => {}, info: () => {} };
    const serving = await createMneme({
      path,
      embedder: createFakeEmbeddingModel({ modelId: 'fake:old' }),
      logger: quiet,
    });
    const switched = await createMneme({
      path,
      embedder: createFakeEmbeddingModel({ modelId: 'fake:new' }),
      logger: quiet,
    });
    try {
      await serving.remember({ content: 'written by the old process after the switch' });
      const database = new Database(path, { readonly: true });
      try {
        const mixed = database
          .prepare<[], number>(
            `SELECT count(*) FROM memories
             WHERE embedding_model IS NOT NULL AND embedding_model != (SELECT model FROM vector_index)
               AND EXISTS (SELECT 1 FROM memory_vector_slices WHERE key BETWEEN memories.id * 64 AND memories.id * 64 + 63)`,
          )
          .pluck()
          .get();
        // Today: 1 (the old model's vector, searched by the new model's queries until a reembed replaces it).
        expect(mixed).toBe(0);
      } finally {
        database.close();
      }
    } finally {
      await serving.close();
      await switched.close();
    }
  });
});

describe('two engines, two embedding models, one PostgreSQL database (PGlite)', () => {
  // The new model of another size (64 and 32), then of the same size (64 and 64).
  it.each([32, 64])(
    "keeps the old engine's vectors out of the new model's index, and its searches off the new model's vectors (%i dimensions)",
    async (dimensions) => {
      const path = `pglite:${join(folder, `pglite-${dimensions}`)}`;
      const quiet = { warn: () => {}, info: () => {} };
      // Each engine opens its own vector index on the shared database, as two processes would.
      const serving = await createMneme({
        path,
        embedder: createFakeEmbeddingModel({ modelId: 'fake:old' }),
        logger: quiet,
      });
      await serving.remember({ content: 'the lighthouse keeper logs the tides at dawn' });
      const switched = await createMneme({
        path,
        embedder: createFakeEmbeddingModel({ modelId: 'fake:new', dimensions }),
        logger: quiet,
      });
      const database = await createPgliteDatabase(path);
      try {
        await switched.remember({ content: 'the lighthouse lamp is lit at dusk' });
        await serving.remember({ content: 'written by the old engine after the switch' });
        const mixed = await database.query<{ count: number }>(
          `SELECT count(*)::int AS count FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
         WHERE m.embedding_model IS DISTINCT FROM (SELECT model FROM vector_index)`,
        );
        expect(mixed.rows[0]?.count).toBe(0);
        const indexed = await database.query<{ content: string }>(
          'SELECT m.content FROM memory_vectors v JOIN memories m ON m.id = v.memory_id',
        );
        expect(indexed.rows.map((row) => row.content)).not.toContain('written by the old engine after the switch');
        // The old engine's query is of its own model: its recall ranks by text, not by the new model's vectors
        // (nor by casting them to its size).
        const recalled = await serving.recall({ query: 'lighthouse lamp at dusk', topK: 5 });
        expect(recalled.hits.map((hit) => hit.memory.content)).toContain('the lighthouse lamp is lit at dusk');
      } finally {
        await serving.close();
        await switched.close();
        await database.close();
      }
    },
    120_000,
  );
});
