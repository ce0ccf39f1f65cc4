import { afterEach, describe, expect, it } from 'vitest';
import { globalMemory } from '../storage/global-memory.fixture.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../storage/storage.js';
import { rarestTerms } from './rarest-terms.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');
const opened: Storage[] = [];
afterEach(async () => {
  for (const storage of opened.splice(0)) await storage.close();
});

/** 500 memories: "orchard" in all, "apple" in one in two, "zebra" in one in twenty, "yak" in one in a hundred. */
async function orchard(): Promise<Storage> {
  const storage = createSqliteStorage({ path: ':memory:' });
  opened.push(storage);
  const memories = Array.from({ length: 500 }, (_, index) => {
    const words = [`orchard row ${index}`];
    if (index % 2 === 0) words.push('apple');
    if (index % 20 === 0) words.push('zebra');
    if (index % 100 === 0) words.push('yak');
    return globalMemory(words.join(' '));
  });
  await storage.memories.insert(memories, { at, actor: null });
  return storage;
}

describe('the rarest terms of a bounded candidate search', () => {
  it('keeps the rarest terms, in their order, while the memories they are in stay within the bound', async () => {
    const storage = await orchard();
    const terms = ['orchard', 'apple', 'zebra', 'yak'];
    // yak 5, zebra 25, apple 250, orchard 500.
    expect(await rarestTerms(storage.memories, terms, null, { maxTerms: 8, maxPostings: 30 })).toEqual([
      'zebra',
      'yak',
    ]);
    expect(await rarestTerms(storage.memories, terms, null, { maxTerms: 8, maxPostings: 300 })).toEqual([
      'apple',
      'zebra',
      'yak',
    ]);
    expect(await rarestTerms(storage.memories, terms, null, { maxTerms: 1, maxPostings: 10_000 })).toEqual(['yak']);
  });

  it('keeps one term when every term is in more memories than the bound: the first, as counts stop at the bound', async () => {
    const storage = await orchard();
    // Counts are exact up to the bound only: apple (250) and orchard (500) both count 11.
    expect(await rarestTerms(storage.memories, ['orchard', 'apple'], null, { maxTerms: 8, maxPostings: 10 })).toEqual([
      'orchard',
    ]);
    expect(await rarestTerms(storage.memories, [], null, { maxTerms: 8, maxPostings: 10 })).toEqual([]);
  });
});
