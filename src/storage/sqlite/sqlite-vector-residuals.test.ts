import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../../bench/seeded-random.js';
import { cosine } from '../../core/maintenance/consolidate-task.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { gaussian as gaussianVector, near } from './sqlite-test-vectors.fixture.js';
import { createSqliteVectorIndex, RERANK_SCOPE, rerankFor, type SqliteVectorIndex } from './sqlite-vector-index.js';
import {
  BANDS,
  bandEstimates,
  placesById,
  residualCode,
  residualPages,
  type SnapshotPart,
} from './sqlite-vector-lists.js';

/**
 * The residual codes of the inverted lists (ADR 10, 2026-12-02, session 11, migration 24): each listed vector's
 * signs off its list's centroid, written with its list row, filled by maintenance's index steps for lists built
 * without them, and the fallback of recall for a code without one.
 */

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'mneme-vector-residuals-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 128;
const OWNERS = ['global', 'global', 'user:a', 'user:b', 'room:c'];

interface Stored {
  id: number;
  owner: string;
  vector: Float32Array;
}

const gaussian = (random: SeededRandom, dimensions = DIMENSIONS) => gaussianVector(random, dimensions);

const centres = Array.from({ length: 12 }, (_, index) => gaussian(createSeededRandom(2000 + index)));

/** `count` vectors around 12 centres (a cosine of about 0.6 to theirs), one in twelve Gaussian (an outlier). */
function vectorsFor(count: number, seed: number, firstId = 1): Stored[] {
  const random = createSeededRandom(seed);
  return Array.from({ length: count }, (_, position) => {
    const centre = centres[random.below(centres.length)] ?? gaussian(random);
    const vector = random.next() < 1 / 12 ? gaussian(random) : near(centre, random, 0.6);
    return { id: firstId + position, owner: OWNERS[random.below(OWNERS.length)] ?? 'global', vector };
  });
}

function openIndex(
  path: string,
  tuning: { listSnapshotAfter?: number; listResidualPage?: number; rerank?: number; residualRerank?: number } = {},
): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 500, ...tuning });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

function put(database: Database.Database, index: SqliteVectorIndex, stored: readonly Stored[]): void {
  database.transaction(() => {
    for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
  })();
}

function build(database: Database.Database, index: SqliteVectorIndex): number {
  let steps = 0;
  while (database.transaction(() => index.indexStep()).immediate()) steps++;
  return steps;
}

/**
 * Runs `sql` on another connection to the file, as a process of the previous release (which knows nothing of the
 * residual codes) would leave it.
 */
function asOlderProcess(path: string, sql: string): void {
  const database = openSqliteDatabase({ path });
  try {
    database.exec(sql);
  } finally {
    database.close();
  }
}

function residualRows(database: Database.Database): number {
  return database.prepare<[], number>('SELECT count(*) FROM memory_vector_residuals').pluck().get() ?? 0;
}

/**
 * What does not agree between the file's lists and its residual rows: a row of the lists' generation must be the
 * residual code of its memory's stored vector under the centroid of the list it is in (not of the overflow); with
 * `complete`, every listed vector but the overflow's must have one.
 */
