import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseLocomo } from './locomo-dataset.js';
import { baselineQuery, createTurnSearch } from './locomo-fts-baseline.js';
import { countWords, evaluate, type QuestionOutcome } from './locomo-metrics.js';

/** A hand-made conversation: two sessions (a third with a date but no turns), a caption, malformed evidence. */
const tinyLocomo: unknown = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/locomo-tiny.json', import.meta.url), 'utf8'),
);

/** Four questions whose figures are worked out by hand below. */
const outcomes: QuestionOutcome[] = [
  // single-hop: the evidence is second.
  {
    category: 4,
    evidence: ['D1:1'],
    retrieved: [
      { diaIds: ['D1:2'], words: 4 },
      { diaIds: ['D1:1'], words: 6 },
    ],
  },
  // multi-hop: one of two evidence turns, first.
  {
    category: 1,
    evidence: ['D1:2', 'D2:1'],
    retrieved: [
      { diaIds: ['D1:2'], words: 5 },
      { diaIds: [], words: 2 },
    ],
  },
  // temporal: nothing retrieved.
  { category: 2, evidence: ['D2:1'], retrieved: [] },
  // adversarial: found first.
  { category: 5, evidence: ['D1:3'], retrieved: [{ diaIds: ['D1:3'], words: 3 }] },
];

describe('the LoCoMo metrics', () => {
  const result = evaluate(outcomes);

  it('averages evidence recall over the questions of categories 1-4', () => {
    expect(result.overall.questions).toBe(3);
    // @1: (0 + 1/2 + 0) / 3; @5 and beyond: (1 + 1/2 + 0) / 3.
    expect(result.overall.recallAt).toEqual({ '1': 0.1667, '5': 0.5, '10': 0.5, '20': 0.5 });
  });

  it('counts a question as hit when any of its evidence is in the top k', () => {
    // @1: only the multi-hop question; @5: single-hop and multi-hop.
    expect(result.overall.anyAt).toEqual({ '1': 0.3333, '5': 0.6667, '10': 0.6667, '20': 0.6667 });
  });

  it('averages the words of the top k items over the questions', () => {
    // @1: (4 + 5 + 0) / 3; @5: (10 + 7 + 0) / 3.
    expect(result.overall.contextWordsAt).toEqual({ '1': 3, '5': 5.7, '10': 5.7, '20': 5.7 });
  });

  it('scores each category on its own and adversarial questions apart', () => {
    expect(result.categories['single-hop'].recallAt).toEqual({ '1': 0, '5': 1, '10': 1, '20': 1 });
    expect(result.categories['multi-hop'].recallAt['1']).toBe(0.5);
    expect(result.categories.temporal.recallAt['20']).toBe(0);
    expect(result.categories['open-domain']).toMatchObject({ questions: 0, recallAt: { '10': 0 } });
    expect(result.adversarial).toMatchObject({ questions: 1, recallAt: { '1': 1 }, contextWordsAt: { '1': 3 } });
  });

  it('counts words as a person does', () => {
    expect(countWords('  Ada: I adopted\na puppy.  ')).toBe(5);
  });
});

describe('the plain FTS5 baseline over turns', () => {
  it('ORs the question words without stopwords, each quoted', () => {
    expect(baselineQuery("What is the name of Ada's puppy?")).toBe('"name" OR "ada" OR "puppy"');
    expect(baselineQuery('what is it?')).toBe('');
  });

  it('ranks the turn that shares the most question words first, stemmed by porter', () => {
    const [conversation] = parseLocomo(tinyLocomo);
    if (!conversation) throw new Error('no conversation');
    const search = createTurnSearch(conversation);
    const [first] = search.search("What is the name of Ada's puppy?", 20);
    search.close();
    // "Ada: I adopted a puppy named Biscuit last week." matches name (named), ada and puppy.
    expect(first).toEqual({ diaIds: ['D1:1'], words: 9 });
  });
});
