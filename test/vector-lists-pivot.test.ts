import { describe, expect, it } from 'vitest';
import { createSeededRandom, type SeededRandom } from '../src/bench/seeded-random.js';
import { anglesAmong, type ListRow, rangesOf } from '../src/storage/sqlite/sqlite-vector-lists.js';

// Linking's first pass (ADR 20, 2026-12-01, session 6) leaves out a list without its centroid's product when
// the triangle inequality on angles, from the list the query is in (the pivot), puts every band of it out of
// reach. The partitions read must be exactly those read with every product: checked on queries on the great
// circle through the pivot and another centroid, where the inequality is an equality (the tightest case), and
// bands set about the edge of reach.
const DIMENSIONS = 64;
const BAND = Math.PI / 180;
const REACH = Math.acos(0.85) + 2e-3;

function unit(values: ArrayLike<number>): Float32Array {
  const vector = Float32Array.from(values);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}
function gaussian(random: SeededRandom): Float32Array {
  return unit(Array.from({ length: DIMENSIONS }, () => random.normal()));
}
/** `from` turned by `angle` towards `towards` (a negative angle: away from it), on their great circle. */
function turned(from: Float32Array, towards: Float32Array, angle: number): Float32Array {
  let along = 0;
  for (let index = 0; index < DIMENSIONS; index++) along += (from[index] ?? 0) * (towards[index] ?? 0);
  const off = unit(Array.from(towards, (value, index) => value - along * (from[index] ?? 0)));
  return unit(Array.from(from, (value, index) => Math.cos(angle) * value + Math.sin(angle) * (off[index] ?? 0)));
}

describe('the lists a search reads, with and without the pivot', () => {
  it('are the same partitions at the edge of reach', () => {
    const random = createSeededRandom(5);
    const count = 24;
    // Centroids in a few groups, so that some are near each other (the bound is then tight at small angles).
    const groups = Array.from({ length: 6 }, () => gaussian(random));
    const centroids = Array.from({ length: count }, (_, list) =>
      turned(groups[list % groups.length] ?? gaussian(random), gaussian(random), random.below(900) / 1000),
    );
    const values = new Float32Array(count * DIMENSIONS);
    for (const [list, centroid] of centroids.entries()) values.set(centroid, list * DIMENSIONS);
    const between = anglesAmong(values, count, DIMENSIONS);
    let compared = 0;
    for (let trial = 0; trial < 3000; trial++) {
      const pivot = random.below(count);
      const other = random.below(count);
      const from = centroids[pivot] ?? new Float32Array(DIMENSIONS);
      const towards = centroids[other] ?? new Float32Array(DIMENSIONS);
      const query = turned(from, towards, ((random.below(1200) - 600) / 1000) * 0.8);
      // Bands about where the other list's reach ends: its lower and upper bound by the triangle inequality.
      const apart = between[pivot * count + other] ?? 0;
      const rows: ListRow[] = Array.from({ length: count }, (_, list) => {
        const edge = Math.floor((apart + (random.below(2) === 0 ? -1 : 1) * REACH) / BAND) + random.below(7) - 3;
        const width = random.below(12);
        const low = Math.max(0, random.below(2) === 0 ? edge : edge - width);
        return { list, low_band: low, high_band: Math.min(180, low + width) };
      });
      const everyProduct = rangesOf(query, values, count, rows, REACH, null);
      expect(rangesOf(query, values, count, rows, REACH, { list: pivot, between })).toEqual(everyProduct);
      compared += everyProduct.length;
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