function residualProblems(database: Database.Database, index: SqliteVectorIndex, complete: boolean): string[] {
  const generation = database
    .prepare<[], number>('SELECT generation FROM vector_list_state WHERE id = 1')
    .pluck()
    .get();
  const centroids = new Map(
    database
      .prepare<[], { list: number; centroid: Buffer }>('SELECT list, centroid FROM vector_lists')
      .all()
      .map((row) => [row.list, new Float32Array(Uint8Array.from(row.centroid).buffer)]),
  );
  const parts = new Map(
    database
      .prepare<[], { id: number; part: number }>('SELECT memory_id AS id, part FROM memory_vector_list_bits')
      .all()
      .map((row) => [row.id, row.part]),
  );
  const vectors = index.vectors([...parts.keys()]);
  const rows = new Map(
    database
      .prepare<[], { id: number; generation: number; code: Buffer }>(
        'SELECT memory_id AS id, generation, code FROM memory_vector_residuals',
      )
      .all()
      .map((row) => [row.id, row]),
  );
  const problems: string[] = [];
  for (const [id, row] of rows) {
    if (row.generation !== generation) continue;
    const part = parts.get(id);
    if (part === undefined || part < 0) {
      problems.push(`memory ${id} has a residual row but ${part === undefined ? 'no list row' : 'is in the overflow'}`);
      continue;
    }
    const centroid = centroids.get(Math.floor(part / BANDS));
    const vector = vectors.get(id);
    if (!centroid || !vector) {
      problems.push(`memory ${id}: no centroid or vector`);
      continue;
    }
    if (!row.code.equals(residualCode(vector, centroid))) problems.push(`memory ${id}: another vector's residual`);
  }
  if (complete) {
    for (const [id, part] of parts) {
      if (part >= 0 && rows.get(id)?.generation !== generation) problems.push(`memory ${id} has no residual row`);
    }
  }
  return problems;
}

