import { afterEach, describe, expect, it } from 'vitest';
import { globalMemory } from '../global-memory.fixture.js';
import type { NewMemory } from '../memory-store.js';
import type { Storage } from '../storage.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { createSqliteMemoryStore } from './sqlite-memory-store.js';
import { createSqliteStorage } from './sqlite-storage.js';
import { COMMON_MIN_MEMORIES, createSqliteTermFrequencies } from './sqlite-term-frequencies.js';
import { createSqliteVectorIndex } from './sqlite-vector-index.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');
const opened: Storage[] = [];
afterEach(async () => {
  for (const storage of opened.splice(0)) await storage.close();
});

function orchardMemories(): NewMemory[] {
  return Array.from({ length: 3000 }, (_, index) => {
    if (index < 30) return globalMemory(`apple apple apple apple ${index}`);
    const words = [`note ${index} about the orchard and its long rows of trees`];
    if (index % 5 < 2) words.push('apple');
    if (index % 20 === 1) words.push('zebra');
    if (index % 100 === 1) words.push('yak yak');
    return globalMemory(words.join(' '));
  });
}

/**
 * 3,000 memories: "apple" in two in five (very common), "zebra" in one in twenty, "yak" in one in a
 * hundred; the first 30 say "apple" many times in a short text (they rank high on "apple" alone).
 */
async function orchard(): Promise<Storage> {
  const storage = createSqliteStorage({ path: ':memory:' });
  opened.push(storage);
  await storage.memories.insert(orchardMemories(), { at, actor: null });
  return storage;
}

describe('full-text searches with very common terms', () => {
  it('search by the rarest terms alone when given a number of terms', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      await createSqliteMemoryStore(database, createSqliteVectorIndex(database)).insert(orchardMemories(), {
        at,
        actor: null,
      });
      const frequencies = createSqliteTermFrequencies(database);
      expect(frequencies.rarest(['apple', 'zebra', 'orchard', 'yak'], 2)).toEqual(['zebra', 'yak']);
      expect(frequencies.rarest(['apple', 'zebra'], 2)).toEqual(['apple', 'zebra']);
    } finally {
      database.close();
    }
    const storage = await orchard();
    // 50 hits, more than the 29 yak memories: every term searched, the short apple memories rank first.
    const all = await storage.memories.searchText({ terms: ['apple', 'yak'], owners: ['global'], limit: 50 });
    const rarest = await storage.memories.searchText({
      terms: ['apple', 'yak'],
      owners: ['global'],
      limit: 50,
      maxTerms: 1,
    });
    const contents = async (hits: readonly { id: number }[]) =>
      (await storage.memories.get(hits.map((hit) => hit.id))).map((memory) => memory.content);
    expect(rarest).toHaveLength(29);
    expect((await contents(rarest)).every((content) => content.includes('yak'))).toBe(true);
    expect((await contents(all)).some((content) => !content.includes('yak'))).toBe(true);
  });

  it('call a term very common in more than 1% of the memories and more than 1,000, when the rarer terms fill the result', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      await createSqliteMemoryStore(database, createSqliteVectorIndex(database)).insert(orchardMemories(), {
        at,
        actor: null,
      });
      const frequencies = createSqliteTermFrequencies(database);
      const terms = ['apple', 'zebra', 'yak'];
      expect(frequencies.split(terms, 50)).toEqual({ rare: ['zebra', 'yak'], common: ['apple'] });
      expect(frequencies.split(terms, 150)).toEqual({ rare: terms, common: [] });
      expect(frequencies.split(['apple', 'orchard'], 1)).toEqual({ rare: ['apple', 'orchard'], common: [] });
      expect(frequencies.split(['apple'], 1)).toEqual({ rare: ['apple'], common: [] });
    } finally {
      database.close();
    }
  });

  it('score the memories the rarer terms match with every term, as the whole query would', async () => {
    const storage = await orchard();
    const hits = await storage.memories.searchText({ terms: ['apple', 'zebra', 'yak'], owners: ['global'], limit: 50 });
    const contents = (await storage.memories.get(hits.map((hit) => hit.id))).map((found) => found.content);
    // 149 memories say zebra (29 of them yak too); the 50 best all do, those with yak (the rarest) first.
    expect(hits).toHaveLength(50);
    expect(contents.every((content) => /zebra|yak/.test(content))).toBe(true);
    expect(contents.slice(0, 29).every((content) => content.includes('yak'))).toBe(true);
    // The scores are those of the whole query: "apple" still counts.
    const plain = await storage.memories.searchText({ terms: ['zebra', 'yak'], owners: ['global'], limit: 50 });
    expect(hits.map((hit) => hit.score)).not.toEqual(plain.map((hit) => hit.score));
    expect(new Set(hits.map((hit) => hit.id))).toEqual(new Set(plain.map((hit) => hit.id)));
  });

  it('find the same memories when the caller counted every term under the bound (the store looks none up)', async () => {
    const storage = await orchard();
    const search = { terms: ['zebra', 'yak'], owners: ['global'], limit: 50 };
    const told = await storage.memories.searchText({ ...search, postingsAtMost: 200 });
    expect(told).toHaveLength(50);
    expect(told).toEqual(await storage.memories.searchText(search));
  });

  it('search every term when the rarer ones cannot fill the result, or the store is small', async () => {
    const storage = await orchard();
    // yak alone matches 29 memories: the memories that say apple most take the places left.
    const hits = await storage.memories.searchText({ terms: ['apple', 'yak'], owners: ['global'], limit: 50 });
    const contents = (await storage.memories.get(hits.map((hit) => hit.id))).map((found) => found.content);
    expect(contents.filter((content) => content.startsWith('apple apple'))).not.toEqual([]);

    const small = createSqliteStorage({ path: ':memory:' });
    opened.push(small);
    await small.memories.insert(
      Array.from({ length: COMMON_MIN_MEMORIES / 2 }, (_, index) =>
        globalMemory(index % 10 ? 'apple apple apple' : `apple zebra ${index}`),
      ),
      { at, actor: null },
    );
    const all = await small.memories.searchText({ terms: ['apple', 'zebra'], owners: ['global'], limit: 100 });
    expect(all).toHaveLength(100);
  });
});
