/** A deterministic source of random numbers: the same seed gives the same sequence on every machine. */
export interface SeededRandom {
  /** A number in [0, 1). */
  next(): number;
  /** A whole number in [0, bound). */
  below(bound: number): number;
  /** A standard normal number (mean 0, deviation 1). */
  normal(): number;
}

/**
 * Mulberry32: 32 bits of state, fast, and good enough for synthetic data (not for cryptography).
 * Seeds are taken as unsigned 32-bit integers.
 */
export function createSeededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  let spareNormal: number | null = null;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    below: (bound) => Math.floor(next() * bound),
    normal() {
      if (spareNormal !== null) {
        const value = spareNormal;
        spareNormal = null;
        return value;
      }
      // Box-Muller: two uniforms give two independent normals.
      const radius = Math.sqrt(-2 * Math.log(1 - next()));
      const angle = 2 * Math.PI * next();
      spareNormal = radius * Math.sin(angle);
      return radius * Math.cos(angle);
    },
  };
}

/**
 * A seed for item `index` of a stream seeded with `seed` (a splitmix-style hash), so any item can be
 * generated on its own, in any order, without generating the ones before it.
 */
export function deriveSeed(seed: number, index: number, stream = 0): number {
  let hash = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
  hash = Math.imul(hash ^ (index >>> 0), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  hash = Math.imul(hash ^ Math.floor(index / 4294967296), 0x27d4eb2f);
  return (hash ^ (hash >>> 16)) >>> 0;
}
