import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../../bench/seeded-random.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { gaussian as gaussianVector, near } from './sqlite-test-vectors.fixture.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from './sqlite-vector-index.js';
import { residualPages } from './sqlite-vector-lists.js';

/**
 * Damaged rows beside the inverted lists' residual codes (ADR 10, 2026-12-02, session 11, migration 24): they may
 * cost recall quality, but recall must not throw, must keep to the owners asked for, and maintenance's index steps
 * must come to an end.
 */

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'mneme-vector-residuals-damage-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 128;
/** The bytes of a residual row's code at these dimensions: the signs, then a float32. */
const CODE_BYTES = DIMENSIONS / 8 + 4;
const OWNERS = ['global', 'user:a', 'user:b', 'user:b', 'room:c'];

interface Stored {
  id: number;
  owner: string;
  vector: Float32Array;
}

const gaussian = (random: SeededRandom, dimensions = DIMENSIONS) => gaussianVector(random, dimensions);

const centres = Array.from({ length: 10 }, (_, index) => gaussian(createSeededRandom(3000 + index)));

function vectorsFor(count: number, seed: number): Stored[] {
  const random = createSeededRandom(seed);
  return Array.from({ length: count }, (_, position) => ({
    id: 1 + position,
    owner: OWNERS[random.below(OWNERS.length)] ?? 'global',
    vector: near(centres[random.below(centres.length)] ?? gaussian(random), random, 0.6),
  }));
}

function openIndex(
  path: string,
  tuning: { listSnapshotAfter?: number } = {},
): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 500, ...tuning });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

/** A file with `count` vectors, its lists built (their residual codes with them). */
function built(name: string, count: number, seed: number): { path: string; stored: Stored[] } {
  const path = join(folder, name);
  const { database, index } = openIndex(path);
  const stored = vectorsFor(count, seed);
  database.transaction(() => {
    for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
  })();
  while (database.transaction(() => index.indexStep()).immediate());
  return { path, stored };
}

/** Runs `sql` on another connection, as a damaged file or another process would leave it. */
function fromElsewhere(path: string, sql: string): void {
  const database = openSqliteDatabase({ path });
  try {
    database.exec(sql);
  } finally {
    database.close();
  }
}

/** The index steps of a new connection until one says nothing is left, at most `most`: how many said true. */
function stepsUntilDone(path: string, most: number): number {
  const { database, index } = openIndex(path);
  let steps = 0;
  while (steps < most && database.transaction(() => index.indexStep()).immediate()) steps++;
  return steps;
}

function listedIds(path: string): number[] {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  return database
    .prepare<[], number>('SELECT memory_id FROM memory_vector_list_bits WHERE part >= 0 ORDER BY memory_id')
    .pluck()
    .all();
}

