import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { createDotProducts } from '../src/storage/sqlite/sqlite-code-scan.js';
import { centroidProducts, nearestWithin } from '../src/storage/sqlite/sqlite-vector-lists.js';

/** Held (wt-attack9): the session-9 pieces of the list search against their plain definitions. */
describe('attack9: nearestWithin and the centroid products', () => {
  it('nearestWithin equals sorting every code by distance then id and keeping the first wanted (ties at the bound, wanted 0, more than held)', () => {
    const random = createSeededRandom(9);
    for (let round = 0; round < 400; round++) {
      const size = random.below(60);
      const spread = 1 + random.below(6);
      const ids = new Set<number>();
      const within: Array<{ id: number; distance: number; partition: number }> = [];
      while (within.length < size) {
        const id = random.below(1000);
        if (ids.has(id)) continue;
        ids.add(id);
        within.push({ id, distance: random.below(spread) * (random.below(4) === 0 ? 0 : 7), partition: round });
      }
      const wanted = random.below(size + 3);
      const expected = [...within].sort((a, b) => a.distance - b.distance || a.id - b.id).slice(0, wanted);
      expect(nearestWithin(within, wanted)).toEqual(expected);
    }
  });

  it('the WebAssembly centroid products equal the JavaScript ones to the bit, at any length (not a multiple of 4 too)', () => {
    const random = createSeededRandom(10);
    for (let round = 0; round < 60; round++) {
      const length = 1 + random.below(40);
      const count = 1 + random.below(12);
      const values = Float32Array.from({ length: count * length }, () => random.next() * 2 - 1);
      const query = Float32Array.from({ length }, () => random.next() * 2 - 1);
      const products = createDotProducts(values, count, length);
      expect(products).not.toBeNull();
      expect([...centroidProducts(query, values, count, products)]).toEqual([
        ...centroidProducts(query, values, count, null),
      ]);
    }
  });
});
