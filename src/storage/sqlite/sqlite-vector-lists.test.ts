import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../../bench/seeded-random.js';
import { cosine } from '../../core/maintenance/consolidate-task.js';
import { createDotProducts } from './sqlite-code-scan.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { gaussian as gaussianVector, near } from './sqlite-test-vectors.fixture.js';
import { binaryCode, createSqliteVectorIndex, type SqliteVectorIndex } from './sqlite-vector-index.js';
import {
  BANDS,
  bandEstimates,
  centroidProducts,
  createPartOf,
  createSqliteVectorLists,
  listCount,
  nearestWithin,
} from './sqlite-vector-lists.js';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const folder = mkdtempSync(join(tmpdir(), 'mneme-vector-lists-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 128;
const MIN_SCORE = 0.85;
const LIMIT = 11;

interface Stored {
  id: number;
  owner: string;
  vector: Float32Array;
}

const gaussian = (random: SeededRandom, dimensions = DIMENSIONS) => gaussianVector(random, dimensions);

const OWNERS = ['global', 'global', 'user:a', 'user:b', 'room:c'];
/** The centres of the clustered vectors, the same in every test. */
const centres = Array.from({ length: 12 }, (_, index) => gaussian(createSeededRandom(1000 + index)));

/** `vector` turned by `angle` (radians) towards `target` (away from it when negative), on the sphere. */
function turned(vector: Float32Array, target: Float32Array, angle: number): Float32Array {
  const unit = scaled(vector, 1);
  const along = cosine(unit, target);
  const towards = scaled(
    target.map((value, index) => value / Math.hypot(...target) - along * (unit[index] ?? 0)),
    1,
  );
  return unit.map((value, index) => Math.cos(angle) * value + Math.sin(angle) * (towards[index] ?? 0));
}

function scaled(vector: Float32Array, length: number): Float32Array {
  const norm = Math.hypot(...vector);
  return vector.map((value) => (value / norm) * length);
}

/**
 * `count` vectors, one in three followed by a neighbour above the linking cosine under some owner.
 * Clustered: 12 centres, members at a cosine of about 0.6 to theirs (as in the bench's corpus), the
 * neighbour turned by 25 to 31.5 degrees straight towards or away from the centre, where the lists'
 * bound (angle to the centroid, give or take the linking angle) is tightest. Unclustered: Gaussian
 * vectors and neighbours at a cosine of 0.8 to 0.98 in any direction. With outliers: clustered, but
 * one vector in twelve Gaussian (about 90 degrees from every centre, as a text unlike any topic is),
 * its neighbour in any direction.
 */
function vectorsFor(
  kind: 'clustered' | 'unclustered' | 'with outliers',
  count: number,
  seed: number,
  firstId = 1,
): Stored[] {
  const random = createSeededRandom(seed);
  const stored: Stored[] = [];
  const owner = () => OWNERS[random.below(OWNERS.length)] ?? 'global';
  while (stored.length < count) {
    const centre = centres[random.below(centres.length)] ?? gaussian(random);
    const outlier = kind === 'unclustered' || (kind === 'with outliers' && random.next() < 1 / 12);
    const vector = outlier ? gaussian(random) : near(centre, random, 0.6);
    stored.push({ id: firstId + stored.length, owner: owner(), vector });
    if (stored.length % 3 === 1) {
      const degrees = 25 + random.next() * 6.5;
      const neighbour = outlier
        ? near(vector, random, 0.8 + random.next() * 0.18)
        : turned(vector, centre, ((random.next() < 0.5 ? 1 : -1) * degrees * Math.PI) / 180);
      stored.push({ id: firstId + stored.length, owner: owner(), vector: neighbour });
    }
  }
  return stored.slice(0, count);
}

/**
 * An index over a new database (`path`, default in memory). `listProbes`: lists a recall probes (0: the
 * bucket scan). `listSnapshotAfter`: searches without a write before the lists' codes are searched in
 * memory (0: at once; Infinity: always through SQL). Left out: the library's.
 */
function openIndex(
  listMinVectors: number,
  options: {
    listProbes?: number;
    listSnapshotAfter?: number;
    rerank?: number;
    residualRerank?: number;
    path?: string;
  } = {},
): { database: Database.Database; index: SqliteVectorIndex } {
  const { path = ':memory:', ...tuning } = options;
  const database = openSqliteDatabase({ path });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors, ...tuning });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

/** Each stored vector's neighbours as linking asks for them (its owner's and global ones), one line per vector. */
function linkingAnswers(index: SqliteVectorIndex, stored: readonly Stored[]): string[] {
  return stored.map((row) =>
    index
      .searchNear(row.vector, 'm', row.owner === 'global' ? null : ['global', row.owner], LIMIT, MIN_SCORE)
      .map((hit) => `${hit.id}:${hit.score.toFixed(6)}`)
      .join(','),
  );
}

function put(database: Database.Database, index: SqliteVectorIndex, stored: readonly Stored[]): void {
  database.transaction(() => {
    for (const row of stored) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
  })();
}

/** Runs the index's steps until it has nothing left to do; returns how many did work. */
function build(database: Database.Database, index: SqliteVectorIndex): number {
  let steps = 0;
  while (database.transaction(() => index.indexStep()).immediate()) steps++;
  return steps;
}

/** How many times the lists' codes were read into memory on `database` since this was called (one statement a read). */
function snapshotReads(database: Database.Database): () => number {
  let count = 0;
  const prepare = database.prepare.bind(database);
  database.prepare = ((source: string) => {
    if (source.includes('FROM memory_vector_list_bits_chunks ORDER BY chunk_id')) count++;
    return prepare(source);
  }) as typeof database.prepare;
  return () => count;
}

function listState(database: Database.Database) {
  return database
    .prepare<[], { generation: number; maintained: number; watermark: number | null; training_steps: number | null }>(
      'SELECT generation, maintained, watermark, training_steps FROM vector_list_state WHERE id = 1',
    )
    .get();
}

function listedIds(database: Database.Database): number[] {
  return database.prepare<[], number>('SELECT memory_id FROM memory_vector_list_bits ORDER BY memory_id').pluck().all();
}

/** Every stored vector of the scope at least `MIN_SCORE` close to `query`, best first, at most `LIMIT`. */
function exhaustive(stored: readonly Stored[], query: Float32Array, owners: readonly string[] | null) {
  return stored
    .filter((row) => owners === null || owners.includes(row.owner))
    .map((row) => ({ id: row.id, score: cosine(query, row.vector) }))
    .filter((hit) => hit.score >= MIN_SCORE)
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, LIMIT);
}

/** Queries (stored vectors and vectors near them) whose answers differ from an exhaustive search. */
function misses(index: SqliteVectorIndex, stored: readonly Stored[], queries: number, seed: number): string[] {
  const random = createSeededRandom(seed);
  const problems: string[] = [];
  for (let query = 0; query < queries; query++) {
    const base = stored[random.below(stored.length)];
    if (!base) continue;
    const vector = query % 2 === 0 ? base.vector : near(base.vector, random, 0.9);
    for (const owners of [null, ['global', 'user:a'], ['user:b']]) {
      const expected = exhaustive(stored, vector, owners);
      const found = index.searchNear(vector, 'm', owners, LIMIT, MIN_SCORE);
      const got = found.map((hit) => hit.id).join(',');
      const want = expected.map((hit) => hit.id).join(',');
      if (got !== want) problems.push(`query ${query} (${owners?.join('+') ?? 'all'}): ${got} instead of ${want}`);
    }
  }
  return problems;
}

function overflow(database: Database.Database) {
  return database
    .prepare<[], { overflow_band: number | null; overflow_vectors: number }>(
      'SELECT overflow_band, overflow_vectors FROM vector_list_state WHERE id = 1',
    )
    .get();
}

/** The ids in the overflow partition. */
function overflowIds(database: Database.Database): number[] {
  return database
    .prepare<[], number>('SELECT memory_id FROM memory_vector_list_bits WHERE part = -1 ORDER BY memory_id')
    .pluck()
    .all();
}