describe('damaged rows beside the residual codes', { timeout: 180_000 }, () => {
  it('leave the index steps coming to an end when a listed vector has no vector to fill its residual code from', () => {
    const { path } = built('no-vector.db', 900, 1);
    const id = listedIds(path)[10] ?? 0;
    // A list row whose vector is gone (a damaged file: its slices deleted, the trigger took its residual row).
    fromElsewhere(path, `DELETE FROM memory_vector_slices WHERE key BETWEEN ${id * 64} AND ${id * 64 + 63}`);
    // The fill has nothing it can write: at most a page or two, then the steps say nothing is left.
    expect(stepsUntilDone(path, 50)).toBeLessThan(5);
  });

  it('leave the index steps coming to an end when a listed vector is in a list the lists no longer have', () => {
    const { path } = built('no-list.db', 900, 2);
    // The last list's centroid gone: its members' residual codes cannot be computed.
    fromElsewhere(
      path,
      `DELETE FROM vector_lists WHERE list = (SELECT max(list) FROM vector_lists);
       DELETE FROM memory_vector_residuals`,
    );
    expect(stepsUntilDone(path, 50)).toBeLessThan(10);
  });

  it('let the index steps come to an end while another connection lists a vector without its residual code between every two', () => {
    const { path, stored } = built('busy.db', 900, 7);
    const { database, index } = openIndex(path);
    // A process of the previous release, writing all along (as an import or a busy face does): each of its commits
    // lists one more vector, without a residual row.
    const older = openIndex(path);
    const listed = listedIds(path);
    const random = createSeededRandom(8);
    const written: number[] = [];
    let steps = 0;
    for (let round = 0; round < 40; round++) {
      const id = 10_000 + round;
      const close = stored[(listed[round * 7] ?? 1) - 1]?.vector ?? gaussian(random);
      older.database.transaction(() => {
        older.index.put(id, 'global', { model: 'm', vector: near(close, random, 0.95) });
        older.database.prepare('DELETE FROM memory_vector_residuals WHERE memory_id = ?').run(id);
      })();
      written.push(id);
      // Linking's first pass: steps until one says nothing is left.
      if (!database.transaction(() => index.indexStep()).immediate()) break;
      steps++;
    }
    expect(steps).toBeLessThan(5);
    // What was listed by then has its residual code.
    const missing = database
      .prepare<[], number>(
        `SELECT count(*) FROM memory_vector_list_bits AS l
         WHERE l.memory_id >= 10000 AND l.part >= 0
           AND NOT EXISTS (SELECT 1 FROM memory_vector_residuals AS r WHERE r.memory_id = l.memory_id)`,
      )
      .pluck()
      .get();
    expect(written.length).toBeGreaterThan(0);
    expect(missing).toBe(0);
  });

  it('never make recall throw, whatever the type and size of their code', () => {
    const { path, stored } = built('codes.db', 900, 3);
    const listed = listedIds(path);
    const at = (position: number) => listed[position] ?? 0;
    const random = createSeededRandom(4);
    const queries = Array.from({ length: 20 }, () =>
      near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8),
    );
    // Codes of the right length but not a blob (text, as a tool writing the table by hand could leave), of the wrong
    // lengths, an integer, a null-free empty blob.
    fromElsewhere(
      path,
      `UPDATE memory_vector_residuals SET code = '${'x'.repeat(CODE_BYTES)}' WHERE memory_id IN (${listed.slice(0, 300).join(', ')});
       UPDATE memory_vector_residuals SET code = zeroblob(${CODE_BYTES - 1}) WHERE memory_id = ${at(300)};
       UPDATE memory_vector_residuals SET code = zeroblob(${CODE_BYTES + 1}) WHERE memory_id = ${at(301)};
       UPDATE memory_vector_residuals SET code = 12345 WHERE memory_id = ${at(302)};
       UPDATE memory_vector_residuals SET code = x'' WHERE memory_id = ${at(303)};`,
    );
    const { index } = openIndex(path, { listSnapshotAfter: 0 });
    for (const query of queries) {
      expect(() => index.search(query, 'm', null, 10)).not.toThrow();
      expect(() => index.search(query, 'm', ['user:a'], 10)).not.toThrow();
    }
  });

  it("never show another owner's memory nor make recall throw: scales not finite, huge or negative, ids that are no memory's, generations to come", () => {
    const { path, stored } = built('scales.db', 2000, 5);
    const ownerOf = new Map(stored.map((row) => [row.id, row.owner]));
    const listed = listedIds(path);
    const others = listed.filter((id) => ownerOf.get(id) !== 'user:a' && ownerOf.get(id) !== 'global');
    // Every other owner's residual row made to estimate its memory first (a scale of +infinity), or another way.
    // (`||` of two blobs is text: the bytes go through hex to stay a blob.)
    const scale = (value: string) => `unhex(hex(substr(code, 1, ${CODE_BYTES - 4})) || '${value}')`;
    const third = Math.floor(others.length / 3);
    fromElsewhere(
      path,
      `UPDATE memory_vector_residuals SET code = ${scale('0000807f')} WHERE memory_id IN (${others.slice(0, third).join(', ')});
       UPDATE memory_vector_residuals SET code = ${scale('0000c0ff')} WHERE memory_id IN (${others.slice(third, 2 * third).join(', ')});
       UPDATE memory_vector_residuals SET code = ${scale('ffff7f7f')} WHERE memory_id IN (${others.slice(2 * third).join(', ')});
       UPDATE memory_vector_residuals SET code = ${scale('000080ff')} WHERE memory_id IN (
         SELECT memory_id FROM memory_vector_residuals WHERE memory_id % 7 = 0);
       UPDATE memory_vector_residuals SET code = ${scale('ffff7fff')} WHERE memory_id IN (
         SELECT memory_id FROM memory_vector_residuals WHERE memory_id % 11 = 0);
       INSERT INTO memory_vector_residuals (memory_id, generation, code)
         SELECT -memory_id, generation, code FROM memory_vector_residuals WHERE memory_id < 100;
       INSERT INTO memory_vector_residuals (memory_id, generation, code)
         VALUES (9223372036854775807, (SELECT generation FROM vector_list_state), zeroblob(${CODE_BYTES})),
                (4611686018427387904, (SELECT generation FROM vector_list_state), zeroblob(${CODE_BYTES})),
                (900000, (SELECT generation FROM vector_list_state), zeroblob(${CODE_BYTES}));
       UPDATE memory_vector_residuals SET generation = generation + 5 WHERE memory_id % 13 = 0;`,
    );
    const { database, index } = openIndex(path, { listSnapshotAfter: 0 });
    const random = createSeededRandom(6);
    for (let query = 0; query < 40; query++) {
      const vector = near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8);
      const hits = index.search(vector, 'm', ['global', 'user:a'], 20);
      expect(hits.length).toBeGreaterThan(0);
      for (const hit of hits) expect(['global', 'user:a']).toContain(ownerOf.get(hit.id));
      expect(() => index.search(vector, 'm', null, 10)).not.toThrow();
    }
    // Linking's pass over the same snapshot, then the steps (the rows of generations to come are filled over).
    expect(() =>
      index.searchNearOlder(
        stored.slice(0, 100).map((row) => ({ vector: row.vector, owners: ['global', 'user:a'], olderThan: row.id })),
        'm',
        11,
        0.85,
      ),
    ).not.toThrow();
    let steps = 0;
    while (steps < 50 && database.transaction(() => index.indexStep()).immediate()) steps++;
    expect(steps).toBeLessThan(50);
  });

  it('end the residual read whose last row of a page has an id a JavaScript number cannot hold (2^53 + 1)', () => {
    const { path, stored } = built('beyond-2-53.db', 900, 7);
    const ownerOf = new Map(stored.map((row) => [row.id, row.owner]));
    // 2^53 + 1 reads as 2^53: a page that ends on it must not start the next page below it again.
    fromElsewhere(
      path,
      `INSERT INTO memory_vector_residuals (memory_id, generation, code)
         VALUES (9007199254740993, (SELECT generation FROM vector_list_state), zeroblob(${CODE_BYTES}));`,
    );
    const { database, index } = openIndex(path, { listSnapshotAfter: 0 });
    const generation = database.prepare<[], number>('SELECT generation FROM vector_list_state').pluck().get() ?? 0;
    const residualRows = database
      .prepare<[number], number>('SELECT count(*) FROM memory_vector_residuals WHERE generation = ?')
      .pluck()
      .get(generation);
    for (const size of [1, 7, 16_384]) {
      let pages = 0;
      let rows = 0;
      for (const page of residualPages(database, generation, CODE_BYTES - 4, size)) {
        rows += page.ids.length;
        if (++pages > 2000) break;
      }
      expect(pages).toBeLessThanOrEqual(2000);
      expect(rows).toBe(residualRows);
    }
    // And recall over it ends, with the owners asked for.
    const random = createSeededRandom(8);
    for (let query = 0; query < 5; query++) {
      const vector = near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8);
      for (const hit of index.search(vector, 'm', ['global', 'user:a'], 10)) {
        expect(['global', 'user:a']).toContain(ownerOf.get(hit.id));
      }
    }
  });

  it.each(['UTF-8', 'UTF-16le', 'UTF-16be'])(
    'are read byte for byte in a file whose text is %s (made before mneme opened it), whatever their bytes',
    (encoding) => {
      const path = join(folder, `encoding-${encoding}.db`);
      const first = new BetterSqlite3(path);
      first.pragma(`encoding = '${encoding}'`);
      // A table fixes the text encoding; dropped, since mneme refuses a file holding tables of something else.
      first.exec('CREATE TABLE made_before (x); DROP TABLE made_before');
      first.close();
      const { database, index } = openIndex(path);
      expect(database.pragma('encoding', { simple: true })).toBe(encoding);
      const stored = vectorsFor(900, 9);
      database.transaction(() => {
        for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
      })();
      while (database.transaction(() => index.indexStep()).immediate());
      // Codes of every byte value: NUL, lone surrogates' halves, bytes that are no UTF-8 at all.
      const random = createSeededRandom(10);
      const update = database.prepare<[Buffer, number]>(
        'UPDATE memory_vector_residuals SET code = ? WHERE memory_id = ?',
      );
      const ids = database.prepare<[], number>('SELECT memory_id FROM memory_vector_residuals').pluck().all();
      for (const id of ids.filter((_, position) => position % 3 === 0)) {
        const code = Buffer.alloc(CODE_BYTES, 0);
        for (let at = 0; at < CODE_BYTES - 4; at++)
          code[at] = [0x00, 0xd8, 0xdc, 0xff, 0xc0, 0x80][random.below(6)] ?? 0;
        code.writeFloatLE(0.5, CODE_BYTES - 4);
        update.run(code, id);
      }
      const generation = database.prepare<[], number>('SELECT generation FROM vector_list_state').pluck().get() ?? 0;
      const expected = database
        .prepare<[number], [number, Buffer]>(
          'SELECT memory_id, code FROM memory_vector_residuals WHERE generation = ? ORDER BY memory_id',
        )
        .raw()
        .all(generation);
      expect(expected.length).toBeGreaterThan(800);
      for (const size of [16_384, 100]) {
        const read: Array<[number, Buffer]> = [];
        for (const page of residualPages(database, generation, CODE_BYTES - 4, size)) {
          for (const [row, id] of page.ids.entries()) {
            read.push([id, Buffer.from(page.codes.subarray(row * CODE_BYTES, (row + 1) * CODE_BYTES))]);
          }
        }
        expect(read).toEqual(expected);
      }
    },
  );
});
