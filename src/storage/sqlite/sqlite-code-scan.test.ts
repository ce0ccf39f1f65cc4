import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { createCodeScan, createDotProducts } from './sqlite-code-scan.js';

function distance(left: Uint32Array, right: Uint32Array): number {
  let bits = 0;
  for (let word = 0; word < left.length; word++) {
    let value = ((left[word] ?? 0) ^ (right[word] ?? 0)) >>> 0;
    for (; value !== 0; value &= value - 1) bits++;
  }
  return bits;
}

/** The dot product as the lists compute it in JavaScript: four running sums, added in order. */
function dot(vector: Float32Array, values: Float32Array, offset: number): number {
  let first = 0;
  let second = 0;
  let third = 0;
  let fourth = 0;
  let index = 0;
  for (; index + 3 < vector.length; index += 4) {
    first += (vector[index] ?? 0) * (values[offset + index] ?? 0);
    second += (vector[index + 1] ?? 0) * (values[offset + index + 1] ?? 0);
    third += (vector[index + 2] ?? 0) * (values[offset + index + 2] ?? 0);
    fourth += (vector[index + 3] ?? 0) * (values[offset + index + 3] ?? 0);
  }
  for (; index < vector.length; index++) first += (vector[index] ?? 0) * (values[offset + index] ?? 0);
  return first + second + third + fourth;
}

describe('the WebAssembly scan of linking', () => {
  it('finds the first code within the bound of the owners asked, as a scan of every bit does', () => {
    const random = createSeededRandom(7);
    // 1 and 3 words: codes padded to whole 64-bit words; 24: 768 bits.
    for (const words of [1, 3, 24]) {
      const count = 300;
      const scan = createCodeScan(count, words);
      expect(scan).not.toBeNull();
      if (!scan) return;
      const perCode = scan.stride / 4;
      const query = Uint32Array.from({ length: words }, () => random.below(2 ** 32));
      const codes: Uint32Array[] = [];
      const owners: number[] = [];
      for (let index = 0; index < count; index++) {
        // Some codes a few bits off the query, most random.
        const code = Uint32Array.from(query, (word) =>
          random.below(4) === 0 ? word ^ (1 << random.below(32)) : random.below(2 ** 32),
        );
        codes.push(code);
        owners.push(random.below(5));
        scan.codes.set(code, index * perCode);
        scan.owners[index] = owners[index] ?? 0;
      }
      scan.query(query);
      const bits = words * 32;
      for (const bound of [0, words, Math.floor(bits / 4), Math.floor(bits / 2), bits]) {
        for (const [ownerA, ownerB] of [
          [-1, -1],
          [2, 2],
          [0, 3],
        ] as const) {
          for (const [from, many] of [
            [0, count],
            [17, 40],
            [250, 50],
            [5, 0],
          ] as const) {
            let expected = -1;
            for (let index = from; index < from + many; index++) {
              const owned = ownerA < 0 || owners[index] === ownerA || owners[index] === ownerB;
              if (owned && distance(codes[index] ?? query, query) <= bound) {
                expected = index - from;
                break;
              }
            }
            expect(scan.first(from, many, bound, ownerA, ownerB)).toBe(expected);
          }
        }
      }
    }
  });

  it('computes the dot products to the bit of the JavaScript sums', () => {
    const random = createSeededRandom(11);
    for (const length of [1, 3, 4, 7, 64, 768, 770]) {
      const count = 20;
      const values = Float32Array.from({ length: count * length }, () => random.normal());
      const products = createDotProducts(values, count, length);
      expect(products).not.toBeNull();
      for (let trial = 0; trial < 5; trial++) {
        const vector = Float32Array.from({ length }, () => random.normal());
        products?.query(vector);
        for (let index = 0; index < count; index++) {
          expect(products?.dot(index)).toBe(dot(vector, values, index * length));
        }
      }
    }
  });
});
