import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { createSqliteStorage } from '../../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../../storage/storage.js';
import { createFixedClock } from '../../testing.js';
import type { Mneme } from '../mneme.js';
import { MAX_QUERY_TERMS, queryTerms, shapeQueries } from './query-terms.js';

/** The inputs the issue names, plus FTS5 operators and characters that have broken query builders before. */
const hostileQueries = [
  'node.js',
  'C++',
  "user's",
  'AND',
  '"x',
  'foo-bar',
  '😀',
  '👩‍👩‍👧 family 🇫🇷',
  'x'.repeat(10_240),
  'the quick brown fox '.repeat(512),
  'OR',
  'NOT NEAR',
  'a AND b OR NOT c',
  'NEAR(a b, 2)',
  '*',
  'prefix*',
  '^start',
  'column:value',
  '{content}: x',
  '(((',
  ')',
  '""',
  '"',
  "'; DROP TABLE memories; --",
  '\u0000null byte',
  'tab\tand\nnewline',
  '\ud800 lone surrogate',
  'café naïve Ærø',
  '東京 タワー',
  'مرحبا',
  '-',
  '+',
  '.',
  ':',
  '   ',
];

/** A small seeded random generator (mulberry32), so a failing case can be replayed. */
function randomGenerator(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const alphabet = [
  ...'abcXYZ019 "\'*^:-+.,;()[]{}<>!?/\\|&%$#@~`=_\t\n\r',
  'AND',
  'OR',
  'NOT',
  'NEAR',
  '\u0000',
  '\u2028',
  '\ud83d',
  '😀',
  'é',
  '東',
  '\u202e',
];

function randomString(random: () => number): string {
  const length = Math.floor(random() * 40);
  let text = '';
  for (let index = 0; index < length; index++) text += alphabet[Math.floor(random() * alphabet.length)];
  return text;
}

describe('the query-term builder', () => {
  it('lower-cases words, drops punctuation and stopwords, and keeps the order', () => {
    expect(queryTerms('What does Oz prefer for node.js?')).toEqual(['oz', 'prefer', 'node', 'js']);
    expect(queryTerms('C++ and foo-bar')).toEqual(['c', 'foo', 'bar']);
    expect(queryTerms("user's")).toEqual(['user']);
    expect(queryTerms('Café CAFÉ café')).toEqual(['café']);
    expect(queryTerms('😀 "x')).toEqual(['x']);
    expect(queryTerms('😀')).toEqual([]);
  });

  it('keeps stopwords when nothing else is left, so "who is he" still searches', () => {
    expect(queryTerms('who is he')).toEqual(['who', 'is', 'he']);
    expect(queryTerms('AND')).toEqual(['and']);
  });

  it('caps the number of terms and skips absurdly long words', () => {
    const words = Array.from({ length: 500 }, (_, index) => `word${index}`).join(' ');
    expect(queryTerms(words)).toHaveLength(MAX_QUERY_TERMS);
    expect(queryTerms(`${'x'.repeat(10_240)} kestrel`)).toEqual(['kestrel']);
  });

  it('adds a second query of the first 5 words only when the query has more than 7 words', () => {
    expect(shapeQueries('one two three four five six seven')).toEqual(['one two three four five six seven']);
    expect(shapeQueries('one two three four five six seven eight')).toEqual([
      'one two three four five six seven eight',
      'one two three four five',
    ]);
  });

  it('appends the recent user messages to the query, skipping blanks and a repeat of the query', () => {
    expect(shapeQueries('dark mode?', ['I use vim', '  ', 'dark mode?'])).toEqual(['dark mode?\nI use vim']);
  });
});

describe('full-text search with hostile input', () => {
  let storage: Storage;
  let mneme: Mneme;
  const embedder = createFakeEmbeddingModel();

  beforeAll(async () => {
    storage = createSqliteStorage({ path: ':memory:' });
    await storage.memories.insert(
      ['node.js runs the C++ addon', "the user's foo-bar setting", 'café in 東京'].map((content) => ({
        content,
        category: 'fact',
        sector: 'semantic' as const,
        scope: 'global' as const,
        owner: 'global',
        userId: null,
        channelId: null,
        projectId: null,
        topicId: null,
        source: 'manual' as const,
        importance: 0.5,
        pinned: false,
        sourceMessageIds: [],
        sourceIds: [],
        embedding: null,
      })),
      { at: 0, actor: null },
    );
    mneme = await createMneme({ path: ':memory:', embedder, clock: createFixedClock() });
    await mneme.remember({ content: 'node.js runs the C++ addon' });
  });

  afterAll(async () => {
    await storage?.close();
    await mneme?.close();
  });

  it('never raises on the listed hostile queries, as terms or as raw text', async () => {
    for (const query of hostileQueries) {
      const search = (terms: string[]) => storage.memories.searchText({ terms, owners: ['global'], limit: 10 });
      await expect(search(queryTerms(query)), JSON.stringify(query.slice(0, 40))).resolves.toBeInstanceOf(Array);
      await expect(search([query]), JSON.stringify(query.slice(0, 40))).resolves.toBeInstanceOf(Array);
    }
  });

  it("still finds what the words mean: node.js, C++, user's, foo-bar and café match their memories", async () => {
    const found = async (query: string) => {
      const hits = await storage.memories.searchText({ terms: queryTerms(query), owners: ['global'], limit: 10 });
      return (await storage.memories.get(hits.map((hit) => hit.id))).map((memory) => memory.content);
    };
    expect(await found('node.js')).toEqual(['node.js runs the C++ addon']);
    expect(await found('C++')).toEqual(['node.js runs the C++ addon']);
    expect(await found("user's")).toEqual(["the user's foo-bar setting"]);
    expect(await found('foo-bar')).toEqual(["the user's foo-bar setting"]);
    expect(await found('CAFE')).toEqual(['café in 東京']);
  });

  it('never raises on 2,000 random strings thrown at the builder and straight at the adapter', async () => {
    const random = randomGenerator(20240615);
    for (let round = 0; round < 2000; round++) {
      const text = randomString(random);
      const search = (terms: string[]) => storage.memories.searchText({ terms, owners: ['global'], limit: 5 });
      await expect(search(queryTerms(text)), JSON.stringify(text)).resolves.toBeInstanceOf(Array);
      await expect(search([text, randomString(random)]), JSON.stringify(text)).resolves.toBeInstanceOf(Array);
    }
  });

  it('answers a whole recall for every hostile query without raising', async () => {
    for (const query of hostileQueries) {
      // Blank text, lone surrogates (text that would be stored or matched altered) and the NUL character (no store
      // takes it, ADR 43) are refused.
      const accepted = query.trim().length > 0 && !/\p{Cs}/u.test(query) && !query.includes('\u0000');
      const recall = mneme.recall({ query, topK: 3 });
      if (accepted) await expect(recall, JSON.stringify(query.slice(0, 40))).resolves.toHaveProperty('hits');
      else await expect(recall).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
  });
});
