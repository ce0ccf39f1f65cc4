import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { gaussian, near } from '../src/storage/sqlite/sqlite-test-vectors.fixture.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// ADR 27 (attacked, session 18): a connection holding the lists' codes asks the record of changed memories for at
// most a thirty-second of the codes it holds (at least 1,024). Past 32,768 codes (the default size at which a store
// gets lists at all) that share is not a whole number, and SQLite refuses a LIMIT that is not one.
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18c-limit-'));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 16;

function openIndex(path: string, listSnapshotAfter: number): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 1_000, listSnapshotAfter });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

describe('the codes in memory of a store past 32,768 vectors beside another connection', () => {
  it('still searches once another connection commits a vector, when the codes it holds are not a multiple of 32', {
    timeout: 240_000,
  }, () => {
    const path = join(folder, 'many.db');
    const random = createSeededRandom(181);
    const writer = openIndex(path, Number.POSITIVE_INFINITY);
    // 33,001 vectors: a thirty-second of them is 1,031.28.
    const vectors = Array.from({ length: 33_001 }, () => gaussian(random, DIMENSIONS));
    writer.database.transaction(() => {
      for (const [at, vector] of vectors.entries()) {
        writer.index.put(at + 1, at % 2 === 0 ? 'global' : 'user:a', { model: 'm', vector });
      }
    })();
    while (writer.database.transaction(() => writer.index.indexStep()).immediate()) {}
    const searcher = openIndex(path, 0);
    const query = vectors[0] as Float32Array;
    expect(searcher.index.search(query, 'm', null, 10)[0]?.id).toBe(1);
    // Another connection writes one vector near the query: the searcher finds it.
    writer.database.transaction(() =>
      writer.index.put(40_000, 'global', { model: 'm', vector: near(query, random, 0.999) }),
    )();
    const found = searcher.index.search(query, 'm', null, 10).map((hit) => hit.id);
    expect(found).toContain(40_000);
    expect(found).toContain(1);
  });
});
