import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});

const OWNERS = ['global', 'user:a', 'user:b', 'room:c', 'room:d'];
const MIN_SCORE = 0.85;

function gaussian(random: SeededRandom, dimensions: number): Float32Array {
  return Float32Array.from({ length: dimensions }, () => random.normal());
}

interface Row {
  id: number;
  owner: string;
  vector: Float32Array;
}

/** Clustered vectors, one in three followed by a near copy (a link), under several owners. */
function rows(count: number, dimensions: number, seed: number): Row[] {
  const random = createSeededRandom(seed);
  const centres = Array.from({ length: 10 }, () => gaussian(random, dimensions));
  const out: Row[] = [];
  while (out.length < count) {
    const centre = centres[random.below(centres.length)] ?? gaussian(random, dimensions);
    const vector = centre.map((value) => value + random.normal() * 1.2);
    out.push({ id: out.length + 1, owner: OWNERS[random.below(OWNERS.length)] ?? 'global', vector });
    if (out.length % 3 === 1) {
      const near = vector.map((value) => value + random.normal() * 0.35);
      out.push({ id: out.length + 1, owner: OWNERS[random.below(OWNERS.length)] ?? 'global', vector: near });
    }
  }
  return out.slice(0, count);
}

/** An index over a new database whose owners' ids start at `firstOwnerId`, holding `stored`, lists built. */
function indexOf(stored: readonly Row[], dimensions: number, firstOwnerId: number): SqliteVectorIndex {
  const database = openSqliteDatabase({ path: ':memory:' });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 300, listSnapshotAfter: 0 });
  index.configure({ model: 'm', dimensions });
  if (firstOwnerId > 1) {
    database
      .prepare("INSERT INTO vector_owners (id, owner, vectors) VALUES (?, 'user:placeholder', 0)")
      .run(firstOwnerId - 1);
  }
  database.transaction(() => {
    for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
  })();
  while (database.transaction(() => index.indexStep()).immediate());
  return index;
}

const viewers: Array<readonly string[] | null> = [
  null,
  ['global', 'user:a'],
  ['user:b'],
  ['global', 'user:a', 'room:c'],
  ['room:d', 'room:c', 'user:b', 'global'],
];

function olderAnswers(index: SqliteVectorIndex, stored: readonly Row[]): string[] {
  const searches = stored.flatMap((row) =>
    viewers.map((owners) => ({ vector: row.vector, owners, olderThan: row.id })),
  );
  return index
    .searchNearOlder(searches, 'm', 11, MIN_SCORE)
    .map((hits) => hits.map((hit) => `${hit.id}:${hit.score.toFixed(6)}`).join(','));
}

function perMemory(index: SqliteVectorIndex, stored: readonly Row[]): string[] {
  return stored.flatMap((row) =>
    viewers.map((owners) =>
      index
        .searchNear(row.vector, 'm', owners, 11, MIN_SCORE)
        .filter((hit) => hit.id < row.id)
        .map((hit) => `${hit.id}:${hit.score.toFixed(6)}`)
        .join(','),
    ),
  );
}

describe("attack7: linking's first pass in WebAssembly against JavaScript and the per-memory path", () => {
  for (const dimensions of [40, 96, 200]) {
    for (const firstOwnerId of [1, 2 ** 31 - 3, 2 ** 32 + 7]) {
      it(`answers alike at ${dimensions} dimensions, owner ids from ${firstOwnerId}`, { timeout: 120_000 }, () => {
        const stored = rows(600, dimensions, dimensions + firstOwnerId);
        const withWasm = indexOf(stored, dimensions, firstOwnerId);
        const wasmAnswers = olderAnswers(withWasm, stored);
        const expected = perMemory(withWasm, stored);
        const saved = (globalThis as { WebAssembly?: unknown }).WebAssembly;
        let jsAnswers: string[];
        try {
          (globalThis as { WebAssembly?: unknown }).WebAssembly = undefined;
          const withoutWasm = indexOf(stored, dimensions, firstOwnerId);
          jsAnswers = olderAnswers(withoutWasm, stored);
        } finally {
          (globalThis as { WebAssembly?: unknown }).WebAssembly = saved;
        }
        expect(wasmAnswers.filter((line) => line !== '').length).toBeGreaterThan(100);
        expect(wasmAnswers).toEqual(expected);
        expect(jsAnswers).toEqual(expected);
      });
    }
  }
});
