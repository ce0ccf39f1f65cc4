import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';
import { crashTest } from './kill-mid-write.js';

// Attack (session 13, wt-attack13): the codes in memory live through the writing connection's own writes, the
// written vectors' rows kept beside them (memory only). A process writes as fast as it can (new vectors, moves to
// other owners, removals, the lists' steps, a failed transaction that searches and runs linking's first pass before
// it rolls back; another connection now and then deletes residual rows as a process of the previous release leaves
// them), and after every transaction its own index, which holds the codes and what it wrote since, must answer as
// a second connection that reads them again from the file: it exits on the first difference. It is killed with
// SIGKILL mid-write five times; the file reopened answers as a fresh connection does.
const { folder, built, isBuilt, killMidWrite } = crashTest('attack13-delta-crash');

const DIMENSIONS = 96;
const LIST_MIN_VECTORS = 300;

const writer = `
  const { openSqliteDatabase } = await import(${JSON.stringify(built('storage/sqlite/sqlite-database.js'))});
  const { createSqliteVectorIndex } = await import(${JSON.stringify(built('storage/sqlite/sqlite-vector-index.js'))});
  const open = () => {
    const database = openSqliteDatabase({ path: process.argv[1] });
    const index = createSqliteVectorIndex(database, { listMinVectors: ${LIST_MIN_VECTORS}, listSnapshotAfter: 0 });
    if (!index.info()) index.configure({ model: 'm', dimensions: ${DIMENSIONS} });
    return { database, index };
  };
  const { database, index } = open();
  const fresh = open();
  const older = openSqliteDatabase({ path: process.argv[1] });
  let seed = Number(process.argv[2]) * 7919 + 11;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  const normal = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const centres = Array.from({ length: 6 }, (_, c) => Float32Array.from({ length: ${DIMENSIONS} }, (_, i) => Math.sin(c * 31 + i * 7)));
  const owners = ['global', 'global', 'user:a', 'room:b'];
  const vectorOf = () => {
    const centre = centres[Math.floor(random() * centres.length)];
    return random() < 0.1 ? centre.map(() => normal() * 1.22) : centre.map((value) => value + normal() * 1.22);
  };
  const someIds = (count) =>
    database.prepare('SELECT key / 64 FROM memory_vector_slices WHERE key % 64 = 0 ORDER BY random() LIMIT ?').pluck().all(count);
  let next = Math.floor((database.prepare('SELECT max(key) FROM memory_vector_slices').pluck().get() ?? 0) / 64) + 2;
  const viewers = [null, ['global', 'user:a'], ['global', 'room:b'], ['user:a']];
  const check = (what) => {
    const [id] = someIds(1);
    const queries = [vectorOf(), ...(id === undefined ? [] : [index.vectors([id]).get(id)])];
    for (const query of queries) {
      if (!query) continue;
      for (const viewer of viewers) {
        const answers = [index, fresh.index].map((each) =>
          JSON.stringify([each.search(query, 'm', viewer, 10), each.searchNear(query, 'm', viewer, 10, 0.8)]),
        );
        if (answers[0] !== answers[1]) {
          process.stderr.write(what + ' ' + JSON.stringify(viewer) + '\\n' + answers[0] + '\\n' + answers[1] + '\\n');
          process.exit(1);
        }
      }
    }
  };
  // Linking's batched searches, after the others (its first pass reads the codes again, by memory id, when this
  // connection wrote since: later writes are then kept beside codes sorted by id).
  const checkLinking = (what) => {
    const searches = someIds(4).flatMap((id) => {
      const vector = index.vectors([id]).get(id);
      return vector ? viewers.map((owners) => ({ vector, owners, olderThan: id + 1 })) : [];
    });
    const answers = [index, fresh.index].map((each) => JSON.stringify(each.searchNearOlder(searches, 'm', 11, 0.85)));
    if (answers[0] !== answers[1]) {
      process.stderr.write(what + ' linking\\n' + answers[0] + '\\n' + answers[1] + '\\n');
      process.exit(1);
    }
  };
  for (let round = 0; ; round++) {
    const roll = random();
    if (roll < 0.04) {
      older.exec('DELETE FROM memory_vector_residuals WHERE memory_id IN (SELECT memory_id FROM memory_vector_residuals ORDER BY random() LIMIT 20)');
    } else if (roll < 0.12) {
      try {
        database.transaction(() => {
          for (let n = 0; n < 5; n++) index.put(next + n, owners[Math.floor(random() * owners.length)], { model: 'm', vector: vectorOf() });
          for (const id of someIds(3)) index.put(id, owners[Math.floor(random() * owners.length)], { model: 'm', vector: vectorOf() });
          index.remove(someIds(2));
          index.search(vectorOf(), 'm', ['global', 'user:a'], 10);
          const [id] = someIds(1);
          const vector = id === undefined ? undefined : index.vectors([id]).get(id);
          if (vector) index.searchNearOlder([{ vector, owners: null, olderThan: id + 1 }], 'm', 11, 0.85);
          throw new Error('rolled back');
        })();
      } catch (error) {
        if (!String(error).includes('rolled back')) throw error;
      }
    } else {
      database.transaction(() => {
        if (random() < 0.3 && index.indexStep()) return;
        for (let n = 0; n < 4; n++) index.put(next++, owners[Math.floor(random() * owners.length)], { model: 'm', vector: vectorOf() });
        // Moved to another owner, or to another place, the same id again and again.
        for (const id of someIds(2)) index.put(id, owners[Math.floor(random() * owners.length)], { model: 'm', vector: vectorOf() });
        index.remove(someIds(1));
      }).immediate();
    }
    check('round ' + round);
    if (round % 5 === 4) checkLinking('round ' + round);
    process.stdout.write('written\\n');
  }
`;

describe("the writing connection's codes in memory and what it wrote beside them, under kill -9", () => {
  it('answer after every transaction as a connection that reads the file again, and nothing of them survives a kill', async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'delta-crash.db');
    for (let round = 0; round < 5; round++) await killMidWrite(writer, path, round, 60 + 40 * round);
    const open = () => {
      const database = openSqliteDatabase({ path });
      const index = createSqliteVectorIndex(database, { listMinVectors: LIST_MIN_VECTORS, listSnapshotAfter: 0 });
      return { database, index };
    };
    const reopened = open();
    const other = open();
    try {
      while (reopened.database.transaction(() => reopened.index.indexStep()).immediate());
      const ids = reopened.database
        .prepare<[], number>('SELECT key / 64 FROM memory_vector_slices WHERE key % 64 = 0 ORDER BY key')
        .pluck()
        .all();
      expect(ids.length).toBeGreaterThan(LIST_MIN_VECTORS);
      const vectors = reopened.index.vectors(ids.filter((_, position) => position % 40 === 0));
      for (const query of vectors.values()) {
        for (const viewer of [null, ['global', 'user:a']]) {
          expect(reopened.index.search(query, 'm', viewer, 10)).toEqual(other.index.search(query, 'm', viewer, 10));
        }
      }
    } finally {
      reopened.database.close();
      other.database.close();
    }
  }, 300_000);
});
