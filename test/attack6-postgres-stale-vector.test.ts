import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';

// Attack (session 6, wt-attack6) on e9b8d6a: PostgreSQL's `put` now stores nothing, silently, when the
// database's index holds another model than the vector's (another process switched it), and leaves the memory
// "found by its text until it is re-embedded". An update of a memory's content by the old process keeps the
// vector of its former content, which the new model's index holds since the re-embed: a vector search by the
// new model still finds the memory by words it no longer holds. (SQLite refuses the put: the update fails.)
const folder = mkdtempSync('/tmp/wt-attack6-pg-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('attack6: an old process updates a memory after another switched the model (PGlite)', () => {
  it("leaves no vector of the memory's former content in the new model's index", async () => {
    const path = `pglite:${join(folder, 'stale')}`;
    const quiet = { warn: () => {}, info: () => {} };
    const serving = await createMneme({
      path,
      embedder: createFakeEmbeddingModel({ modelId: 'fake:old' }),
      logger: quiet,
    });
    const memory = await serving.remember({ content: 'the lighthouse keeper logs the tides at dawn' });
    const switched = await createMneme({
      path,
      embedder: createFakeEmbeddingModel({ modelId: 'fake:new' }),
      logger: quiet,
    });
    const database = await createPgliteDatabase(path);
    try {
      await switched.reembed();
      // The old process, still on fake:old, rewrites the memory: its new vector is not stored (another model).
      await serving.update({ id: memory.id, content: 'cheddar matures in the cellar for nine months' });
      const { rows } = await database.query<{ content: string; model: string | null; vectors: number }>(
        `SELECT m.content, m.embedding_model AS model,
           (SELECT count(*)::int FROM memory_vectors v WHERE v.memory_id = m.id) AS vectors
         FROM memories m WHERE m.id = $1`,
        [memory.id],
      );
      expect(rows[0]).toMatchObject({ content: 'cheddar matures in the cellar for nine months', model: 'fake:old' });
      // The new process's recall of the former words: found by the vector of content the memory no longer holds.
      const recalled = await switched.recall({ query: 'the lighthouse keeper logs the tides at dawn', inspect: true });
      const stale = recalled.hits.filter((hit) => hit.memory.id === memory.id).map((hit) => hit.ranks);
      // Today: [{ fts: null, vector: 1 }].
      expect(stale).toEqual([]);
      // Today: 1, the fake:new vector of 'the lighthouse keeper logs the tides at dawn'.
      expect(rows[0]?.vectors).toBe(0);
    } finally {
      await database.close();
      await serving.close();
      await switched.close();
    }
  });
});