describe('the inverted lists of the SQLite vector index', { timeout: 180_000 }, () => {
  it.each([
    ['clustered', 'SQL', Number.POSITIVE_INFINITY],
    ['unclustered', 'SQL', Number.POSITIVE_INFINITY],
    ['with outliers', 'SQL', Number.POSITIVE_INFINITY],
    ['clustered', 'memory', 0],
    ['unclustered', 'memory', 0],
    ['with outliers', 'memory', 0],
  ] as const)(
    'find by a minimum cosine exactly what an exhaustive search finds, on %s vectors, searched through %s',
    (kind, _path, snapshotAfter) => {
      const stored = vectorsFor(kind, 1500, { clustered: 11, unclustered: 12, 'with outliers': 24 }[kind]);
      const { database, index } = openIndex(500, { listSnapshotAfter: snapshotAfter });
      put(database, index, stored);
      expect(build(database, index)).toBeGreaterThan(0);
      expect(listState(database)).toMatchObject({ maintained: 1, watermark: null, training_steps: null });
      expect(listedIds(database)).toEqual(stored.map((row) => row.id));
      const lists = database.prepare<[], number>('SELECT count(*) FROM vector_lists').pluck().get() ?? 0;
      expect(lists).toBeGreaterThan(1);
      expect(lists).toBeLessThanOrEqual(listCount(1500));
      expect(misses(index, stored, 60, 21)).toEqual([]);
    },
  );

  it.each(['clustered', 'uniform'] as const)(
    'are trained into lists of about the same size (none under a quarter of the mean) that answer exactly, on %s vectors',
    (kind) => {
      // Clustered: members of the 12 centres at a cosine of about 0.6 (as the bench's corpus has its
      // topics); uniform: Gaussian vectors made unit, uniform on the sphere.
      const random = createSeededRandom(31);
      const stored = Array.from({ length: 3000 }, (_, position) => ({
        id: position + 1,
        owner: OWNERS[position % OWNERS.length] ?? 'global',
        vector:
          kind === 'clustered'
            ? near(centres[random.below(centres.length)] ?? new Float32Array(DIMENSIONS), random, 0.6)
            : scaled(gaussian(random), 1),
      }));
      const { database, index } = openIndex(500);
      put(database, index, stored);
      build(database, index);
      const sizes = database
        .prepare<[], number>(
          `SELECT count(bits.memory_id) FROM vector_lists
           LEFT JOIN memory_vector_list_bits AS bits ON bits.part >= list * 181 AND bits.part < (list + 1) * 181
           GROUP BY list ORDER BY list`,
        )
        .pluck()
        .all();
      expect(sizes.length).toBe(listCount(3000));
      const mean = sizes.reduce((sum, size) => sum + size, 0) / sizes.length;
      expect(Math.min(...sizes)).toBeGreaterThanOrEqual(mean / 4);
      // More lists than the shortlist of centroids a vector's list is chosen among: still exact.
      expect(sizes.length).toBeGreaterThan(24);
      expect(misses(index, stored, 30, 33)).toEqual([]);
    },
  );

  it.each([12, 4])(
    'put the vectors far from every centroid in the overflow partition, so that the lists stay narrow, with one vector in %i far',
    (every) => {
      // Members of the 12 centres and, one in `every`, a Gaussian vector.
      const random = createSeededRandom(25);
      const stored = Array.from({ length: 1500 }, (_, position) => ({
        id: position + 1,
        owner: OWNERS[position % OWNERS.length] ?? 'global',
        vector:
          position % every === 0
            ? gaussian(random)
            : near(centres[random.below(centres.length)] ?? new Float32Array(DIMENSIONS), random, 0.6),
      }));
      const { database, index } = openIndex(500);
      put(database, index, stored);
      build(database, index);
      const band = overflow(database)?.overflow_band ?? null;
      expect(band).not.toBeNull();
      // Members lie about 53 degrees from their centre, the Gaussian vectors about 90.
      expect(band).toBeGreaterThan(50);
      expect(band).toBeLessThan(75);
      const far = stored
        .filter(
          (row) => Math.max(...centres.map((centre) => cosine(centre, row.vector))) < Math.cos((80 * Math.PI) / 180),
        )
        .map((row) => row.id);
      expect(far.length).toBeGreaterThan(50);
      const inOverflow = overflowIds(database);
      // Most of them (k-means may give a few Gaussian vectors a centroid of their own, close enough).
      expect(far.filter((id) => inOverflow.includes(id)).length).toBeGreaterThan(far.length / 2);
      expect(inOverflow.length).toBeLessThan(stored.length * (1 / every + 0.1));
      expect(overflow(database)?.overflow_vectors).toBe(inOverflow.length);
      // No list's band range reaches the far vectors' bands.
      const top = database.prepare<[], number>('SELECT max(high_band) FROM vector_lists').pluck().get() ?? 0;
      expect(top).toBeLessThanOrEqual(band ?? 0);
      expect(misses(index, stored, 60, 26)).toEqual([]);
    },
  );

  it('train lists from before the overflow partition again', () => {
    const stored = vectorsFor('with outliers', 800, 27);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    build(database, index);
    database.prepare('UPDATE vector_list_state SET overflow_band = NULL').run();
    expect(build(database, index)).toBeGreaterThan(0);
    expect(listState(database)?.generation).toBe(2);
    expect(overflow(database)?.overflow_band).not.toBeNull();
    expect(misses(index, stored, 30, 28)).toEqual([]);
  });

  it('are trained again once the overflow partition holds a tenth of the store more than at training, the store grown by a quarter', () => {
    const stored = vectorsFor('clustered', 1000, 29);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    build(database, index);
    expect(listState(database)?.generation).toBe(1);
    const random = createSeededRandom(30);
    const far = (count: number, firstId: number) =>
      Array.from({ length: count }, (_, position) => ({
        id: firstId + position,
        owner: 'global',
        vector: gaussian(random),
      }));
    // The overflow a tenth of the store more than at training, but the store grown by less than a quarter: kept.
    const some = far(240, 5000);
    put(database, index, some);
    expect(build(database, index)).toBe(0);
    const more = far(20, 6000);
    put(database, index, more);
    expect(build(database, index)).toBeGreaterThan(0);
    expect(listState(database)?.generation).toBe(2);
    const all = [...stored, ...some, ...more];
    expect(listedIds(database)).toEqual(all.map((row) => row.id));
    expect(misses(index, all, 30, 31)).toEqual([]);
  });

  it('answer exactly at every step of training and assignment, and cover every vector once done', () => {
    const stored = vectorsFor('with outliers', 1000, 13);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    let steps = 0;
    while (database.transaction(() => index.indexStep()).immediate()) {
      steps++;
      // A vector written between steps goes to its list once the lists are maintained.
      if (steps % 10 === 0) {
        const extra = vectorsFor('clustered', 3, 100 + steps, 5000 + steps * 3);
        put(database, index, extra);
        stored.push(...extra);
      }
      if (steps % 9 === 0) expect(misses(index, stored, 8, steps), `after step ${steps}`).toEqual([]);
    }
    expect(listedIds(database)).toEqual(stored.map((row) => row.id).sort((a, b) => a - b));
    expect(misses(index, stored, 40, 3)).toEqual([]);
  });

  it('keep each chunk of codes of 768-dimensional vectors in one page, with no overflow page', () => {
    const random = createSeededRandom(77);
    const database = openSqliteDatabase({ path: ':memory:' });
    opened.push(database);
    const index = createSqliteVectorIndex(database, { listMinVectors: 300 });
    index.configure({ model: 'm', dimensions: 768 });
    const stored = Array.from({ length: 900 }, (_, position) => ({
      id: position + 1,
      owner: OWNERS[position % OWNERS.length] ?? 'global',
      vector: gaussian(random, 768),
    }));
    put(database, index, stored);
    expect(build(database, index)).toBeGreaterThan(0);
    expect(listedIds(database)).toHaveLength(900);
    const pages = database
      .prepare<[], { pagetype: string; count: number }>(
        `SELECT pagetype, count(*) AS count FROM dbstat
         WHERE name = 'memory_vector_list_bits_vector_chunks00' GROUP BY pagetype`,
      )
      .all();
    expect(pages.find((row) => row.pagetype === 'leaf')?.count ?? 0).toBeGreaterThan(0);
    expect(pages.find((row) => row.pagetype === 'overflow')).toBeUndefined();
  });

  it('keep up with vectors put, put again and removed after they are built', () => {
    const stored = vectorsFor('unclustered', 1000, 14);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    build(database, index);
    const random = createSeededRandom(15);
    // New neighbours of old vectors, new vectors for old memories, and forgotten memories.
    const added = stored.slice(0, 200).map((row, position) => ({
      id: 10_000 + position,
      owner: row.owner,
      vector: near(row.vector, random, 0.92),
    }));
    put(database, index, added);
    const moved = stored.slice(200, 300).map((row) => ({ ...row, vector: gaussian(random) }));
    put(database, index, moved);
    const removed = stored.slice(300, 400).map((row) => row.id);
    database.transaction(() => index.remove(removed))();
    const now = [...stored.slice(0, 200), ...moved, ...stored.slice(400), ...added];
    expect(listedIds(database)).toEqual(now.map((row) => row.id).sort((a, b) => a - b));
    expect(misses(index, now, 60, 16)).toEqual([]);
  });

  it('search their codes in memory once searched without a write, and give linking the same neighbours as through SQL', () => {
    const path = join(folder, 'same.db');
    const stored = vectorsFor('with outliers', 1200, 41);
    const { database, index } = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    put(database, index, stored);
    build(database, index);
    const throughSql = linkingAnswers(index, stored);
    const { index: inMemory } = openIndex(500, { listSnapshotAfter: 3, path });
    expect(linkingAnswers(inMemory, stored)).toEqual(throughSql);
    expect(throughSql.filter((line) => line.includes(',')).length).toBeGreaterThan(300);
    expect(misses(inMemory, stored, 30, 42)).toEqual([]);
  });

  it('keep the codes held in memory up to date when vectors are put or removed through this connection, and drop them for another', () => {
    const path = join(folder, 'writes.db');
    const stored = vectorsFor('unclustered', 1000, 43);
    const { database, index } = openIndex(500, { listSnapshotAfter: 0, path });
    put(database, index, stored);
    build(database, index);
    expect(misses(index, stored, 10, 44)).toEqual([]);
    const random = createSeededRandom(45);
    // Through this connection: new neighbours, new vectors for old memories, forgotten memories.
    const added = stored.slice(0, 100).map((row, position) => ({
      id: 10_000 + position,
      owner: row.owner,
      vector: near(row.vector, random, 0.92),
    }));
    put(database, index, added);
    const moved = stored.slice(100, 150).map((row) => ({ ...row, vector: gaussian(random) }));
    put(database, index, moved);
    database.transaction(() => index.remove(stored.slice(150, 200).map((row) => row.id)))();
    let now = [...stored.slice(0, 100), ...moved, ...stored.slice(200), ...added];
    expect(misses(index, now, 30, 46)).toEqual([]);
    // Through another connection to the same file.
    const { database: other, index: otherIndex } = openIndex(500, {
      listSnapshotAfter: Number.POSITIVE_INFINITY,
      path,
    });
    const later = now.slice(0, 100).map((row, position) => ({
      id: 20_000 + position,
      owner: row.owner,
      vector: near(row.vector, random, 0.95),
    }));
    put(other, otherIndex, later);
    now = [...now, ...later];
    expect(misses(index, now, 30, 47)).toEqual([]);
  });

  it('read no codes into memory inside a transaction that wrote to the lists, which may yet be rolled back', () => {
    const stored = vectorsFor('clustered', 1000, 51);
    const { database, index } = openIndex(500, { listSnapshotAfter: 0 });
    put(database, index, stored);
    build(database, index);
    const [first, second] = stored;
    if (!first || !second) throw new Error('no vectors');
    const before = index.searchNear(first.vector, 'm', null, LIMIT, MIN_SCORE).map((hit) => hit.id);
    expect(before).toContain(second.id);
    const random = createSeededRandom(52);
    expect(() =>
      database.transaction(() => {
        index.put(second.id, second.owner, { model: 'm', vector: gaussian(random) });
        for (let search = 0; search < 40; search++) index.searchNear(first.vector, 'm', null, LIMIT, MIN_SCORE);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(index.searchNear(first.vector, 'm', null, LIMIT, MIN_SCORE).map((hit) => hit.id)).toEqual(before);
    expect(misses(index, stored, 20, 53)).toEqual([]);
  });

  it('are trained again once the store holds four times the vectors they were trained on', () => {
    const stored = vectorsFor('clustered', 500, 17);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    build(database, index);
    expect(listState(database)?.generation).toBe(1);
    const more = vectorsFor('clustered', 1499, 18, 2000);
    put(database, index, more);
    expect(build(database, index)).toBe(0);
    const last = vectorsFor('clustered', 1, 19, 9000);
    put(database, index, last);
    expect(build(database, index)).toBeGreaterThan(0);
    expect(listState(database)).toMatchObject({ generation: 2, watermark: null });
    const all = [...stored, ...more, ...last];
    expect(database.prepare<[], number>('SELECT lists FROM vector_list_state').pluck().get()).toBe(
      database.prepare<[], number>('SELECT count(*) FROM vector_lists').pluck().get(),
    );
    expect(listedIds(database)).toEqual(all.map((row) => row.id));
    expect(misses(index, all, 30, 20)).toEqual([]);
  });

  it('are not built for a store smaller than the minimum, and are dropped when the model changes', () => {
    const stored = vectorsFor('clustered', 450, 22);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    expect(build(database, index)).toBe(0);
    expect(listState(database)).toBeUndefined();
    put(database, index, vectorsFor('clustered', 100, 23, 5000));
    expect(build(database, index)).toBeGreaterThan(0);
    const built = listState(database)?.generation ?? 0;
    index.configure({ model: 'other', dimensions: DIMENSIONS });
    // No lists, and the generation kept: another connection's centroids cached by it are never taken again.
    expect(listState(database)).toEqual({ generation: built, maintained: 0, watermark: null, training_steps: null });
    expect(
      database.prepare("SELECT name FROM sqlite_master WHERE name = 'memory_vector_list_bits'").get(),
    ).toBeUndefined();
    expect(index.searchNear(stored[0]?.vector ?? new Float32Array(), 'other', null, LIMIT, MIN_SCORE)).toEqual([]);
  });
});

/** The `limit` stored vectors of the scope nearest `query` by exact cosine, best first. */
function exactTop(stored: readonly Stored[], query: Float32Array, owners: readonly string[] | null, limit: number) {
  return stored
    .filter((row) => owners === null || owners.includes(row.owner))
    .map((row) => ({ id: row.id, score: cosine(query, row.vector) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, limit)
    .map((hit) => hit.id);
}

/** Recall@`limit` of `search` against exact search, over queries near stored vectors, for three viewers. */
function topRecall(index: SqliteVectorIndex, stored: readonly Stored[], queries: number, seed: number, limit = 10) {
  const random = createSeededRandom(seed);
  let share = 0;
  let counted = 0;
  for (let query = 0; query < queries; query++) {
    const base = stored[random.below(stored.length)];
    if (!base) continue;
    const vector = near(base.vector, random, 0.8);
    for (const owners of [null, ['global', 'user:a'], ['user:b']]) {
      const expected = exactTop(stored, vector, owners, limit);
      const found = index.search(vector, 'm', owners, limit).map((hit) => hit.id);
      share += found.filter((id) => expected.includes(id)).length / expected.length;
      counted++;
    }
  }
  return share / counted;
}

describe("recall's top-k search through the inverted lists", { timeout: 180_000 }, () => {
  it('keeps the scope filter inside each KNN: 1,000 closer vectors of other users around a visible memory do not hide it', () => {
    const stored = vectorsFor('clustered', 1500, 40);
    const path = join(folder, 'top-scope.db');
    const { database, index } = openIndex(500, { path });
    put(database, index, stored);
    const random = createSeededRandom(41);
    const query = near(centres[3] ?? new Float32Array(DIMENSIONS), random, 0.6);
    // 1,000 vectors of other users closer to the query than anything the viewer may see.
    const others = Array.from({ length: 1000 }, (_, position) => ({
      id: 10_000 + position,
      owner: `user:neighbour-${position}`,
      vector: near(query, random, 0.95),
    }));
    const mine = { id: 20_000, owner: 'user:me', vector: near(query, random, 0.7) };
    put(database, index, [...others, mine]);
    expect(build(database, index)).toBeGreaterThan(0);
    expect(listState(database)).toMatchObject({ maintained: 1, watermark: null });
    const visible = [...stored.filter((row) => row.owner === 'global'), mine];
    const hits = index.search(query, 'm', ['global', 'user:me'], 10);
    expect(hits.map((hit) => hit.id)).toEqual(exactTop(visible, query, null, 10));
    expect(hits[0]?.id).toBe(mine.id);
    // A viewer of one of the others gets its own first, and none of the other 999.
    const seven = index.search(query, 'm', ['user:neighbour-7'], 10);
    expect(seven.map((hit) => hit.id)).toEqual([10_007]);
    // The same on the codes in memory, 10 of the 40 candidates re-ranked by their estimates: only visible ones.
    const inMemory = openIndex(500, { path, listSnapshotAfter: 0, rerank: 10 }).index;
    const few = inMemory.search(query, 'm', ['global', 'user:me'], 10);
    expect(few[0]?.id).toBe(mine.id);
    expect(few).toHaveLength(10);
    const ids = new Set(visible.map((row) => row.id));
    expect(few.every((hit) => ids.has(hit.id))).toBe(true);
    expect(inMemory.search(query, 'm', ['user:neighbour-7'], 10).map((hit) => hit.id)).toEqual([10_007]);
  });

  it('re-ranks only the candidates of best estimate from the codes in memory, at least as many as asked for', () => {
    // A query with one large value: a vector of its exact signs but even magnitudes has the best estimate
    // (and Hamming distance 0) but a cosine of 0.43; the query with 20 small values' signs flipped is
    // 0.96 close but estimated lower.
    const random = createSeededRandom(80);
    const query = Float32Array.from({ length: DIMENSIONS }, (_, index) =>
      index === 0 ? 30 : random.next() < 0.5 ? -1 : 1,
    );
    const signs = { id: 90_001, owner: 'global', vector: query.map((value) => Math.sign(value)) };
    const flipped = {
      id: 90_002,
      owner: 'global',
      vector: query.map((value, index) => (index > 0 && index <= 20 ? -value : value)),
    };
    expect(cosine(query, flipped.vector)).toBeGreaterThan(cosine(query, signs.vector) + 0.5);
    const stored = [...vectorsFor('unclustered', 600, 81), signs, flipped];
    const path = join(folder, 'rerank.db');
    const built = openIndex(500, { path });
    put(built.database, built.index, stored);
    build(built.database, built.index);
    const search = (tuning: { listSnapshotAfter?: number; rerank?: number }, limit: number) =>
      openIndex(500, { path, listProbes: listCount(stored.length), ...tuning })
        .index.search(query, 'm', null, limit)
        .map((hit) => hit.id);
    // The Hamming candidates hold both; all re-ranked exactly, the closer comes first.
    expect(search({ listSnapshotAfter: Number.POSITIVE_INFINITY, rerank: 1 }, 1)).toEqual([flipped.id]);
    expect(search({ listSnapshotAfter: 0 }, 1)).toEqual([flipped.id]);
    // One re-ranked: the one of best estimate, though the other is closer.
    expect(search({ listSnapshotAfter: 0, rerank: 1 }, 1)).toEqual([signs.id]);
    // Never fewer than asked for: both, in exact order.
    expect(search({ listSnapshotAfter: 0, rerank: 1 }, 2)).toEqual([flipped.id, signs.id]);
  });

  it('estimates each code from its band, its centroid and its signs as a brute force does', () => {
    const random = createSeededRandom(82);
    for (const dimensions of [128, 100, 768]) {
      const words = Math.ceil(dimensions / 32);
      const query = scaled(gaussian(random, dimensions), 1);
      const centroids = new Float32Array(3 * dimensions);
      for (let list = 0; list < 3; list++) centroids.set(scaled(gaussian(random, dimensions), 1), list * dimensions);
      const codes = new Uint32Array(words * 20);
      const bytes = new Uint8Array(codes.buffer);
      for (let member = 0; member < 20; member++) {
        // Random bits within the dimensions; the padding past them stays zero, as in the stored codes.
        for (let bit = 0; bit < dimensions; bit++) {
          if (random.next() < 0.5)
            bytes[member * words * 4 + (bit >> 3)] = (bytes[member * words * 4 + (bit >> 3)] ?? 0) | (1 << (bit & 7));
        }
      }
      // A part of each of the three lists at some band, and the overflow's.
      const parts = [0, 1, 2, 3].map(() => ({ ids: new Float64Array(20), owners: new Float64Array(20), codes }));
      const partitions = [5, BANDS + 40, 2 * BANDS + 120, -1];
      const members = Array.from({ length: 20 }, (_, member) => ({
        part: parts[member % 4] ?? { ids: new Float64Array(20), owners: new Float64Array(20), codes },
        member,
        partition: partitions[member % 4] ?? -1,
      }));
      const estimates = bandEstimates(query, members, words, centroids, 3);
      for (const [index, { member, partition }] of members.entries()) {
        const signs = Array.from({ length: dimensions }, (_, bit) =>
          ((bytes[member * words * 4 + (bit >> 3)] ?? 0) >> (bit & 7)) & 1 ? 1 : -1,
        );
        const signed = (vector: Float32Array) => signs.reduce((sum, sign, bit) => sum + sign * (vector[bit] ?? 0), 0);
        const scale = Math.sqrt(2 / (Math.PI * dimensions));
        let expected = scale * signed(query);
        if (partition >= 0) {
          const list = Math.floor(partition / BANDS);
          const centroid = centroids.subarray(list * dimensions, (list + 1) * dimensions);
          const along = query.reduce((sum, value, at) => sum + value * (centroid[at] ?? 0), 0);
          const angle = (((partition % BANDS) + 0.5) * Math.PI) / 180;
          expected = Math.cos(angle) * along + Math.sin(angle) * scale * (signed(query) - along * signed(centroid));
        }
        expect(estimates[index]).toBeCloseTo(expected, 10);
      }
    }
  });

  it('keeps the wanted codes nearest by Hamming distance, the smaller id first at a tie, as sorting them all does', () => {
    const random = createSeededRandom(87);
    for (const [count, wanted, spread] of [
      [0, 5, 10],
      [3, 5, 10],
      [500, 40, 6],
      [500, 40, 300],
      [800, 515, 60],
      [50, 50, 4],
    ] as const) {
      // Few distances for many codes: ties at the wanted-th distance, ids in no order.
      const within = Array.from({ length: count }, () => ({
        id: random.below(100_000),
        distance: random.below(spread),
      }));
      const sorted = [...within].sort((a, b) => a.distance - b.distance || a.id - b.id).slice(0, wanted);
      expect(nearestWithin(within, wanted)).toEqual(sorted);
    }
  });

  it("computes the query's product with every centroid in WebAssembly as in JavaScript, to the bit", () => {
    const random = createSeededRandom(88);
    const dimensions = 768;
    const count = 37;
    const values = Float32Array.from({ length: count * dimensions }, () => random.normal());
    const query = scaled(gaussian(random, dimensions), 1);
    const products = createDotProducts(values, count, dimensions);
    expect(products).not.toBeNull();
    const inJavaScript = centroidProducts(query, values, count, null);
    expect(centroidProducts(query, values, count, products)).toEqual(inJavaScript);
    for (let list = 0; list < count; list++) {
      const centroid = values.subarray(list * dimensions, (list + 1) * dimensions);
      expect(inJavaScript[list]).toBeCloseTo(
        query.reduce((sum, value, at) => sum + value * (centroid[at] ?? 0), 0),
        5,
      );
    }
  });

  it('finds nearly as many of the exact top 10 re-ranking a few candidates of best estimate as re-ranking them all', () => {
    const stored = vectorsFor('clustered', 2000, 83);
    const path = join(folder, 'rerank-recall.db');
    const all = openIndex(500, { path, listSnapshotAfter: Number.POSITIVE_INFINITY });
    put(all.database, all.index, stored);
    build(all.database, all.index);
    // 40 Hamming candidates for 10 hits (128 sign bits): all 40 re-ranked, or the 24 of best estimate.
    const few = openIndex(500, { path, listSnapshotAfter: 0, rerank: 24 });
    const everyOne = topRecall(all.index, stored, 30, 84);
    expect(topRecall(few.index, stored, 30, 84)).toBeGreaterThanOrEqual(everyOne - 0.03);
  });

  it('orders the Hamming candidates closer to exact search by the estimate than by their Hamming distance', () => {
    const stored = vectorsFor('clustered', 2000, 85);
    const words = DIMENSIONS / 32;
    const codes = new Uint32Array(stored.length * words);
    const bytes = new Uint8Array(codes.buffer);
    for (const [member, row] of stored.entries()) bytes.set(binaryCode(row.vector), member * words * 4);
    const part = { ids: Float64Array.from(stored, (row) => row.id), owners: new Float64Array(stored.length), codes };
    const random = createSeededRandom(86);
    const found = { estimate: 0, hamming: 0 };
    for (let query = 0; query < 40; query++) {
      const vector = near(stored[random.below(stored.length)]?.vector ?? new Float32Array(DIMENSIONS), random, 0.8);
      const exact = new Set(exactTop(stored, vector, null, 10));
      const code = binaryCode(vector);
      const hamming = stored.map((_, member) => {
        let distance = 0;
        for (let byte = 0; byte < words * 4; byte++) {
          let bits = (bytes[member * words * 4 + byte] ?? 0) ^ (code[byte] ?? 0);
          for (; bits !== 0; bits &= bits - 1) distance++;
        }
        return { member, distance };
      });
      // As recall does: the 40 nearest by Hamming distance, then 16 of them by the estimate or by that distance.
      const candidates = hamming.sort((a, b) => a.distance - b.distance || a.member - b.member).slice(0, 40);
      // Of no list (as the overflow's): the signs alone.
      const estimates = bandEstimates(
        scaled(vector, 1),
        candidates.map(({ member }) => ({ part, member, partition: -1 })),
        words,
        new Float32Array(0),
        0,
      );
      const byEstimate = candidates
        .map((candidate, index) => ({ ...candidate, estimate: estimates[index] ?? 0 }))
        .sort((a, b) => b.estimate - a.estimate)
        .slice(0, 16);
      const count = (chosen: ReadonlyArray<{ member: number }>) =>
        chosen.filter(({ member }) => exact.has(stored[member]?.id ?? 0)).length;
      found.estimate += count(byEstimate);
      found.hamming += count(candidates.slice(0, 16));
    }
    expect(found.estimate).toBeGreaterThan(found.hamming);
  });

  it('gives a viewer k memories when the lists it probes hold fewer than k of them (its memories lie elsewhere)', () => {
    const stored = vectorsFor('clustered', 1500, 60);
    // One probe, so that the viewer's list is surely not among those read.
    const { database, index } = openIndex(500, { listProbes: 1 });
    put(database, index, stored);
    const random = createSeededRandom(61);
    const query = near(centres[5] ?? new Float32Array(DIMENSIONS), random, 0.6);
    // 600 memories of one user, all on the far side of the sphere from the query.
    const opposite = query.map((value) => -value);
    const far = Array.from({ length: 600 }, (_, position) => ({
      id: 30_000 + position,
      owner: 'user:far',
      vector: near(opposite, random, 0.98),
    }));
    put(database, index, far);
    expect(build(database, index)).toBeGreaterThan(0);
    const ids = new Set(far.map((row) => row.id));
    const hits = index.search(query, 'm', ['user:far'], 10);
    expect(hits).toHaveLength(10);
    expect(hits.every((hit) => ids.has(hit.id))).toBe(true);
  });

  it('finds as many of the exact top 10 as the bucket scan does, probing a few of the lists, on clustered vectors and with outliers', () => {
    for (const [kind, seed] of [
      ['clustered', 42],
      ['with outliers', 43],
    ] as const) {
      const stored = vectorsFor(kind, 2000, seed);
      const lists = openIndex(500);
      const buckets = openIndex(500, { listProbes: 0 });
      for (const { database, index } of [lists, buckets]) {
        put(database, index, stored);
        build(database, index);
      }
      // 128 sign bits rank 40 candidates coarsely: the bucket scan finds 0.78 to 0.85 of the exact top 10 here.
      const scanned = topRecall(buckets.index, stored, 30, seed + 100);
      expect(topRecall(lists.index, stored, 30, seed + 100), kind).toBeGreaterThanOrEqual(scanned - 0.02);
    }
  });

  it('finds vectors put after the lists are built, not those removed, and vectors put again where they now are', () => {
    const stored = vectorsFor('clustered', 1500, 44);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    build(database, index);
    const random = createSeededRandom(45);
    const added = Array.from({ length: 50 }, (_, position) => ({
      id: 30_000 + position,
      owner: OWNERS[position % OWNERS.length] ?? 'global',
      vector: near(centres[position % centres.length] ?? new Float32Array(DIMENSIONS), random, 0.6),
    }));
    put(database, index, added);
    const moved = stored
      .slice(0, 50)
      .map((row) => ({ ...row, vector: near(added[row.id % 50]?.vector ?? row.vector, random, 0.9) }));
    put(database, index, moved);
    const removed = stored.slice(50, 100);
    database.transaction(() => index.remove(removed.map((row) => row.id)))();
    for (const row of [...added, ...moved]) {
      expect(index.search(row.vector, 'm', [row.owner], 1)[0]?.id).toBe(row.id);
    }
    for (const row of removed) {
      expect(index.search(row.vector, 'm', null, 1)[0]?.id).not.toBe(row.id);
    }
    const now = [...moved, ...stored.slice(100), ...added];
    const buckets = openIndex(500, { listProbes: 0 });
    put(buckets.database, buckets.index, now);
    expect(topRecall(index, now, 20, 46)).toBeGreaterThanOrEqual(topRecall(buckets.index, now, 20, 46) - 0.02);
  });

  it('gives the same hits and scores from the codes in memory as through SQL, for three viewers and two limits', () => {
    const path = join(folder, 'top-same.db');
    const stored = vectorsFor('with outliers', 2000, 70);
    const throughSql = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    put(throughSql.database, throughSql.index, stored);
    build(throughSql.database, throughSql.index);
    // Every candidate re-ranked (200 at limit 50, fewer than 256), as through SQL.
    const inMemory = openIndex(500, { listSnapshotAfter: 0, path, residualRerank: 256 });
    const random = createSeededRandom(71);
    let compared = 0;
    for (let query = 0; query < 40; query++) {
      const base = stored[random.below(stored.length)];
      if (!base) continue;
      const vector = near(base.vector, random, 0.8);
      for (const owners of [null, ['global', 'user:a'], ['user:b']]) {
        // Twice each: the second search is bounded by the Hamming distances of the first ones.
        for (const limit of [10, 50, 10, 50]) {
          expect(inMemory.index.search(vector, 'm', owners, limit)).toEqual(
            throughSql.index.search(vector, 'm', owners, limit),
          );
          compared++;
        }
      }
    }
    expect(compared).toBe(480);
  });

  it('finds in memory (in WebAssembly for up to two owners) every code within the bound the statements find, at the same distances', () => {
    const path = join(folder, 'top-scan.db');
    const stored = vectorsFor('with outliers', 2000, 74);
    const built = openIndex(500, { path });
    put(built.database, built.index, stored);
    build(built.database, built.index);
    const ownerId = (owner: string) =>
      built.database.prepare<[string], number>('SELECT id FROM vector_owners WHERE owner = ?').pluck().get(owner) ?? -1;
    const read = () => new Map<number, Float32Array>();
    const inMemory = createSqliteVectorLists(built.database, { snapshotAfter: 0, read });
    const throughSql = createSqliteVectorLists(built.database, { snapshotAfter: Number.POSITIVE_INFINITY, read });
    const random = createSeededRandom(75);
    const viewers = [null, ['global'], ['global', 'user:a'], ['global', 'user:a', 'room:c']].map((owners) =>
      owners === null ? null : owners.map(ownerId),
    );
    let found = 0;
    for (let query = 0; query < 20; query++) {
      const vector = near(stored[random.below(stored.length)]?.vector ?? centres[0] ?? new Float32Array(), random, 0.8);
      const code = binaryCode(vector);
      for (const owners of viewers) {
        // More wanted than any list holds: each statement keeps every code within the bound, as the scan does.
        const answer = (lists: typeof inMemory) =>
          lists.nearest(vector, code, owners, 4000, 4, 50).map(({ id, distance }) => ({ id, distance }));
        const expected = answer(throughSql);
        expect(answer(inMemory)).toEqual(expected);
        found += expected.length;
      }
    }
    expect(found).toBeGreaterThan(1000);
    // The codes were searched in memory, with estimates.
    const vector = stored[0]?.vector ?? new Float32Array(DIMENSIONS);
    expect(inMemory.nearest(vector, binaryCode(vector), null, 10, 4, null)[0]?.estimate).toBeTypeOf('number');
  });

  it("keeps the codes it holds through its own writes, searching what it wrote as the file holds it, another owner's included", () => {
    const path = join(folder, 'top-own-writes.db');
    const stored = vectorsFor('with outliers', 2000, 76);
    const built = openIndex(500, { path });
    put(built.database, built.index, stored);
    build(built.database, built.index);
    // The codes read into memory at the first search, and kept through the writes below; another connection keeps
    // its own through them too, brought up to date from the record of changed memories (ADR 27). Both answer as a
    // connection opened after each write, which reads the codes as the file then holds them.
    const inMemory = openIndex(500, { listSnapshotAfter: 0, path });
    const fresh = openIndex(500, { listSnapshotAfter: 0, path });
    const reads = snapshotReads(inMemory.database);
    const freshReads = snapshotReads(fresh.database);
    const random = createSeededRandom(77);
    const viewers = [null, ['global', 'user:a'], ['user:b'], ['room:c']];
    const same = (vector: Float32Array) => {
      const reference = openIndex(500, { listSnapshotAfter: 0, path });
      for (const owners of viewers) {
        for (const limit of [10, 50]) {
          const expected = reference.index.search(vector, 'm', owners, limit);
          expect(inMemory.index.search(vector, 'm', owners, limit)).toEqual(expected);
          expect(fresh.index.search(vector, 'm', owners, limit)).toEqual(expected);
        }
      }
      reference.database.close();
    };
    same(stored[0]?.vector ?? new Float32Array(DIMENSIONS));
    expect(reads()).toBe(1);
    const current = new Map(stored.map((row) => [row.id, row]));
    for (let write = 0; write < 80; write++) {
      const base = stored[random.below(stored.length)];
      if (!base) continue;
      const kind = write % 4;
      if (kind === 0) {
        // A new memory beside an old one, under another owner.
        const row = {
          id: 40_000 + write,
          owner: OWNERS[(OWNERS.indexOf(base.owner) + 2) % OWNERS.length] ?? 'user:a',
          vector: near(base.vector, random, 0.97),
        };
        put(inMemory.database, inMemory.index, [row]);
        current.set(row.id, row);
      } else if (kind === 1 && current.has(base.id)) {
        // An old memory's vector moved elsewhere.
        const row = { ...base, vector: near(centres[random.below(centres.length)] ?? base.vector, random, 0.6) };
        put(inMemory.database, inMemory.index, [row]);
        current.set(row.id, row);
      } else if (kind === 2 && current.has(base.id)) {
        // The same vector under another owner: the old owner's viewers must no longer find it.
        const row = { ...base, owner: base.owner === 'user:b' ? 'room:c' : 'user:b' };
        put(inMemory.database, inMemory.index, [row]);
        current.set(row.id, row);
        const formerViewers = viewers.filter((owners) => owners !== null && !owners.includes(row.owner));
        for (const owners of formerViewers) {
          expect(inMemory.index.search(row.vector, 'm', owners, 50).map((hit) => hit.id)).not.toContain(row.id);
        }
        expect(inMemory.index.search(row.vector, 'm', [row.owner], 1)[0]?.id).toBe(row.id);
      } else if (current.has(base.id)) {
        inMemory.database.transaction(() => inMemory.index.remove([base.id]))();
        current.delete(base.id);
        expect(inMemory.index.search(base.vector, 'm', null, 50).map((hit) => hit.id)).not.toContain(base.id);
      }
      same(near(base.vector, random, 0.9));
    }
    // Every search of both searched the codes read at the first one, and the rows written since.
    expect(reads()).toBe(1);
    expect(freshReads()).toBe(1);
    expect(inMemory.index.search(stored[1]?.vector ?? new Float32Array(), 'm', null, 1)[0]?.score).toBeGreaterThan(0);
  });

  it('reads its codes again once it wrote more vectors than it keeps beside them, and after a write by another connection', () => {
    const path = join(folder, 'top-many-writes.db');
    const stored = vectorsFor('clustered', 1000, 78);
    const built = openIndex(500, { path });
    put(built.database, built.index, stored);
    build(built.database, built.index);
    const { database, index } = openIndex(500, { listSnapshotAfter: 0, path });
    const reads = snapshotReads(database);
    const random = createSeededRandom(79);
    const query = stored[0]?.vector ?? new Float32Array(DIMENSIONS);
    index.search(query, 'm', null, 10);
    expect(reads()).toBe(1);
    // 1,024 vectors written one at a time, each its own transaction, are kept beside the codes; the next one is not.
    const added = Array.from({ length: 1_025 }, (_, position) => ({
      id: 50_000 + position,
      owner: 'user:a',
      vector: near(stored[position % stored.length]?.vector ?? query, random, 0.95),
    }));
    for (const [position, row] of added.entries()) {
      put(database, index, [row]);
      if (position % 256 === 0 || position >= 1_023) index.search(row.vector, 'm', ['user:a'], 10);
      expect(reads()).toBe(position < 1_024 ? 1 : 2);
    }
    for (const row of added.slice(-20)) expect(index.search(row.vector, 'm', ['user:a'], 1)[0]?.id).toBe(row.id);
    // Another connection's commit of a vector: brought in from the record of changed memories (ADR 27), not read again;
    // of more vectors than are kept beside the codes, read again at once.
    put(built.database, built.index, [{ id: 60_000, owner: 'global', vector: near(query, random, 0.99) }]);
    expect(index.search(query, 'm', null, 10).map((hit) => hit.id)).toContain(60_000);
    expect(reads()).toBe(2);
    const many = Array.from({ length: 1_025 }, (_, position) => ({
      id: 80_000 + position,
      owner: 'user:c',
      vector: near(stored[position % stored.length]?.vector ?? query, random, 0.95),
    }));
    put(built.database, built.index, many);
    expect(index.search(many[7]?.vector ?? query, 'm', ['user:c'], 1)[0]?.id).toBe(many[7]?.id);
    expect(reads()).toBe(3);
    // Searches inside the transaction that wrote: with a few written vectors, beside the codes; with more than 64,
    // through SQL (each search there reads the written rows again), and the codes read again after it.
    const inside = (count: number, first: number) =>
      database.transaction(() => {
        const rows = Array.from({ length: count }, (_, position) => ({
          id: first + position,
          owner: 'user:b',
          vector: near(stored[position]?.vector ?? query, random, 0.97),
        }));
        for (const row of rows) index.put(row.id, row.owner, { model: 'm', vector: row.vector });
        for (const row of rows.slice(0, 5)) expect(index.search(row.vector, 'm', null, 1)[0]?.id).toBe(row.id);
      })();
    inside(10, 70_000);
    expect(index.search(query, 'm', null, 10)).toHaveLength(10);
    expect(reads()).toBe(3);
    inside(65, 71_000);
    expect(index.search(query, 'm', null, 10)).toHaveLength(10);
    expect(reads()).toBe(4);
  });

  it("gives the same hits and scores from the codes in memory once linking's first pass read them by id", () => {
    const path = join(folder, 'top-same-after-linking.db');
    const stored = vectorsFor('with outliers', 2000, 72);
    const throughSql = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    put(throughSql.database, throughSql.index, stored);
    build(throughSql.database, throughSql.index);
    const inMemory = openIndex(500, { listSnapshotAfter: 0, path });
    const random = createSeededRandom(73);
    const queries = Array.from({ length: 30 }, () => stored[random.below(stored.length)]).flatMap((base) =>
      base ? [near(base.vector, random, 0.8)] : [],
    );
    const answers = (index: SqliteVectorIndex) =>
      queries.flatMap((vector) =>
        [null, ['global', 'user:a'], ['user:b']].map((owners) => index.search(vector, 'm', owners, 10)),
      );
    const before = answers(inMemory.index);
    // Linking's first pass: its searches read the codes again sorted by memory id, which recall then searches.
    const older = inMemory.index.searchNearOlder(
      stored.slice(0, 200).map((row) => ({
        vector: row.vector,
        owners: row.owner === 'global' ? null : ['global', row.owner],
        olderThan: row.id,
      })),
      'm',
      LIMIT,
      MIN_SCORE,
    );
    expect(older.some((hits) => hits.length > 0)).toBe(true);
    expect(answers(inMemory.index)).toEqual(before);
    expect(before).toEqual(answers(throughSql.index));
  });

  it("sorts the codes in memory by id where they are for linking's first pass, its answers and recall's as before", () => {
    const path = join(folder, 'sorted-in-place.db');
    const stored = vectorsFor('with outliers', 1600, 91);
    const throughSql = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    put(throughSql.database, throughSql.index, stored.slice(0, 800));
    build(throughSql.database, throughSql.index);
    // Put after the build from the largest id down: each list's partition holds them out of id order.
    put(throughSql.database, throughSql.index, stored.slice(800).reverse());
    const inMemory = openIndex(500, { listSnapshotAfter: 0, path });
    const random = createSeededRandom(92);
    const queries = Array.from({ length: 30 }, () => stored[random.below(stored.length)]).flatMap((base) =>
      base ? [near(base.vector, random, 0.8)] : [],
    );
    const answers = (index: SqliteVectorIndex) =>
      queries.flatMap((vector) =>
        [null, ['global', 'user:a'], ['user:b']].map((owners) => index.search(vector, 'm', owners, 10)),
      );
    const searches = stored.map((row) => ({
      vector: row.vector,
      owners: row.owner === 'global' ? null : ['global', row.owner],
      olderThan: row.id,
    }));
    const lines = (found: ReturnType<SqliteVectorIndex['searchNearOlder']>) =>
      found.map((hits) => hits.map((hit) => `${hit.id}:${hit.score.toFixed(6)}`).join(','));
    // Recall first (its estimates read beside the codes), then linking's first pass sorts them, then recall again.
    const before = answers(inMemory.index);
    const older = lines(inMemory.index.searchNearOlder(searches, 'm', LIMIT, MIN_SCORE));
    const expected = searches.map((search) =>
      throughSql.index
        .searchNear(search.vector, 'm', search.owners, LIMIT, MIN_SCORE)
        .filter((hit) => hit.id < search.olderThan)
        .map((hit) => `${hit.id}:${hit.score.toFixed(6)}`)
        .join(','),
    );
    expect(older).toEqual(expected);
    expect(older.slice(800).filter((line) => line.length > 0).length).toBeGreaterThan(100);
    expect(answers(inMemory.index)).toEqual(before);
  });

  it('tells the part of each memory whether its ids are dense or sparse, the overflow partition too', () => {
    const part = (ids: number[]) => ({
      ids: Float64Array.from(ids),
      owners: new Float64Array(ids.length),
      codes: new Uint32Array(ids.length),
    });
    for (const ids of [
      [
        [3, 5],
        [4, 9],
        [7, 8],
      ],
      [
        [3, 5],
        [4, 2 ** 40],
        [7, 8],
      ],
    ]) {
      const partOf = createPartOf(
        new Map([
          [-1, part(ids[0] ?? [])],
          [0, part(ids[1] ?? [])],
          [BANDS + 4, part(ids[2] ?? [])],
        ]),
      );
      expect([3, 5, ...(ids[1] ?? []), 7, 8].map(partOf)).toEqual([-1, -1, 0, 0, BANDS + 4, BANDS + 4]);
      expect([1, 2, 6, 10, 3.5, -1, 2 ** 41].map(partOf)).toEqual(Array(7).fill(undefined));
    }
  });

  it('sees lists trained again by another connection to the same file, though it read them before', () => {
    const path = join(folder, 'top-other.db');
    const stored = vectorsFor('clustered', 1500, 72);
    // Through SQL, so that the lists' rows are what this connection keeps between searches.
    const { database, index } = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    put(database, index, stored);
    build(database, index);
    const found = (rows: readonly Stored[]) =>
      rows.filter((row) => index.search(row.vector, 'm', null, 1)[0]?.id === row.id).length;
    expect(found(stored.slice(0, 200))).toBe(200);
    // Another connection empties the index (another model), puts other vectors back and trains new lists.
    const other = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    other.index.configure({ model: 'm2', dimensions: DIMENSIONS });
    other.index.configure({ model: 'm', dimensions: DIMENSIONS });
    const now = vectorsFor('with outliers', 1500, 73);
    put(other.database, other.index, now);
    build(other.database, other.index);
    expect(found(now.slice(0, 200))).toBe(200);
  });

  it('scans the owner buckets while a training assigns the vectors, and finds every vector at every step', () => {
    const stored = vectorsFor('with outliers', 1200, 47);
    const { database, index } = openIndex(500);
    put(database, index, stored);
    let steps = 0;
    const random = createSeededRandom(48);
    while (database.transaction(() => index.indexStep()).immediate()) {
      steps++;
      if (steps % 7 === 0) {
        const extra = vectorsFor('clustered', 3, 200 + steps, 40_000 + steps * 3);
        put(database, index, extra);
        stored.push(...extra);
      }
      if (steps % 5 === 0) {
        for (let probe = 0; probe < 5; probe++) {
          const row = stored[random.below(stored.length)];
          if (row) expect(index.search(row.vector, 'm', [row.owner], 1)[0]?.id, `after step ${steps}`).toBe(row.id);
        }
      }
    }
    const buckets = openIndex(500, { listProbes: 0 });
    put(buckets.database, buckets.index, stored);
    expect(topRecall(index, stored, 20, 49)).toBeGreaterThanOrEqual(topRecall(buckets.index, stored, 20, 49) - 0.02);
  });
});

describe("the codes in memory through this connection's own writes (attacked, session 13)", {
  timeout: 180_000,
}, () => {
  /** A built store at `path` (2,000 clustered vectors with outliers), and a connection that searches it in memory at once. */
  function opened(name: string, seed: number) {
    const path = join(folder, name);
    const stored = vectorsFor('with outliers', 2000, seed);
    const built = openIndex(500, { path });
    put(built.database, built.index, stored);
    build(built.database, built.index);
    const searcher = openIndex(500, { listSnapshotAfter: 0, path });
    return { path, stored, built, searcher, reads: snapshotReads(searcher.database) };
  }
  const otherOwner = (owner: string) => (owner === 'user:b' ? 'room:c' : 'user:b');
  const ids = (hits: readonly { id: number }[]) => hits.map((hit) => hit.id);

  it('drops codes read inside a transaction of its own at the next commit of another connection, whose record of changes may reuse the numbers a rollback gave back', () => {
    const { stored, path, searcher, reads } = opened('attack-rollback-record.db', 97);
    const { database, index } = searcher;
    const other = openIndex(500, { listSnapshotAfter: Number.POSITIVE_INFINITY, path });
    const moved = stored.find((row) => row.owner === 'user:b') as Stored;
    // Inside a transaction of this connection's that writes a memory's entry in the record (as a memory's insert
    // does) and then rolls back, the codes are read; the numbers of its entries are given again to the next writer.
    expect(() =>
      database.transaction(() => {
        database.prepare('INSERT INTO recall_changes (memory_id) VALUES (?)').run(999_999);
        expect(index.search(moved.vector, 'm', ['global', 'user:b'], 1)[0]?.id).toBe(moved.id);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(reads()).toBe(1);
    // Another connection writes a new vector (its entry takes the number the rollback gave back), then moves the old
    // one to another owner: the new one is found, and the old one by its new owner's viewers only.
    put(other.database, other.index, [{ id: 90_000, owner: 'user:b', vector: moved.vector }]);
    expect(ids(index.search(moved.vector, 'm', ['global', 'user:b'], 2)).sort()).toEqual([moved.id, 90_000].sort());
    put(other.database, other.index, [{ ...moved, owner: 'room:c' }]);
    expect(ids(index.search(moved.vector, 'm', ['global', 'user:b'], 50))).not.toContain(moved.id);
    expect(index.search(moved.vector, 'm', ['room:c'], 1)[0]?.id).toBe(moved.id);
  });

  it("never keeps codes read inside a transaction that rolls back, when linking's first pass read them there", () => {
    const { stored, searcher, reads } = opened('attack-rollback-linking.db', 90);
    const { database, index } = searcher;
    // A memory of user:b moved to user:a, one forgotten, then linking's first pass, then a failure: the viewers of
    // user:a must not find the first after the rollback (more than 500 visible: searched through the lists).
    const moved = stored.find((row) => row.owner === 'user:b') as Stored;
    const removed = stored[20] as Stored;
    const [formerViewer, otherViewer] = [
      ['global', 'user:b'],
      ['global', 'user:a'],
    ];
    index.search(moved.vector, 'm', null, 10);
    expect(reads()).toBe(1);
    expect(() =>
      database.transaction(() => {
        index.put(moved.id, 'user:a', { model: 'm', vector: moved.vector });
        index.remove([removed.id]);
        index.searchNearOlder([{ vector: moved.vector, owners: null, olderThan: moved.id + 1 }], 'm', LIMIT, MIN_SCORE);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    // The file holds both as they were: the moved one under its owner only, the removed one findable.
    expect(ids(index.search(moved.vector, 'm', otherViewer, 50))).not.toContain(moved.id);
    expect(ids(index.searchNear(moved.vector, 'm', otherViewer, 50, 0.5))).not.toContain(moved.id);
    expect(index.search(moved.vector, 'm', formerViewer, 1)[0]?.id).toBe(moved.id);
    expect(index.search(removed.vector, 'm', null, 1)[0]?.id).toBe(removed.id);
    expect(ids(index.searchNear(removed.vector, 'm', null, 1, MIN_SCORE))).toEqual([removed.id]);
  });

  it('searches what the file holds inside and after a batch that fails mid-way, the same id written many times', () => {
    const { stored, path, searcher, reads } = opened('attack-rollback-batch.db', 91);
    const { database, index } = searcher;
    const fresh = openIndex(500, { listSnapshotAfter: 0, path });
    const random = createSeededRandom(92);
    const viewers = [null, ['global', 'user:a'], ['user:b'], ['room:c']];
    const same = (vector: Float32Array) => {
      for (const owners of viewers) {
        expect(index.search(vector, 'm', owners, 20)).toEqual(fresh.index.search(vector, 'm', owners, 20));
        expect(index.searchNear(vector, 'm', owners, 20, 0.8)).toEqual(
          fresh.index.searchNear(vector, 'm', owners, 20, 0.8),
        );
      }
    };
    const target = stored[30] as Stored;
    same(target.vector);
    // Committed: the same memory moved and given back many times, its last write under another owner.
    for (let time = 0; time < 50; time++) {
      const owner = time % 2 === 0 ? otherOwner(target.owner) : target.owner;
      const vector = time === 49 ? target.vector : near(target.vector, random, 0.7);
      put(database, index, [{ id: target.id, owner: time === 49 ? otherOwner(target.owner) : owner, vector }]);
    }
    same(target.vector);
    expect(ids(index.search(target.vector, 'm', [target.owner], 50))).not.toContain(target.id);
    // A batch that fails: new memories, a move back, a removal, searched inside (they are found there), then rolled back.
    const removed = stored[40] as Stored;
    const added = { id: 70_000, owner: 'user:a', vector: near(removed.vector, random, 0.99) };
    expect(() =>
      database.transaction(() => {
        index.put(added.id, added.owner, { model: 'm', vector: added.vector });
        index.put(target.id, target.owner, { model: 'm', vector: target.vector });
        index.remove([removed.id]);
        expect(index.search(added.vector, 'm', ['user:a'], 1)[0]?.id).toBe(added.id);
        expect(ids(index.search(target.vector, 'm', [target.owner], 5))).toContain(target.id);
        expect(ids(index.search(removed.vector, 'm', null, 50))).not.toContain(removed.id);
        expect(ids(index.searchNear(added.vector, 'm', ['user:a'], 5, 0.9))).toContain(added.id);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(ids(index.search(added.vector, 'm', null, 50))).not.toContain(added.id);
    expect(ids(index.search(target.vector, 'm', [target.owner], 50))).not.toContain(target.id);
    expect(index.search(removed.vector, 'm', null, 1)[0]?.id).toBe(removed.id);
    same(target.vector);
    same(removed.vector);
    expect(reads()).toBe(1);
  });

  it('reads the codes again when the writes kept beside them cross their limit inside a transaction that rolls back', () => {
    const { stored, searcher, reads } = opened('attack-limit-rollback.db', 93);
    const { database, index } = searcher;
    const random = createSeededRandom(94);
    const query = (stored[0] as Stored).vector;
    index.search(query, 'm', null, 10);
    // 1,024 distinct vectors kept beside the codes (committed), then one more in a transaction that fails.
    for (let at = 0; at < 1_024; at += 256) {
      put(
        database,
        index,
        stored.slice(at, at + 256).map((row) => ({ ...row, vector: near(row.vector, random, 0.999) })),
      );
      index.search(query, 'm', null, 10);
    }
    expect(reads()).toBe(1);
    const last = stored[1_500] as Stored;
    expect(() =>
      database.transaction(() => {
        index.put(last.id, otherOwner(last.owner), { model: 'm', vector: last.vector });
        index.remove([(stored[1_600] as Stored).id]);
        // Searches inside: through SQL (the codes are not read in a transaction that wrote).
        expect(ids(index.search(last.vector, 'm', [otherOwner(last.owner)], 5))).toContain(last.id);
        index.searchNearOlder([{ vector: last.vector, owners: null, olderThan: 5_000 }], 'm', LIMIT, MIN_SCORE);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(ids(index.search(last.vector, 'm', [otherOwner(last.owner)], 50))).not.toContain(last.id);
    expect(index.search(last.vector, 'm', [last.owner], 1)[0]?.id).toBe(last.id);
    expect(index.search((stored[1_600] as Stored).vector, 'm', null, 1)[0]?.id).toBe((stored[1_600] as Stored).id);
    expect(reads()).toBe(2);
  });

  it('keeps nothing it wrote beside the codes through a model change and the training and assignment after it', () => {
    const { stored, path, searcher, reads } = opened('attack-model-change.db', 97);
    const { database, index } = searcher;
    const fresh = openIndex(500, { listSnapshotAfter: 0, path });
    const random = createSeededRandom(98);
    // A memory of user:b moved to user:a (kept beside the codes), then the model changes: every vector goes, the
    // same vectors come back under the new model with their first owners, and the lists are trained again.
    const moved = stored.find((row) => row.owner === 'user:b') as Stored;
    index.search(moved.vector, 'm', null, 10);
    put(database, index, [{ ...moved, owner: 'user:a' }]);
    expect(ids(index.search(moved.vector, 'm', ['global', 'user:a'], 1))).toEqual([moved.id]);
    expect(reads()).toBe(1);
    index.configure({ model: 'm2', dimensions: DIMENSIONS });
    database.transaction(() => {
      for (const row of stored) index.put(row.id, row.owner, { model: 'm2', vector: row.vector });
    })();
    build(database, index);
    for (const viewer of [null, ['global', 'user:a'], ['global', 'user:b']]) {
      for (const row of [moved, ...Array.from({ length: 10 }, () => stored[random.below(stored.length)] as Stored)]) {
        expect(index.search(row.vector, 'm2', viewer, 20)).toEqual(fresh.index.search(row.vector, 'm2', viewer, 20));
      }
    }
    expect(ids(index.search(moved.vector, 'm2', ['global', 'user:b'], 1))).toEqual([moved.id]);
    expect(ids(index.search(moved.vector, 'm2', ['global', 'user:a'], 50))).not.toContain(moved.id);
    expect(reads()).toBe(2);
  });

  it('gives two connections writing between each other’s searches what the file holds', () => {
    const { stored, path, searcher } = opened('attack-two-writers.db', 95);
    const other = openIndex(500, { listSnapshotAfter: 0, path });
    const random = createSeededRandom(96);
    const connections = [searcher, other];
    for (const connection of connections) connection.index.search((stored[0] as Stored).vector, 'm', null, 10);
    for (let write = 0; write < 40; write++) {
      const writer = connections[write % 2] as typeof searcher;
      const reader = connections[(write + 1) % 2] as typeof searcher;
      const base = stored[random.below(stored.length)] as Stored;
      const owner = otherOwner(base.owner);
      put(writer.database, writer.index, [{ id: base.id, owner, vector: base.vector }]);
      base.owner = owner;
      // With the global memories, more than 500 visible: searched through the lists.
      for (const connection of connections) {
        expect(connection.index.search(base.vector, 'm', ['global', owner], 1)[0]?.id).toBe(base.id);
        expect(ids(connection.index.search(base.vector, 'm', ['global', otherOwner(owner)], 50))).not.toContain(
          base.id,
        );
      }
      expect(reader.index.searchNear(base.vector, 'm', ['global', owner], 1, 0.99)[0]?.id).toBe(base.id);
      expect(ids(reader.index.searchNear(base.vector, 'm', ['global', otherOwner(owner)], 50, 0.5))).not.toContain(
        base.id,
      );
    }
  });
});
