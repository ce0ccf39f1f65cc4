import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { createSyntheticCorpus } from '../../bench/synthetic-corpus.js';
import { cosine } from '../../core/maintenance/consolidate-task.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { binaryCode, createSqliteVectorIndex, hammingBound, type SqliteVectorIndex } from './sqlite-vector-index.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});

/** A fresh database with an index for `dimensions`; memory rows are not needed by the index itself. */
function openIndex(dimensions: number): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path: ':memory:' });
  opened.push(database);
  const index = createSqliteVectorIndex(database);
  index.configure({ model: 'm', dimensions });
  return { database, index };
}

/** 6,000 clustered vectors of 256 dimensions (64 topics, half global), written through `put`. */
function syntheticStore(dimensions = 256) {
  const { database, index } = openIndex(dimensions);
  const corpus = createSyntheticCorpus({ seed: 5, dimensions });
  const stored: Array<{ id: number; owner: string; vector: Float32Array }> = [];
  database.transaction(() => {
    for (let position = 0; position < 6000; position++) {
      const memory = corpus.memory(position);
      const owner =
        memory.scope === 'personal'
          ? `user:${memory.userId}`
          : memory.scope === 'room'
            ? `room:${memory.channelId}`
            : 'global';
      index.put(position + 1, owner, { model: 'm', vector: memory.vector });
      stored.push({ id: position + 1, owner, vector: memory.vector });
    }
  })();
  return { database, index, corpus, stored };
}