describe('the residual codes of the inverted lists', { timeout: 180_000 }, () => {
  it('are written with each list row, at the build and when vectors are put, put again and removed, and for a new training', () => {
    const path = join(folder, 'written.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(600, 1);
    put(database, index, stored);
    build(database, index);
    expect(residualProblems(database, index, true)).toEqual([]);
    // The overflow's vectors have none, the others one each.
    const overflow = database
      .prepare<[], number>('SELECT count(*) FROM memory_vector_list_bits WHERE part = -1')
      .pluck()
      .get();
    expect(overflow).toBeGreaterThan(0);
    expect(residualRows(database)).toBe(600 - (overflow ?? 0));
    const random = createSeededRandom(2);
    put(database, index, vectorsFor(100, 3, 10_000));
    put(
      database,
      index,
      stored.slice(0, 100).map((row) => ({ ...row, vector: gaussian(random) })),
    );
    database.transaction(() => index.remove(stored.slice(100, 200).map((row) => row.id)))();
    expect(residualProblems(database, index, true)).toEqual([]);
    // Four times the vectors: a new training, whose switch drops the old generation's rows.
    const generation = database.prepare('SELECT generation FROM vector_list_state').pluck().get();
    put(database, index, vectorsFor(2000, 4, 20_000));
    build(database, index);
    expect(database.prepare('SELECT generation FROM vector_list_state').pluck().get()).not.toBe(generation);
    expect(residualProblems(database, index, true)).toEqual([]);
    expect(
      database.prepare('SELECT count(*) FROM memory_vector_residuals WHERE generation = ?').pluck().get(generation),
    ).toBe(0);
    // Another model: no lists, no residual rows.
    index.configure({ model: 'other', dimensions: DIMENSIONS });
    expect(residualRows(database)).toBe(0);
  });

  it('are none after a put or an index step rolled back', () => {
    const path = join(folder, 'rolled-back.db');
    const { database, index } = openIndex(path);
    put(database, index, vectorsFor(600, 5));
    build(database, index);
    const before = residualRows(database);
    expect(() =>
      database.transaction(() => {
        for (const row of vectorsFor(20, 6, 10_000)) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
        throw new Error('interrupted');
      })(),
    ).toThrow('interrupted');
    expect(residualRows(database)).toBe(before);
    expect(residualProblems(database, index, true)).toEqual([]);
    // Lists built without residual codes (by the previous release): a fill step rolled back writes none.
    asOlderProcess(path, 'DELETE FROM memory_vector_residuals');
    expect(() =>
      database
        .transaction(() => {
          expect(index.indexStep()).toBe(true);
          throw new Error('interrupted');
        })
        .immediate(),
    ).toThrow('interrupted');
    expect(residualRows(database)).toBe(0);
  });

  it("are filled by maintenance's index steps for lists built without them, a new connection going on where one stopped", () => {
    const path = join(folder, 'filled.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(1500, 7);
    put(database, index, stored);
    build(database, index);
    const listed = residualRows(database);
    // As the lists of a file of the previous release are, once migrated: no residual rows.
    asOlderProcess(path, 'DELETE FROM memory_vector_residuals');
    expect(database.transaction(() => index.indexStep()).immediate()).toBe(true);
    // One page, in memory id order, each row right.
    expect(residualRows(database)).toBe(400);
    expect(residualProblems(database, index, false)).toEqual([]);
    // The process ends; another goes on from the file alone.
    const other = openIndex(path);
    // Each full page a step that says more may be left; the last page, not full, is written by a step that says none is.
    expect(build(other.database, other.index)).toBe(Math.floor((listed - 400) / 400));
    expect(residualRows(database)).toBe(listed);
    expect(residualProblems(database, index, true)).toEqual([]);
    // A vector listed by a process of the previous release (no residual row) is filled by the next step.
    const late = vectorsFor(1, 8, 50_000)[0] ?? {
      id: 50_000,
      owner: 'global',
      vector: gaussian(createSeededRandom(8)),
    };
    put(database, index, [{ ...late, vector: near(stored[3]?.vector ?? late.vector, createSeededRandom(9), 0.95) }]);
    asOlderProcess(path, `DELETE FROM memory_vector_residuals WHERE memory_id = ${late.id}`);
    expect(residualProblems(database, index, true)).not.toEqual([]);
    expect(build(other.database, other.index)).toBe(0);
    expect(residualProblems(database, index, true)).toEqual([]);
  });

  it('go with the slices of their vector, whoever removes them (a process of the previous release too)', () => {
    const path = join(folder, 'gone.db');
    const { database, index } = openIndex(path);
    put(database, index, vectorsFor(600, 10));
    build(database, index);
    const id = database
      .prepare<[], number>('SELECT memory_id FROM memory_vector_residuals ORDER BY memory_id LIMIT 1 OFFSET 7')
      .pluck()
      .get();
    const before = residualRows(database);
    // What every release's removal of a vector does to its slices (`removeOne`), without this release's code.
    database
      .prepare('DELETE FROM memory_vector_slices WHERE key BETWEEN ? AND ?')
      .run((id ?? 0) * 64, (id ?? 0) * 64 + 63);
    expect(database.prepare('SELECT count(*) FROM memory_vector_residuals WHERE memory_id = ?').pluck().get(id)).toBe(
      0,
    );
    expect(residualRows(database)).toBe(before - 1);
  });

  it('leave recall re-ranking as many candidates as before when one of them has none (listed by the previous release)', () => {
    const path = join(folder, 'fallback.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(2000, 11);
    put(database, index, stored);
    build(database, index);
    // Every candidate re-ranked (through SQL, no estimates), or 10 when all have their residual codes, else all.
    const everyOne = openIndex(path, { listSnapshotAfter: Number.POSITIVE_INFINITY }).index;
    const fine = openIndex(path, { listSnapshotAfter: 0, rerank: 4096, residualRerank: 1 }).index;
    const random = createSeededRandom(12);
    // Queries near vectors of the lists, not of the overflow (whose estimate has no finer form: no residual code).
    const overflow = new Set(
      database.prepare<[], number>('SELECT memory_id FROM memory_vector_list_bits WHERE part = -1').pluck().all(),
    );
    const listed = stored.filter((row) => !overflow.has(row.id));
    const queries = Array.from({ length: 30 }, () =>
      near(listed[random.below(listed.length)]?.vector ?? gaussian(random), random, 0.8),
    );
    const differs = (query: Float32Array) =>
      JSON.stringify(fine.search(query, 'm', null, 10)) !== JSON.stringify(everyOne.search(query, 'm', null, 10));
    const before = queries.map(differs);
    // A vector near each query put by a process that writes no residual row (a release before migration 24).
    put(
      database,
      index,
      queries.map((query, position) => ({ id: 90_000 + position, owner: 'global', vector: near(query, random, 0.97) })),
    );
    asOlderProcess(path, 'DELETE FROM memory_vector_residuals WHERE memory_id >= 90000');
    // The queries whose new neighbour went to a list (those of the overflow need no residual code).
    const inLists = new Set(
      database
        .prepare<[], number>(
          'SELECT memory_id - 90000 FROM memory_vector_list_bits WHERE memory_id >= 90000 AND part >= 0',
        )
        .pluck()
        .all(),
    );
    expect(inLists.size).toBeGreaterThanOrEqual(10);
    // Ten re-ranked gave other answers than all for some of them; now all are re-ranked for each.
    expect(queries.filter((_, position) => inLists.has(position) && before[position]).length).toBeGreaterThan(0);
    expect(queries.filter((query, position) => inLists.has(position) && differs(query))).toEqual([]);
  });

  it("are all read into recall's estimates, a page of rows at a time, as one page gives them", () => {
    const path = join(folder, 'pages.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(2000, 21);
    // The smaller ids listed after the larger ones: each partition's members out of memory id order.
    put(database, index, stored.slice(1000));
    build(database, index);
    put(database, index, stored.slice(0, 1000));
    const tuning = { listSnapshotAfter: 0, rerank: 4096, residualRerank: 12 };
    const onePage = openIndex(path, tuning).index;
    const pages = openIndex(path, { ...tuning, listResidualPage: 7 }).index;
    const everyOne = openIndex(path, { listSnapshotAfter: Number.POSITIVE_INFINITY }).index;
    const random = createSeededRandom(22);
    const queries = Array.from({ length: 30 }, () =>
      near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8),
    );
    const answers = (searched: SqliteVectorIndex) => queries.map((query) => searched.search(query, 'm', null, 10));
    const paged = answers(pages);
    expect(paged).toEqual(answers(onePage));
    // Twelve re-ranked by the residual codes' estimates, not all of them: a member the pages missed would have none,
    // and its search would re-rank every candidate (`rerank`), as through SQL.
    const all = answers(everyOne);
    expect(
      paged.filter((hits, position) => JSON.stringify(hits) !== JSON.stringify(all[position])).length,
    ).toBeGreaterThan(0);
  });

  it.each(['UTF-8', 'UTF-16le'])(
    'are read a page at a time in memory id order, every byte of each code kept, rows of another kind left out (%s)',
    (encoding) => {
      const database = encoding === 'UTF-8' ? openSqliteDatabase({ path: ':memory:' }) : new Database(':memory:');
      opened.push(database);
      if (encoding !== 'UTF-8') {
        // A file made elsewhere with UTF-16 text: a blob read as text there is converted, not kept byte for byte.
        database.pragma(`encoding = '${encoding}'`);
        database.exec(
          'CREATE TABLE memory_vector_residuals (memory_id INTEGER PRIMARY KEY, generation INTEGER, code BLOB)',
        );
      }
      const codeBytes = 16;
      const random = createSeededRandom(23);
      const insert = database.prepare(
        'INSERT INTO memory_vector_residuals (memory_id, generation, code) VALUES (?, ?, ?)',
      );
      const expected: Array<{ id: number; code: Buffer }> = [];
      for (let id = 1; id <= 40; id++) {
        // Codes with every byte value among them: zeros (a text's end), bytes that are no UTF-8, 0xff.
        const code = Buffer.alloc(codeBytes + 4);
        for (let byte = 0; byte < code.length; byte++)
          code[byte] = id % 5 === 0 ? 0 : id % 7 === 0 ? 0xff : random.below(256);
        const kind = id % 11;
        if (kind === 3) insert.run(id, 2, code.toString('latin1'));
        else if (kind === 4) insert.run(id, 2, code.subarray(0, codeBytes));
        else if (kind === 6) insert.run(id, 1, code);
        else {
          insert.run(id, 2, code);
          expected.push({ id, code });
        }
      }
      for (const pageSize of [1, 3, 40, 100]) {
        const read: Array<{ id: number; code: Buffer }> = [];
        let pages = 0;
        for (const page of residualPages(database, 2, codeBytes, pageSize)) {
          pages++;
          page.ids.forEach((id, row) => {
            read.push({ id, code: page.codes.subarray(row * (codeBytes + 4), (row + 1) * (codeBytes + 4)) });
          });
        }
        expect(read).toEqual(expected);
        expect(pages).toBe(Math.ceil(expected.length / pageSize));
      }
    },
  );

  it('give places in memory id order, ties in their order, whatever the ids', () => {
    const small = Float64Array.from([9, 3, 7, 3, 1, 12, 0]);
    expect(Array.from(placesById(small))).toEqual([6, 4, 1, 3, 2, 0, 5]);
    // Ids past 2^32 (or not whole) sort by a comparison instead, to the same order.
    const large = Float64Array.from([2 ** 40, 5, 2 ** 33, 5, 2 ** 35]);
    expect(Array.from(placesById(large))).toEqual([1, 3, 2, 4, 0]);
    expect(Array.from(placesById(new Float64Array(0)))).toEqual([]);
  });

  it('let a larger scope re-rank more candidates, by the square root of its size past the one measured', () => {
    expect(rerankFor(160, 1_000)).toBe(160);
    expect(rerankFor(160, RERANK_SCOPE)).toBe(160);
    expect(rerankFor(160, 4 * RERANK_SCOPE)).toBe(320);
    expect(rerankFor(256, 10 * RERANK_SCOPE)).toBe(Math.ceil(256 * Math.sqrt(10)));
  });

  it("stay with their codes when linking's first pass sorts the codes in memory by memory id", () => {
    const path = join(folder, 'sorted.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(2000, 16);
    // The larger ids listed first, the smaller put after: each partition's codes out of memory id order.
    put(database, index, stored.slice(1000));
    build(database, index);
    put(database, index, stored.slice(0, 1000));
    // 12 of 40 candidates re-ranked: the answers depend on each candidate's estimate.
    const fine = openIndex(path, { listSnapshotAfter: 0, rerank: 12 }).index;
    const random = createSeededRandom(17);
    const queries = Array.from({ length: 30 }, () =>
      near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8),
    );
    const answers = () => queries.map((query) => fine.search(query, 'm', null, 10));
    const before = answers();
    const older = fine.searchNearOlder(
      stored.slice(0, 200).map((row) => ({ vector: row.vector, owners: null, olderThan: row.id })),
      'm',
      11,
      0.85,
    );
    expect(older).toHaveLength(200);
    expect(answers()).toEqual(before);
  });

  it('estimate a code from its residual code as a brute force does (its signs off the centroid and the scale beside them)', () => {
    const random = createSeededRandom(13);
    for (const dimensions of [128, 100, 768]) {
      const words = Math.ceil(dimensions / 32);
      const stride = words * 4;
      const query = unitOf(gaussian(random, dimensions));
      const centroids = new Float32Array(2 * dimensions);
      for (let list = 0; list < 2; list++) centroids.set(unitOf(gaussian(random, dimensions)), list * dimensions);
      const vectors = Array.from({ length: 12 }, () => gaussian(random, dimensions));
      const partitions = vectors.map((_, member) => (member % 3 === 2 ? -1 : (member % 3) * BANDS + 30 + member));
      // A part a member (a part is one partition, of one list), its sign bits all clear (-1 each).
      const members = vectors.map((vector, member) => {
        const partition = partitions[member] ?? -1;
        const list = Math.max(0, Math.floor(partition / BANDS));
        const code = residualCode(vector, centroids.subarray(list * dimensions, (list + 1) * dimensions));
        const residuals = new Uint8Array(stride);
        residuals.set(code.subarray(0, Math.ceil(dimensions / 8)));
        const part: SnapshotPart = {
          ids: new Float64Array(1),
          owners: new Float64Array(1),
          codes: new Uint32Array(words),
          residuals,
          // One member without its residual code: the estimate of its own signs.
          residualScales: Float32Array.of(member === 4 ? Number.NaN : code.readFloatLE(Math.ceil(dimensions / 8))),
        };
        return { part, member: 0, partition };
      });
      const refined = new Uint8Array(members.length);
      const estimates = bandEstimates(query, members, words, centroids, 2, undefined, refined);
      for (const [member, vector] of vectors.entries()) {
        const partition = partitions[member] ?? -1;
        const signsScale = Math.sqrt(2 / (Math.PI * dimensions));
        const allClear = -query.reduce((sum, value) => sum + value, 0);
        if (partition < 0) {
          expect(estimates[member]).toBeCloseTo(signsScale * allClear, 10);
          expect(refined[member]).toBe(1);
          continue;
        }
        const list = Math.floor(partition / BANDS);
        const centroid = centroids.subarray(list * dimensions, (list + 1) * dimensions);
        const along = dotOf(query, centroid);
        const angle = (((partition % BANDS) + 0.5) * Math.PI) / 180;
        if (member === 4) {
          const centroidSigns = -centroid.reduce((sum, value) => sum + value, 0);
          expect(estimates[member]).toBeCloseTo(
            Math.cos(angle) * along + Math.sin(angle) * signsScale * (allClear - along * centroidSigns),
            10,
          );
          expect(refined[member]).toBe(0);
          continue;
        }
        // The residual's signs and their product with the unit residual, from the vector itself.
        const point = unitOf(vector);
        const pointAlong = dotOf(point, centroid);
        const residual = point.map((value, at) => value - pointAlong * (centroid[at] ?? 0));
        const signs = Array.from(residual, (value) => (value > 0 ? 1 : -1));
        const norm = Math.hypot(...residual);
        const scale = residual.reduce((sum, value, at) => sum + value * (signs[at] ?? 0), 0) / norm;
        const signed = (values: Float32Array) => signs.reduce((sum, sign, at) => sum + sign * (values[at] ?? 0), 0);
        const centroidSigns = signed(centroid);
        const expected =
          Math.cos(angle) * along +
          Math.sin(angle) *
            (scale / (dimensions - centroidSigns * centroidSigns)) *
            (signed(query) - along * centroidSigns);
        expect(estimates[member]).toBeCloseTo(expected, 5);
        expect(refined[member]).toBe(1);
      }
    }
  });

  it('let recall find as many of the exact top 10 re-ranking fewer candidates than the signs alone need', () => {
    const path = join(folder, 'recall.db');
    const { database, index } = openIndex(path);
    const stored = vectorsFor(3000, 14);
    put(database, index, stored);
    build(database, index);
    const random = createSeededRandom(15);
    const queries = Array.from({ length: 60 }, () =>
      near(stored[random.below(stored.length)]?.vector ?? gaussian(random), random, 0.8),
    );
    const found = (search: SqliteVectorIndex) => {
      let share = 0;
      for (const query of queries) {
        const exact = new Set(
          stored
            .map((row) => ({ id: row.id, score: cosine(query, row.vector) }))
            .sort((a, b) => b.score - a.score || a.id - b.id)
            .slice(0, 10)
            .map((hit) => hit.id),
        );
        share += search.search(query, 'm', null, 10).filter((hit) => exact.has(hit.id)).length / 10;
      }
      return share / queries.length;
    };
    // 40 Hamming candidates for 10 hits: 14 re-ranked by the residual codes' estimates...
    const withResiduals = found(openIndex(path, { listSnapshotAfter: 0, rerank: 14 }).index);
    // ...against 14 by the signs' estimate, the residual rows gone.
    database.exec('DELETE FROM memory_vector_residuals');
    const signsAlone = found(openIndex(path, { listSnapshotAfter: 0, rerank: 14 }).index);
    expect(withResiduals).toBeGreaterThan(signsAlone + 0.02);
  });
});

function unitOf(vector: Float32Array): Float32Array {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function dotOf(left: Float32Array, right: Float32Array): number {
  return left.reduce((sum, value, at) => sum + value * (right[at] ?? 0), 0);
}
