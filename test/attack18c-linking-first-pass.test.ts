import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { gaussian, near } from '../src/storage/sqlite/sqlite-test-vectors.fixture.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// ADR 27 (attacked, session 18): linking's first pass asks the lists' codes in memory whether any older code lies
// near each new memory's vector, and searches only those that may have one. A copy brought up to date with another
// connection's commits holds what they wrote beside its codes, not in them: the first pass must see it too.
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18c-linking-'));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 384;
const MIN_SCORE = 0.85;

function openIndex(path: string, listSnapshotAfter: number): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 500, listSnapshotAfter });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

function put(target: { database: Database.Database; index: SqliteVectorIndex }, id: number, vector: Float32Array) {
  target.database.transaction(() => target.index.put(id, 'global', { model: 'm', vector }))();
}

describe("linking's first pass beside another connection that writes vectors", () => {
  it('finds an older neighbour another connection wrote after the codes were read into memory', {
    timeout: 120_000,
  }, () => {
    const path = join(folder, 'linking.db');
    const random = createSeededRandom(1803);
    const writer = openIndex(path, Number.POSITIVE_INFINITY);
    writer.database.transaction(() => {
      for (let id = 1; id <= 2_000; id++) {
        writer.index.put(id, id % 3 === 0 ? 'user:a' : 'global', { model: 'm', vector: gaussian(random, DIMENSIONS) });
      }
    })();
    while (writer.database.transaction(() => writer.index.indexStep()).immediate()) {}
    const linker = openIndex(path, 0);
    // The linker reads the codes into memory (a first pass over an old memory), then the other connection writes a
    // memory with a vector unlike any, and a second one near it.
    const first = gaussian(random, DIMENSIONS);
    expect(
      linker.index.searchNearOlder([{ vector: first, owners: null, olderThan: 1_000 }], 'm', 10, MIN_SCORE),
    ).toEqual([[]]);
    const alone = gaussian(random, DIMENSIONS);
    put(writer, 3_000, alone);
    const neighbour = near(alone, random, 0.97);
    put(writer, 3_001, neighbour);
    // Linking the second one: its older neighbour is the first, whichever way the linker searches.
    const search = { vector: neighbour, owners: null, olderThan: 3_001 };
    expect(linker.index.searchNearOlder([search], 'm', 10, MIN_SCORE)[0]?.map((hit) => hit.id)).toEqual([3_000]);
    expect(linker.index.searchNear(neighbour, 'm', null, 10, MIN_SCORE).map((hit) => hit.id)).toContain(3_000);
  });
});
