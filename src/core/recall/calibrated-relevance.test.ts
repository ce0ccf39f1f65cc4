import { describe, expect, it } from 'vitest';
import { coverage, indexStem, inverseDocumentFrequency, textStems, weightedTerms } from './calibrated-relevance.js';

describe('calibrated relevance', () => {
  it('weighs a word found in most memories far below a word found in few', () => {
    expect(inverseDocumentFrequency(100, 90)).toBeLessThan(inverseDocumentFrequency(100, 2) / 10);
    expect(inverseDocumentFrequency(100, 0)).toBe(inverseDocumentFrequency(100, 1));
  });

  it('gives a memory that shares only a common name with the query a small share, and a real match most of it', () => {
    // 50 memories: "oz" is in 40 of them, "like" in 5, "editors" in 2.
    const counts: Record<string, number> = { oz: 40, like: 5, editors: 2 };
    const query = weightedTerms('what does Oz like in editors', (term) =>
      inverseDocumentFrequency(50, counts[term] ?? 0),
    );
    const nameOnly = coverage(query, textStems('Oz has four RTX 3090 cards in the GPU server'));
    const match = coverage(query, textStems('Oz switched editors: Helix, which Oz likes best'));
    expect(nameOnly).toBeLessThan(0.05);
    expect(match).toBe(1);
  });

  it('matches words the way the full-text index does: case, accents and endings aside', () => {
    expect(indexStem('Café'.toLowerCase())).toBe('cafe');
    const query = weightedTerms('moving to Zürich', () => 1);
    expect(coverage(query, textStems('Lee moved to ZURICH last year'))).toBe(1);
  });

  it('stems a word the same before and after more distinct words than it remembers went by', () => {
    const words = ['running', 'naïve', 'café', 'generalizations'];
    const before = words.map(indexStem);
    for (let index = 0; index < 45_000; index++) indexStem(`w${index.toString(36)}ing`);
    expect(words.map(indexStem)).toEqual(before);
    expect(before).toEqual(['run', 'naiv', 'cafe', 'gener']);
  });

  it('is 0 for a query without words', () => {
    expect(
      coverage(
        weightedTerms('?!', () => 1),
        textStems('anything'),
      ),
    ).toBe(0);
  });
});
