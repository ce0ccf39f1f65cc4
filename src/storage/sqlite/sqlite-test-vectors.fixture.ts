import type { SeededRandom } from '../../bench/seeded-random.js';

/** A Gaussian vector of `dimensions` (not of unit length): a direction uniform on the sphere. */
export function gaussian(random: SeededRandom, dimensions: number): Float32Array {
  return Float32Array.from({ length: dimensions }, () => random.normal());
}

/** A vector at a cosine of about `closeness` from `vector` (Gaussian noise of the right size). */
export function near(vector: Float32Array, random: SeededRandom, closeness: number): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  const deviation = Math.sqrt(norm) * Math.sqrt((1 / closeness ** 2 - 1) / vector.length);
  return vector.map((value) => value + random.normal() * deviation);
}
