import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'wt-attack8-vec-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const DIMENSIONS = 100;

function open(path: string, tuning: { listSnapshotAfter?: number; rerank?: number } = {}) {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 300, ...tuning });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

describe('attack8: the estimates re-rank on a snapshot another connection changed', () => {
  it('(held) after another connection removes the nearest vectors, still the limit of visible hits, none removed', () => {
    const random = createSeededRandom(7);
    const path = join(folder, 'stale.db');
    const writer = open(path);
    const query = Float32Array.from({ length: DIMENSIONS }, () => random.normal());
    const rows = Array.from({ length: 800 }, (_, index) => {
      const close = index < 60;
      const vector = close
        ? query.map((value) => value + random.normal() * 0.3)
        : Float32Array.from({ length: DIMENSIONS }, () => random.normal());
      return { id: index + 1, owner: index % 2 === 0 ? 'global' : 'user:b', vector };
    });
    writer.database.transaction(() => {
      for (const row of rows) writer.index.put(row.id, row.owner, { model: 'm', vector: row.vector });
    })();
    while (writer.database.transaction(() => writer.index.indexStep()).immediate()) {}
    const reader = open(path, { listSnapshotAfter: 0, rerank: 10 });
    const first = reader.index.search(query, 'm', ['global'], 10);
    expect(first).toHaveLength(10);
    // Another connection (another process) removes the 30 closest global vectors.
    const removed = rows.filter((row) => row.id <= 60 && row.owner === 'global').map((row) => row.id);
    writer.database.transaction(() => writer.index.remove(removed))();
    const again = reader.index.search(query, 'm', ['global'], 10);
    expect(again.filter((hit) => removed.includes(hit.id))).toEqual([]);
    expect(again).toHaveLength(10);
    expect(again.every((hit) => (rows[hit.id - 1]?.owner ?? '') === 'global')).toBe(true);
  });
});
