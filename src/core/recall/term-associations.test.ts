import { describe, expect, it } from 'vitest';
import { associatedWords, associationCandidates } from './term-associations.js';

describe('associationCandidates', () => {
  it("scores the words of a query word's memories by the share they occur in, the query's own words aside", () => {
    const candidates = associationCandidates(
      ['family', 'weekend'],
      [
        {
          term: 'family',
          texts: [
            'Family dinner with the kids',
            'The kids and the family at the zoo',
            'A family trip, kids asleep in the car',
            'Family photos at the zoo',
          ],
        },
      ],
      10,
    );
    expect(candidates.map(({ word, share }) => [word, share])).toEqual([
      ['kids', 0.75],
      ['zoo', 0.5],
    ]);
  });

  it('counts a word once a memory, needs two memories, and leaves out numbers and short words', () => {
    const candidates = associationCandidates(
      ['paint'],
      [{ term: 'paint', texts: ['paint canvas canvas canvas 2023 ok', 'paint 2023 ok', 'paint easel'] }],
      10,
    );
    expect(candidates).toEqual([]);
  });

  it('sums the shares over the query words and keeps the best `limit`', () => {
    const candidates = associationCandidates(
      ['hike', 'lake'],
      [
        { term: 'hike', texts: ['hike trail mountain', 'hike trail'] },
        { term: 'lake', texts: ['lake trail boat', 'lake trail boat', 'lake pier'] },
      ],
      1,
    );
    expect(candidates).toEqual([{ word: 'trail', stem: 'trail', share: 1 + 2 / 3 }]);
  });
});

describe('associatedWords', () => {
  it('weighs each candidate by its rarity among the viewer memories, so a word in most of them says nothing', () => {
    const words = associatedWords(
      [
        { word: 'great', share: 1 },
        { word: 'kids', share: 0.5 },
      ],
      { memories: 100, counts: [90, 5] },
      1,
    );
    expect(words).toEqual(['kids']);
  });

  it('keeps the words together in at most `maxMemories` of them, skipping one that would pass it', () => {
    const candidates = [
      { word: 'kids', share: 1 },
      { word: 'zoo', share: 0.5 },
      { word: 'picnic', share: 0.4 },
    ];
    const counts = { memories: 100_000, counts: [5000, 600, 300] };
    expect(associatedWords(candidates, counts, 3, 1000)).toEqual(['zoo', 'picnic']);
    expect(associatedWords(candidates, counts, 3)).toEqual(['kids', 'zoo', 'picnic']);
  });
});
