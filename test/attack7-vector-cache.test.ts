import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-vectors-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 64;
const OWNERS = ['global', 'user:a', 'user:b', 'room:c'];

function gaussian(random: SeededRandom): Float32Array {
  return Float32Array.from({ length: DIMENSIONS }, () => random.normal());
}

function open(path: string, snapshotAfter: number): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 300, listSnapshotAfter: snapshotAfter });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

function build(database: Database.Database, index: SqliteVectorIndex): void {
  while (database.transaction(() => index.indexStep()).immediate());
}

interface Row {
  id: number;
  owner: string;
  vector: Float32Array;
}

function rows(count: number, seed: number, firstId: number): Row[] {
  const random = createSeededRandom(seed);
  const centres = Array.from({ length: 8 }, () => gaussian(random));
  return Array.from({ length: count }, (_, at) => {
    const centre = centres[random.below(centres.length)] ?? gaussian(random);
    return {
      id: firstId + at,
      owner: OWNERS[random.below(OWNERS.length)] ?? 'global',
      vector: centre.map((value) => value + random.normal() * 0.8),
    };
  });
}

function put(database: Database.Database, index: SqliteVectorIndex, stored: readonly Row[]): void {
  database.transaction(() => {
    for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
  })();
}

/** Every answer of `index` for these queries and viewers (ids and scores). */
function answers(index: SqliteVectorIndex, queries: readonly Float32Array[]): string[] {
  const out: string[] = [];
  for (const query of queries) {
    for (const owners of [null, ['global', 'user:a'], ['user:b'], ['room:c', 'user:a', 'global']]) {
      for (const limit of [5, 30]) {
        out.push(
          index
            .search(query, 'm', owners, limit)
            .map((hit) => `${hit.id}:${hit.score.toFixed(5)}`)
            .join(','),
        );
      }
    }
  }
  return out;
}

describe('attack7: recall vector leg caches against other connections, rollbacks and model changes', () => {
  it('answers as a fresh connection does after each change made elsewhere or rolled back here', {
    timeout: 120_000,
  }, () => {
    const path = join(folder, 'cache.db');
    const writer = open(path, Number.POSITIVE_INFINITY);
    const initial = rows(1200, 1, 1);
    put(writer.database, writer.index, initial);
    build(writer.database, writer.index);
    const random = createSeededRandom(9);
    const queries = Array.from({ length: 12 }, () => {
      const base = initial[random.below(initial.length)]?.vector ?? gaussian(random);
      return base.map((value) => value + random.normal() * 0.3);
    });
    // The reader keeps the lists' rows and codes (snapshot at once) between its searches.
    const reader = open(path, 0);
    const readerSql = open(path, Number.POSITIVE_INFINITY);
    const compare = (step: string) => {
      // Fresh connections of both kinds: the in-memory scan and SQL may keep different codes among ties at
      // the candidates' last Hamming distance (ADR 10, session 7), so each reader is held to its own kind.
      for (const [kept, snapshotAfter] of [
        [reader, 0],
        [readerSql, Number.POSITIVE_INFINITY],
      ] as const) {
        const fresh = open(path, snapshotAfter);
        expect(answers(kept.index, queries), step).toEqual(answers(fresh.index, queries));
        fresh.database.close();
        opened.splice(opened.indexOf(fresh.database), 1);
      }
    };
    compare('start');
    compare('start, warm');
    // Another connection removes many vectors (a forget, a purge).
    writer.database.transaction(() => writer.index.remove(initial.slice(0, 400).map((row) => row.id)))();
    compare('removed elsewhere');
    // Another connection moves vectors to other owners (the same ids put again).
    put(
      writer.database,
      writer.index,
      initial.slice(400, 600).map((row) => ({ ...row, owner: row.owner === 'user:b' ? 'user:a' : 'user:b' })),
    );
    compare('owners moved elsewhere');
    // New vectors elsewhere, then a step of the lists.
    put(writer.database, writer.index, rows(300, 2, 5000));
    compare('added elsewhere');
    build(writer.database, writer.index);
    compare('built elsewhere');
    // The reader writes in a transaction that rolls back.
    expect(() =>
      reader.database.transaction(() => {
        reader.index.remove(initial.slice(600, 900).map((row) => row.id));
        put(reader.database, reader.index, rows(200, 3, 9000));
        answers(reader.index, queries);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    compare('rolled back here');
    // Another model elsewhere, then back with other vectors.
    writer.index.configure({ model: 'm2', dimensions: DIMENSIONS });
    writer.index.configure({ model: 'm', dimensions: DIMENSIONS });
    compare('emptied elsewhere');
    put(writer.database, writer.index, rows(1000, 4, 20000));
    build(writer.database, writer.index);
    compare('rebuilt elsewhere');
  });
});
