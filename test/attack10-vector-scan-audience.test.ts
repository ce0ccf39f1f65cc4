import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// Attack (session 10, wt-attack10): recall's scan of the lists' codes runs in WebAssembly for a viewer of one or
// two owner keys (`scanBy`, the owners pair), in JavaScript for more; linking's first pass (`sortedById`) swaps the
// snapshot's parts and scan for ones sorted by id (at a code size whose codes the first scan cannot hold without
// padding, the snapshot had no scan before it). Sixty of Ann's vectors are the nearest to every query; Bob's and
// Cid's searches (recall's and the bounded ones) must get none of them before the swap, after it, after another
// connection's writes and after this connection's own.
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'wt-attack10-vec-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function open(path: string, dimensions: number, listSnapshotAfter?: number) {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, {
    listMinVectors: 300,
    ...(listSnapshotAfter === undefined ? {} : { listSnapshotAfter }),
  });
  if (!index.info()) index.configure({ model: 'm', dimensions });
  return { database, index };
}

describe("attack10: another user's nearest vectors through the lists' WebAssembly scan", () => {
  for (const dimensions of [128, 96]) {
    it(`gives Bob and Cid none of Ann's vectors at ${dimensions} dimensions, before and after linking, after writes`, () => {
      const random = createSeededRandom(dimensions);
      const path = join(folder, `scan-${dimensions}.db`);
      const writer = open(path, dimensions);
      const secret = Float32Array.from({ length: dimensions }, () => random.normal());
      const near = () => secret.map((value) => value + random.normal() * 0.25);
      const others = ['global', 'user:bob', 'room:c', 'user:cid'];
      const owner = new Map<number, string>();
      const put = (target: ReturnType<typeof open>, id: number, who: string, vector: Float32Array) => {
        target.index.put(id, who, { model: 'm', vector });
        owner.set(id, who);
      };
      // Put in a shuffled order of ids: a part's codes in slot order are not in id order, as after removals.
      const order = Array.from({ length: 900 }, (_, index) => index + 1);
      for (let index = order.length - 1; index > 0; index--) {
        const other = random.below(index + 1);
        [order[index], order[other]] = [order[other] ?? 0, order[index] ?? 0];
      }
      writer.database.transaction(() => {
        for (const id of order) {
          if (id % 15 === 0) put(writer, id, 'user:ann', near());
          else
            put(
              writer,
              id,
              others[id % others.length] ?? 'global',
              near().map((v) => v + random.normal() * 2),
            );
        }
      })();
      while (writer.database.transaction(() => writer.index.indexStep()).immediate()) {}
      // Vectors of small ids put again after the training: each list's slots are then not in id order, which the
      // scan sorted by id (linking's) reorders.
      writer.database.transaction(() => {
        for (let id = 1; id <= 150; id++) put(writer, id, owner.get(id) ?? 'global', near());
      })();
      const reader = open(path, dimensions, 0);
      const viewers = [['global', 'user:bob'], ['user:bob'], ['global', 'user:bob', 'room:c'], ['user:cid', 'room:c']];
      let hits = 0;
      const check = (phase: string) => {
        for (let query = 0; query < 6; query++) {
          const vector = near();
          for (const viewer of viewers) {
            const answers = [
              reader.index.search(vector, 'm', viewer, 20),
              reader.index.searchNear(vector, 'm', viewer, 20, 0.1),
              ...reader.index.searchNearOlder([{ vector, owners: viewer, olderThan: 2000 }], 'm', 20, 0.1),
            ];
            for (const answer of answers) {
              const strangers = answer.filter((hit) => !viewer.includes(owner.get(hit.id) ?? ''));
              expect({ phase, viewer, strangers }).toEqual({ phase, viewer, strangers: [] });
              hits += answer.length;
            }
          }
        }
      };
      check('before linking');
      // Linking's first pass for Ann's and Bob's memories: the codes read again sorted by id.
      reader.index.searchNearOlder(
        [...owner].slice(0, 300).map(([id, who]) => ({ vector: near(), owners: ['global', who], olderThan: id })),
        'm',
        11,
        0.5,
      );
      check('after linking');
      // Another connection writes: Bob's first vectors removed, more of Ann's put.
      writer.database.transaction(() => {
        writer.index.remove(
          [...owner]
            .filter(([, who]) => who === 'user:bob')
            .slice(0, 20)
            .map(([id]) => id),
        );
        for (let id = 901; id <= 960; id++) put(writer, id, 'user:ann', near());
      })();
      check("after another connection's writes");
      reader.index.searchNearOlder([{ vector: near(), owners: ['global', 'user:ann'], olderThan: 961 }], 'm', 11, 0.5);
      // This connection's own writes.
      reader.database.transaction(() => {
        for (let id = 961; id <= 1000; id++) put(reader, id, 'user:ann', near());
      })();
      check('after its own writes');
      expect(hits).toBeGreaterThan(1000);
    });
  }
});
