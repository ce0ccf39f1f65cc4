import { describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { jaccard } from '../similarity.js';
import { createNearDuplicateIndex, minimumShared } from './near-duplicate-index.js';

interface Entry {
  id: number;
  owner: string;
  words: Set<string>;
}

/** Word sets of 1-12 words from a small Zipf-like vocabulary, a third of them edits of an earlier one. */
function randomEntries(seed: number, count: number): Entry[] {
  const random = createSeededRandom(seed);
  const vocabulary = Array.from({ length: 300 }, (_, index) => `w${index}`);
  const word = () => vocabulary[Math.floor(vocabulary.length * random.next() ** 2)] ?? 'w0';
  const owners = ['global', 'user:oz', 'room:ops'];
  const entries: Entry[] = [];
  for (let id = 1; id <= count; id++) {
    const earlier = entries[random.below(entries.length || 1)];
    const words = new Set<string>();
    if (earlier && random.next() < 0.35) {
      for (const kept of earlier.words) if (random.next() < 0.8) words.add(kept);
      if (random.next() < 0.5) words.add(word());
    } else {
      const size = 1 + random.below(12);
      while (words.size < size) words.add(word());
    }
    const owner = earlier && random.next() < 0.7 ? earlier.owner : (owners[random.below(owners.length)] ?? 'global');
    entries.push({ id, owner, words });
  }
  return entries;
}

/** The exhaustive reference: every other entry of the same owner, compared with `jaccard`. */
function exhaustive(entries: readonly Entry[], probe: Entry, threshold: number): boolean {
  return entries.some(
    (other) => other.id !== probe.id && other.owner === probe.owner && jaccard(probe.words, other.words) >= threshold,
  );
}

describe('the near-duplicate index', () => {
  it('finds a near-duplicate exactly when comparing with every memory of the owner finds one', () => {
    for (const [seed, threshold] of [
      [1, 0.35],
      [2, 0.35],
      [3, 0.5],
      [4, 0.2],
    ] as const) {
      const entries = randomEntries(seed, 400);
      const index = createNearDuplicateIndex(threshold);
      for (const entry of entries) index.add(entry.id, entry.owner, entry.words);
      index.seal();
      const expected = entries.map((entry) => exhaustive(entries, entry, threshold));
      expect(expected.filter(Boolean).length).toBeGreaterThan(20);
      expect(expected.filter((found) => !found).length).toBeGreaterThan(20);
      expect(entries.map((entry) => index.hasNearDuplicate(entry.id, entry.owner, entry.words))).toEqual(expected);
      expect(index.size).toBe(entries.length);
    }
  });

  it('answers exactly for the memories above a watermark, and leaves the older ones unknown', () => {
    for (const [seed, threshold, answerAbove] of [
      [5, 0.35, 300],
      [6, 0.35, 390],
      [7, 0.5, 200],
      [8, 0.2, 399],
      [9, 0.35, 0],
    ] as const) {
      const entries = randomEntries(seed, 400);
      const index = createNearDuplicateIndex(threshold);
      for (const entry of entries) index.add(entry.id, entry.owner, entry.words);
      index.seal(answerAbove);
      const newer = entries.filter((entry) => entry.id > answerAbove);
      const expected = newer.map((entry) => exhaustive(entries, entry, threshold));
      if (newer.length >= 100) {
        expect(expected.filter(Boolean).length).toBeGreaterThan(5);
        expect(expected.filter((found) => !found).length).toBeGreaterThan(5);
      }
      expect(newer.map((entry) => index.hasNearDuplicate(entry.id, entry.owner, entry.words))).toEqual(expected);
      for (const entry of entries.filter((older) => older.id <= answerAbove)) {
        expect(index.hasNearDuplicate(entry.id, entry.owner, entry.words)).toBe(true);
      }
    }
  });

  it('answers for the memories as indexed: one unknown to it, moved or reworded since, is to be searched', () => {
    const index = createNearDuplicateIndex(0.35);
    index.add(1, 'global', new Set(['release', 'train', 'tuesday']));
    index.add(2, 'global', new Set(['release', 'train', 'every', 'tuesday']));
    index.add(3, 'global', new Set(['kestrel', 'falcon', 'heron', 'owl']));
    index.add(4, 'user:oz', new Set(['kestrel', 'falcon', 'heron']));
    expect(() => index.add(4, 'global', new Set(['owl']))).toThrow(/growing id/);
    index.seal();
    expect(index.hasNearDuplicate(1, 'global', new Set(['release', 'train', 'tuesday']))).toBe(true);
    expect(index.hasNearDuplicate(3, 'global', new Set(['kestrel', 'falcon', 'heron', 'owl']))).toBe(false);
    expect(index.hasNearDuplicate(4, 'user:oz', new Set(['kestrel', 'falcon', 'heron']))).toBe(false);
    expect(index.hasNearDuplicate(3, 'global', new Set(['kestrel', 'falcon', 'heron', 'eagle']))).toBe(true);
    expect(index.hasNearDuplicate(3, 'user:oz', new Set(['kestrel', 'falcon', 'heron', 'owl']))).toBe(true);
    expect(index.hasNearDuplicate(5, 'global', new Set(['pelican']))).toBe(true);
  });

  it('asks for no more shared words than the threshold needs, where floating point rounds up', () => {
    expect(0.55 * 100).toBeGreaterThan(55);
    expect(minimumShared(100, 0.55)).toBe(55);
    expect(minimumShared(20, 0.35)).toBe(7);
    expect(minimumShared(3, 0.35)).toBe(2);
    expect(minimumShared(1, 0.35)).toBe(1);
  });
});
