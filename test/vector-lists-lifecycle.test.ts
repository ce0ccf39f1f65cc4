import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cosine } from '../src/core/maintenance/consolidate-task.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Attack (session 5, wt-attack5): the inverted lists (balanced training, lists chosen among a shortlist)
// through the engine's own writes once they are built: forget, restore, edits that re-embed, a user's purge,
// new memories. Afterwards the lists hold exactly the bit index's vectors under their owners, and linking's
// neighbour search through the lists answers every scope with memories of that scope above the cosine only.
// (Compared with the owner buckets' scan it is not: with the fake model's vectors more than 4 x limit codes
// lie within the Hamming bound of every query, where both keep the nearest 4 x limit codes, ties either way.)
const DIMENSIONS = 64;
const model = createFakeEmbeddingModel({ dimensions: DIMENSIONS });
const folder = mkdtempSync(join(tmpdir(), 'mneme-lists-lifecycle-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

const floats = (buffer: Buffer) => new Float32Array(Uint8Array.from(buffer).buffer);

function readIndex(path: string) {
  const database = new Database(path, { readonly: true });
  sqliteVec.load(database);
  try {
    const bits = new Map(
      database
        .prepare<[], { id: number; owner: number }>('SELECT memory_id AS id, owner_id AS owner FROM memory_vector_bits')
        .all()
        .map((row) => [row.id, row.owner]),
    );
    const listed = database
      .prepare<[], { id: number; owner: number }>(
        'SELECT memory_id AS id, owner_id AS owner FROM memory_vector_list_bits',
      )
      .all();
    const state = database
      .prepare<[], { maintained: number; watermark: number | null }>(
        'SELECT maintained, watermark FROM vector_list_state',
      )
      .get();
    const vectors = new Map<number, Float32Array>();
    for (const row of database
      .prepare<[], { key: number; vector: Buffer }>('SELECT key, vector FROM memory_vector_slices ORDER BY key')
      .all()) {
      vectors.set(Math.floor(row.key / 64), floats(row.vector));
    }
    const owners = new Map(
      database
        .prepare<[], { memory_id: number; owner: string }>(
          'SELECT id AS memory_id, owner FROM memories WHERE archived_at IS NULL',
        )
        .all()
        .map((row) => [row.memory_id, row.owner]),
    );
    return { bits, listed, state, vectors, owners };
  } finally {
    database.close();
  }
}

describe('attack5: the inverted lists through forget, restore, edits and a purge', () => {
  it('hold exactly the vectors of the bit index under their owners, and answer a scope with its memories only', {
    timeout: 180_000,
  }, async () => {
    const path = join(folder, 'lifecycle.db');
    const engine = await openMaintenanceEngine({ path, embedder: model, vectorListMinVectors: 300 });
    engines.push(engine);
    const { mneme } = engine;
    const topics = ['garden tomatoes basil', 'cello quartet sunday', 'lisbon trip may', 'greyhound pixel sofa'];
    const ids: Array<{ id: number; userId: string | null }> = [];
    for (let index = 0; index < 660; index++) {
      const userId = index % 3 === 0 ? null : index % 3 === 1 ? 'ann' : 'bo';
      const topic = topics[index % topics.length];
      const content = `${topic} note ${index % 7} about ${topic} and item${index % 11}`;
      const memory = await mneme.remember(userId === null ? { content } : { content, scope: 'personal', userId });
      ids.push({ id: memory.id, userId });
    }
    await mneme.maintain({ tasks: ['link'] });
    expect(readIndex(path).state).toMatchObject({ maintained: 1, watermark: null });

    for (const { id } of ids.slice(0, 30)) await mneme.forget(id);
    for (const { id } of ids.slice(0, 12)) await mneme.restore(id);
    for (const { id } of ids.slice(40, 60)) {
      await mneme.update({ id, content: `an edited memory number ${id} about a greyhound called pixel` });
    }
    await mneme.purgeUser('bo');
    for (let index = 0; index < 30; index++) await mneme.remember({ content: `garden tomatoes basil late ${index}` });
    await mneme.maintain({ tasks: ['link'] });

    const { bits, listed, state, vectors, owners } = readIndex(path);
    expect(state).toMatchObject({ maintained: 1, watermark: null });
    // The lists and the bit index hold the same vectors under the same owners, and only active memories.
    expect(new Map(listed.map((row) => [row.id, row.owner]))).toEqual(bits);
    expect([...bits.keys()].filter((id) => !owners.has(id))).toEqual([]);
    expect([...owners.values()].filter((owner) => owner === 'user:bo')).toEqual([]);
    // Global and Ann's vectors (all that is left) are enough for the searches of both scopes to read the lists.
    expect(bits.size).toBeGreaterThanOrEqual(300);

    // Linking's searches through the lists, per scope, against an exhaustive search of the stored vectors.
    const problems: string[] = [];
    for (const [id, vector] of [...vectors].filter((_, position) => position % 9 === 0)) {
      for (const scope of [null, ['global', 'user:ann'], ['global', 'user:bo']]) {
        const hits = await engine.storage.memories.searchVector({
          vector,
          model: model.modelId,
          owners: scope,
          limit: 11,
          minScore: 0.85,
        });
        // Every hit is in scope and above the cosine (exact scores in double precision, the index's are float32
        // sums: equal up to 1e-6).
        const exact = new Map(
          [...vectors]
            .filter(([other]) => scope === null || scope.includes(owners.get(other) ?? ''))
            .map(([other, stored]) => [other, cosine(vector, stored)]),
        );
        const got = hits.map((hit) => hit.id);
        for (const hit of got) {
          if ((exact.get(hit) ?? 0) < 0.85 - 1e-6) problems.push(`${id}: ${hit} is not in scope or not close`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
