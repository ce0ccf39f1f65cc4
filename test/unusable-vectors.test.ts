import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { ALL_CHANNELS } from '../src/core/maintenance/maintenance-task.js';
import { startFakeProviderServer } from '../src/models/fake/fake-provider-server.fixture.js';
import { createOpenAiCompatibleEmbeddingModel } from '../src/models/openai-compatible/openai-compatible-embedding-model.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Attack (session 5, wt-attack5; predates ebbc3da): an embedding provider's JSON may hold a number beyond
// float32's range (1e39 parses as a finite double; the OpenAI-compatible schema takes any number). As float32
// it is Infinity, and the index stores it (with the inverted lists, in the overflow partition: its angle to
// every centroid is NaN). Linking then searches that memory's neighbours with it: near() turns its NaN angles
// into band ranges and `BigInt(NaN)` throws a RangeError, at every maintenance cycle that links it: the link
// task stops at that page without moving its watermark (src/core/maintenance/link-task.ts), so linking and its
// cleanup of links to archived memories stall for good once a scope holds 32,768 vectors; `maintain` throws,
// so the tasks after linking in the cycle (the dreamer) do not run either.
const opened: Database.Database[] = [];
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const database of opened.splice(0)) database.close();
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

function indexWithLists(): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path: ':memory:' });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 300 });
  index.configure({ model: 'm', dimensions: 16 });
  const random = createSeededRandom(3);
  database.transaction(() => {
    for (let id = 1; id <= 400; id++) {
      index.put(id, 'global', { model: 'm', vector: Float32Array.from({ length: 16 }, () => random.normal()) });
    }
  })();
  while (database.transaction(() => index.indexStep()).immediate());
  return { database, index };
}

const huge = () => Float32Array.from({ length: 16 }, (_, position) => (position === 0 ? 1e39 : 1));

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown }).code ?? (error as Error).constructor.name;
}

describe('attack5: a vector beyond float32', () => {
  it('is refused as the model failing (MODEL_FAILED) rather than stored', () => {
    const { database, index } = indexWithLists();
    let outcome: unknown = 'stored';
    try {
      database.transaction(() => index.put(1000, 'global', { model: 'm', vector: huge() }))();
    } catch (error) {
      outcome = codeOf(error);
    }
    expect(outcome).toBe('MODEL_FAILED');
  });

  it("given as the query (a vector stored before vectors were checked), does not make linking's neighbour search through the lists throw", () => {
    const { index } = indexWithLists();
    let outcome: unknown = 'answered';
    try {
      index.searchNear(huge(), 'm', null, 11, 0.85);
    } catch (error) {
      outcome = codeOf(error);
    }
    expect(outcome).toBe('answered');
  });

  it('from an OpenAI-compatible server, does not stop the link task (and the dreamer after it) at every cycle', {
    timeout: 120_000,
  }, async () => {
    const server = await startFakeProviderServer({ dimensions: 16 });
    try {
      const embedder = createOpenAiCompatibleEmbeddingModel({
        baseUrl: `${server.url}/v1`,
        model: 'my-embedder',
        dimensions: 16,
      });
      const engine = await openMaintenanceEngine({ embedder, vectorListMinVectors: 300 });
      engines.push(engine);
      const contents = Array.from({ length: 400 }, (_, index) => `note${index} colour${index % 97} town${index % 89}`);
      const vectors = await embedder.embed(contents, 'document');
      await engine.storage.memories.insert(
        contents.map((content, index) =>
          globalMemory(content, {
            embedding: { model: embedder.modelId, vector: vectors[index] ?? new Float32Array(16) },
          }),
        ),
        { at: Date.now(), actor: null },
      );
      await engine.mneme.maintain({ tasks: ['link'] });
      // The server's next answer holds 1e39 (valid JSON, a finite double; Infinity as float32).
      server.answerNext({
        json: { data: [{ embedding: Array.from({ length: 16 }, (_, position) => (position === 0 ? 1e39 : 1)) }] },
      });
      await engine.mneme.remember({ content: 'a memory whose vector came back too large' });
      const later = await engine.mneme.remember({ content: 'a later memory, linked after it' });
      const outcomes: string[] = [];
      for (let run = 0; run < 2; run++) {
        try {
          await engine.mneme.maintain({ tasks: ['link', 'dream'] });
          outcomes.push('ran');
        } catch (error) {
          outcomes.push(String(error));
        }
      }
      // Today: "searching memory vectors: The number NaN cannot be converted to a BigInt" twice, the link
      // watermark stuck before the poisoned memory, the later memory never linked.
      expect(outcomes).toEqual(['ran', 'ran']);
      expect((await engine.storage.maintenanceState.get(ALL_CHANNELS, 'link'))?.watermark).toBeGreaterThanOrEqual(
        later.id,
      );
    } finally {
      await server.close();
    }
  });
});
