import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// Attack (session 5, wt-attack5): linking's near() through the inverted lists reads the bands of each list
// within the query's angle to the centroid, give or take the linking angle and ANGLE_SLACK (1e-6 rad). Both
// angles are acos of a dot product of float32 vectors whose norms are 1 only to about 1e-8: near a centroid
// (a query within a fraction of a degree of it) acos turns that into an error of up to about 1e-4 rad, a
// hundred times the slack, and a vector above the cosine just past a band's edge is not read.
const DIMENSIONS = 128;
const BAND = Math.PI / 180;
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});

function gaussian(random: SeededRandom): Float64Array {
  return Float64Array.from({ length: DIMENSIONS }, () => random.normal());
}
function normalised(vector: Float64Array): Float64Array {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}
/** A unit direction orthogonal to `unit`. */
function orthogonal(unit: Float64Array, random: SeededRandom): Float64Array {
  const other = gaussian(random);
  let along = 0;
  for (let index = 0; index < DIMENSIONS; index++) along += (other[index] ?? 0) * (unit[index] ?? 0);
  return normalised(other.map((value, index) => value - along * (unit[index] ?? 0)));
}
/** `unit` turned by `angle` towards the orthogonal unit `towards` (in double, then float32). */
function rotated(unit: Float64Array, towards: Float64Array, angle: number): Float32Array {
  return Float32Array.from(unit, (value, index) => Math.cos(angle) * value + Math.sin(angle) * (towards[index] ?? 0));
}
function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let index = 0; index < a.length; index++) {
    dot += (a[index] ?? 0) * (b[index] ?? 0);
    na += (a[index] ?? 0) ** 2;
    nb += (b[index] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

function openIndex(listMinVectors = 500): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path: ':memory:' });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors, listSnapshotAfter: Number.POSITIVE_INFINITY });
  index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

describe('attack5: exactness of the inverted lists near a centroid', { timeout: 180_000 }, () => {
  it('finds every vector above the cosine for a query within a fraction of a degree of a centroid', () => {
    const random = createSeededRandom(77);
    const { database, index } = openIndex();
    // The same vectors without lists (the owner buckets' exact scan): the control.
    const plain = openIndex(Number.POSITIVE_INFINITY);
    const putBoth = (memoryId: number, vector: Float32Array) => {
      index.put(memoryId, 'global', { model: 'm', vector });
      plain.index.put(memoryId, 'global', { model: 'm', vector });
    };
    const centres = Array.from({ length: 12 }, () => normalised(gaussian(random)));
    let id = 0;
    database.transaction(() => {
      for (let count = 0; count < 900; count++) {
        const centre = centres[random.below(centres.length)] ?? centres[0];
        const vector = Float32Array.from(centre ?? [], (value) => value + random.normal() * 0.12);
        putBoth(++id, vector);
      }
    })();
    while (database.transaction(() => index.indexStep()).immediate());
    const lists = database
      .prepare<[], { list: number; centroid: Buffer }>('SELECT list, centroid FROM vector_lists ORDER BY list')
      .all();
    expect(lists.length).toBeGreaterThan(1);
    const partOf = database
      .prepare<[bigint], number>('SELECT part FROM memory_vector_list_bits WHERE memory_id = ?')
      .pluck();
    const misses: string[] = [];
    let tried = 0;
    for (const { list, centroid } of lists) {
      const stored = new Float32Array(Uint8Array.from(centroid).buffer).subarray(0, DIMENSIONS);
      const centre = normalised(Float64Array.from(stored));
      for (let attempt = 0; attempt < 6 && misses.length === 0; attempt++) {
        const towards = orthogonal(centre, random);
        // A neighbour just past the edge of a band (20 degrees) of this list, on the great circle through
        // the centroid and the query.
        const k = 20;
        const r = k * BAND + 2e-5;
        const neighbour = rotated(centre, towards, r);
        const neighbourId = ++id;
        database.transaction(() => putBoth(neighbourId, neighbour))();
        if (Math.floor((partOf.get(BigInt(neighbourId)) ?? -1) / 181) !== list) continue;
        for (let step = 1; step <= 40; step++) {
          const t = step * 1e-5;
          const query = rotated(centre, towards, t);
          // The linking cosine: the neighbour is above it by a margin of 1e-5 rad of angle.
          const minScore = Math.cos(r - t + 1e-5);
          const score = cosine(query, neighbour);
          if (score < minScore + 1e-6) continue;
          tried++;
          const found = index.searchNear(query, 'm', null, 50, minScore).map((hit) => hit.id);
          const control = plain.index.searchNear(query, 'm', null, 50, minScore).map((hit) => hit.id);
          expect(control).toContain(neighbourId);
          if (!found.includes(neighbourId)) {
            misses.push(
              `list ${list}: query ${t} rad from its centroid misses ${neighbourId} at cosine ${score} >= ${minScore}`,
            );
          }
        }
      }
    }
    expect(tried).toBeGreaterThan(0);
    expect(misses).toEqual([]);
  });
});
