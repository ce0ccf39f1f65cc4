import { describe, expect, it } from 'vitest';
import { createSeededRandom, deriveSeed } from './seeded-random.js';
import { BENCH_ROOMS, BENCH_USERS, createSyntheticCorpus } from './synthetic-corpus.js';

describe('the seeded random source', () => {
  it('repeats its sequence for the same seed and differs for another', () => {
    const draw = (seed: number) => {
      const random = createSeededRandom(seed);
      return Array.from({ length: 5 }, () => random.next());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });

  it('derives a different seed for each item and stream', () => {
    expect(deriveSeed(1, 0)).not.toBe(deriveSeed(1, 1));
    expect(deriveSeed(1, 0, 0)).not.toBe(deriveSeed(1, 0, 1));
    expect(deriveSeed(1, 5)).toBe(deriveSeed(1, 5));
  });
});

describe('the synthetic corpus', () => {
  const corpus = createSyntheticCorpus({ seed: 42 });

  it('generates the same memory for the same seed and index, whatever was generated before', () => {
    const again = createSyntheticCorpus({ seed: 42 });
    again.memory(999);
    expect(again.memory(3)).toEqual(corpus.memory(3));
    expect(again.query(2, 1000)).toEqual(corpus.query(2, 1000));
    expect(again.message(4)).toEqual(corpus.message(4));
  });

  it('generates other text and vectors for another seed', () => {
    const other = createSyntheticCorpus({ seed: 43 });
    expect(other.memory(3).content).not.toBe(corpus.memory(3).content);
    expect(other.memory(3).vector).not.toEqual(corpus.memory(3).vector);
  });

  it('gives every memory a 768-dimensional unit vector', () => {
    for (let index = 0; index < 20; index++) {
      const { vector } = corpus.memory(index);
      expect(vector).toHaveLength(768);
      const norm = Math.sqrt(vector.reduce((total, value) => total + value * value, 0));
      expect(norm).toBeCloseTo(1, 5);
    }
  });

  it('spreads owners over 100 users and 20 rooms, with about half the memories global', () => {
    const memories = Array.from({ length: 4000 }, (_, index) => corpus.memory(index));
    const users = new Set(memories.flatMap((memory) => (memory.userId ? [memory.userId] : [])));
    const rooms = new Set(memories.flatMap((memory) => (memory.channelId ? [memory.channelId] : [])));
    expect(users.size).toBe(BENCH_USERS);
    expect(rooms.size).toBe(BENCH_ROOMS);
    const global = memories.filter((memory) => memory.scope === 'global').length / memories.length;
    expect(global).toBeGreaterThan(0.45);
    expect(global).toBeLessThan(0.55);
    for (const memory of memories.slice(0, 200)) {
      if (memory.scope === 'personal') expect(memory.userId).toMatch(/^user-\d+$/);
      if (memory.scope === 'room') expect(memory.channelId).toMatch(/^room-\d+$/);
    }
  });

  it('uses words with a Zipf-like frequency: the commonest word about twice as often as the second', () => {
    const counts = new Map<string, number>();
    for (let index = 0; index < 3000; index++) {
      for (const word of corpus
        .memory(index)
        .content.toLowerCase()
        .match(/[a-z]+/g) ?? []) {
        counts.set(word, (counts.get(word) ?? 0) + 1);
      }
    }
    const the = counts.get('the') ?? 0;
    const of = counts.get('of') ?? 0;
    const rare = [...counts.values()].filter((count) => count === 1).length;
    expect(the / of).toBeGreaterThan(1.5);
    expect(the / of).toBeLessThan(2.7);
    expect(rare).toBeGreaterThan(500);
  });

  it('draws a query from words of its target memory and a vector close to the target', () => {
    const query = corpus.query(11, 500);
    const target = corpus.memory(query.target);
    for (const word of query.text.split(' ')) expect(target.content.toLowerCase()).toContain(word);
    const cosine = query.vector.reduce((total, value, index) => total + value * (target.vector[index] ?? 0), 0);
    expect(cosine).toBeGreaterThan(0.6);
  });
});