describe('the SQLite vector index', () => {
  it('ranks at least 90% of the exact 10 nearest first on a clustered set it cannot search exactly', () => {
    const { index, corpus, stored } = syntheticStore();
    for (const viewer of ['unscoped', 'scoped'] as const) {
      let found = 0;
      const queries = 30;
      for (let position = 0; position < queries; position++) {
        const query = corpus.query(position, stored.length);
        const owners = viewer === 'scoped' ? ['global', `user:${query.userId}`] : ['global'];
        const visible = stored.filter((entry) => owners.includes(entry.owner));
        // About 3,000 visible vectors, 80 candidates for 20 hits: the bit index decides which are ranked exactly.
        expect(visible.length).toBeGreaterThan(2500);
        const exact = visible
          .map((entry) => ({ id: entry.id, score: cosine(query.vector, entry.vector) }))
          .sort((a, b) => b.score - a.score)
          .slice(0, 10);
        const hits = index.search(query.vector, 'm', owners, 20).slice(0, 10);
        const ids = new Set(hits.map((hit) => hit.id));
        found += exact.filter((hit) => ids.has(hit.id)).length / 10;
        for (const hit of hits) {
          const entry = visible.find((candidate) => candidate.id === hit.id);
          expect(entry, 'every hit is visible').toBeDefined();
          expect(hit.score).toBeCloseTo(cosine(query.vector, entry?.vector ?? query.vector), 5);
        }
      }
      expect(found / queries, `${viewer} recall@10 against exact search`).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('finds by a minimum cosine exactly the neighbours an exact search finds above it', () => {
    const { database, index, stored } = syntheticStore();
    const random = createSeededRandom(11);
    // Near copies of 60 global vectors, from cosine 0.75 to 0.99 with them: a neighbour search's targets.
    const planted: Array<{ id: number; owner: string; vector: Float32Array }> = [];
    database.transaction(() => {
      for (const [position, original] of stored
        .filter((entry) => entry.owner === 'global')
        .slice(0, 60)
        .entries()) {
        const noise = 0.012 + (position % 12) * 0.006;
        const vector = original.vector.map((value) => value + noise * random.normal());
        const id = stored.length + 1 + position;
        index.put(id, 'global', { model: 'm', vector });
        planted.push({ id, owner: 'global', vector });
      }
    })();
    const all = [...stored, ...planted];
    let near = 0;
    for (const query of planted) {
      const exact = all
        .filter((entry) => entry.owner === 'global' && entry.id !== query.id)
        .map((entry) => ({ id: entry.id, score: cosine(query.vector, entry.vector) }))
        .filter((entry) => entry.score >= 0.85)
        .map((entry) => entry.id)
        .sort((a, b) => a - b);
      const found = index
        .searchNear(query.vector, 'm', ['global'], 11, 0.85)
        .map((hit) => hit.id)
        .filter((id) => id !== query.id)
        .sort((a, b) => a - b);
      expect(found).toEqual(exact);
      near += exact.length;
    }
    // Some planted copies are within 0.85 of their original and some are not.
    expect(near).toBeGreaterThan(10);
    expect(near).toBeLessThan(60);
  });

  it('bounds a minimum-cosine search by a Hamming distance above what such neighbours have', () => {
    // 768 sign bits of vectors at cosine 0.85 differ in about 136 (angle / pi of them).
    expect(hammingBound(768, 0.85)).toBeGreaterThan(136 + 40);
    expect(hammingBound(768, 0.85)).toBeLessThan(384 - 150);
    expect(hammingBound(768, 1)).toBe(0);
  });

  it('answers the same whether or not earlier searches bound its scan', () => {
    const { database, index, corpus, stored } = syntheticStore();
    for (let position = 0; position < 40; position++) {
      const query = corpus.query(position, stored.length);
      const owners = position % 2 ? ['global'] : ['global', `user:${query.userId}`];
      // `index` has seen the searches before this one; a new index over the same tables has not.
      const warm = index.search(query.vector, 'm', owners, 50);
      const cold = createSqliteVectorIndex(database).search(query.vector, 'm', owners, 50);
      expect(warm).toEqual(cold);
    }
  });

  it('searches every owner when asked for none, and nothing for an empty list', () => {
    const { index, corpus, stored } = syntheticStore();
    const query = corpus.query(3, stored.length);
    const exact = stored
      .map((entry) => ({ id: entry.id, score: cosine(query.vector, entry.vector) }))
      .sort((a, b) => b.score - a.score);
    expect(index.search(query.vector, 'm', null, 1).map((hit) => hit.id)).toEqual([exact[0]?.id]);
    expect(index.search(query.vector, 'm', [], 10)).toEqual([]);
    expect(index.search(query.vector, 'other-model', null, 10)).toEqual([]);
  });

  it('keeps a count per owner key and forgets a key once its last vector goes', () => {
    const { database, index } = openIndex(8);
    const vector = (value: number) => ({ model: 'm', vector: Float32Array.from({ length: 8 }, (_, i) => i - value) });
    index.put(1, 'user:ann', vector(1));
    index.put(2, 'user:ann', vector(2));
    index.put(3, 'global', vector(3));
    index.put(2, 'user:ann', vector(4));
    const owners = () => database.prepare('SELECT owner, vectors FROM vector_owners ORDER BY owner').all();
    expect(owners()).toEqual([
      { owner: 'global', vectors: 1 },
      { owner: 'user:ann', vectors: 2 },
    ]);
    expect(index.remove([1, 2, 99])).toBe(2);
    expect(owners()).toEqual([{ owner: 'global', vectors: 1 }]);
    expect(database.prepare('SELECT count(*) AS n FROM memory_vector_slices').get()).toEqual({ n: 1 });
    expect(index.search(vector(3).vector, 'm', ['user:ann'], 10)).toEqual([]);
  });

  it("counts an owner's vectors in its own row after that row was forgotten, its id given again, or rolled back", () => {
    const { database, index } = openIndex(8);
    const vector = (value: number) => ({ model: 'm', vector: Float32Array.from({ length: 8 }, (_, i) => i - value) });
    const owners = () => database.prepare('SELECT owner, vectors FROM vector_owners ORDER BY owner').all();
    index.put(1, 'user:ann', vector(1));
    index.remove([1]);
    // Ann's row is gone; the next owner's row takes its id.
    index.put(2, 'user:bob', vector(2));
    index.put(3, 'user:ann', vector(3));
    index.put(4, 'user:ann', vector(4));
    expect(owners()).toEqual([
      { owner: 'user:ann', vectors: 2 },
      { owner: 'user:bob', vectors: 1 },
    ]);
    expect(() =>
      database.transaction(() => {
        index.put(5, 'user:cy', vector(5));
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    index.put(6, 'user:cy', vector(6));
    index.put(7, 'user:bob', vector(7));
    expect(owners()).toEqual([
      { owner: 'user:ann', vectors: 2 },
      { owner: 'user:bob', vectors: 2 },
      { owner: 'user:cy', vectors: 1 },
    ]);
    expect(index.search(vector(6).vector, 'm', ['user:cy'], 10).map((hit) => hit.id)).toEqual([6]);
  });

  it('writes the sign bits as vec_quantize_binary does, padded to whole bytes', () => {
    const { database } = openIndex(8);
    const vector = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i * 1.7));
    const quantised = database
      .prepare<[Buffer], { bits: Buffer }>('SELECT vec_quantize_binary(?) AS bits')
      .get(Buffer.from(vector.buffer));
    expect(binaryCode(vector)).toEqual(quantised?.bits);
    expect([...binaryCode(Float32Array.from([1, -1, 1]))]).toEqual([0b101]);
  });

  it('gives every hit the cosine of its own stored vector, however many candidates are ranked and in whatever order', () => {
    const { index, stored } = syntheticStore(256);
    // The cosine of the float32 numbers as stored (the statement sums float32 distances: within 5e-7 of it).
    const exactCosine = (query: Float32Array, vector: Float32Array) => {
      let dot = 0;
      let queryNorm = 0;
      let norm = 0;
      for (let i = 0; i < query.length; i++) {
        dot += (query[i] ?? 0) * (vector[i] ?? 0);
        queryNorm += (query[i] ?? 0) ** 2;
        norm += (vector[i] ?? 0) ** 2;
      }
      return dot / Math.sqrt(queryNorm * norm);
    };
    for (const query of stored.slice(0, 40)) {
      for (const hits of [
        index.search(query.vector, 'm', ['global', query.owner], 50),
        index.searchNear(query.vector, 'm', null, 30, 0.2),
      ]) {
        expect(hits.length).toBeGreaterThan(0);
        for (const hit of hits) {
          expect(hit.score).toBeCloseTo(exactCosine(query.vector, stored[hit.id - 1]?.vector ?? query.vector), 6);
        }
      }
    }
  });

  it.each([3, 20, 200, 8192])('stores and ranks %i-dimensional vectors exactly', (dimensions) => {
    const { index } = openIndex(dimensions);
    const vectors = Array.from({ length: 5 }, (_, n) =>
      Float32Array.from({ length: dimensions }, (_, i) => Math.cos((n + 2) * (i + 1))),
    );
    vectors.forEach((vector, n) => {
      index.put(n + 1, n % 2 ? 'global' : 'room:r', { model: 'm', vector });
    });
    expect([...(index.vectors([4]).get(4) ?? [])]).toEqual([...(vectors[3] ?? [])]);
    const query = vectors[2] ?? new Float32Array(dimensions);
    const hits = index.search(query, 'm', null, 5);
    expect(hits[0]?.id).toBe(3);
    for (const hit of hits) expect(hit.score).toBeCloseTo(cosine(query, vectors[hit.id - 1] ?? query), 5);
  });

  it.each([20, 200, 800])(
    'reads the same %i-dimensional vectors for ids in a close ascending run (one range read) as one at a time',
    (dimensions) => {
      const { index } = openIndex(dimensions);
      const vectorOf = (id: number) => Float32Array.from({ length: dimensions }, (_, i) => Math.sin(id * 0.7 + i));
      // Ids 1 to 60, but for a gap (21 to 25: no vector) and one removed (40).
      for (let id = 1; id <= 60; id++) {
        if (id > 20 && id <= 25) continue;
        index.put(id, id % 3 ? 'global' : 'user:a', { model: 'm', vector: vectorOf(id) });
      }
      index.remove([40]);
      const expected = (ids: number[]) =>
        ids.flatMap((id) => ((id > 20 && id <= 25) || id === 40 || id > 60 ? [] : [[id, [...vectorOf(id)]]]));
      const read = (ids: number[]) => [...index.vectors(ids)].map(([id, vector]) => [id, [...vector]]);
      // Ascending and close: read over their keys' range, leaving out the ids in it not asked for (every third).
      const run = Array.from({ length: 60 }, (_, at) => at + 3).filter((id) => id % 3 !== 0);
      expect(read(run)).toEqual(expected(run));
      // The same ids in another order, or spread out, or few: one at a time; the same vectors in the order asked.
      const reversed = [...run].reverse();
      expect(read(reversed)).toEqual(expected(reversed));
      const spread = [1, 2, 3, 4, 5, 6, 7, 8, 30, 60];
      expect(read(spread)).toEqual(expected(spread));
      expect(read([41, 39, 40])).toEqual(expected([41, 39, 40]));
    },
  );
});
