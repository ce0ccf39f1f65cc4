import { describe, expect, it } from 'vitest';
import { factsInPlaceOfTurns } from './turn-standins.js';

interface Hit {
  memory: { id: number; category: string; sourceMessageIds: number[] };
  score: number;
}

const hit = (id: number, category: string, sourceMessageIds: number[], score: number): Hit => ({
  memory: { id, category, sourceMessageIds },
  score,
});
const promote = (fact: Hit, turn: Hit): Hit => ({ ...fact, score: Math.max(fact.score, turn.score) });
const ids = (hits: readonly Hit[]) => hits.map((kept) => kept.memory.id);

describe('factsInPlaceOfTurns', () => {
  it('drops a turn whose message a better fact already cites', () => {
    const hits = [hit(1, 'fact', [10], 0.9), hit(2, 'exchange', [10], 0.8), hit(3, 'exchange', [11], 0.7)];
    expect(ids(factsInPlaceOfTurns(hits, 10, promote))).toEqual([1, 3]);
  });

  it('puts the facts of a turn found further down in the place of the turn, with its score', () => {
    const hits = [
      hit(1, 'exchange', [10], 0.9),
      hit(2, 'exchange', [11], 0.8),
      hit(3, 'exchange', [12], 0.7),
      hit(4, 'fact', [11], 0.6),
      hit(5, 'event', [11], 0.5),
    ];
    const kept = factsInPlaceOfTurns(hits, 10, promote);
    expect(ids(kept)).toEqual([1, 4, 5, 3]);
    expect(kept.map((entry) => entry.score)).toEqual([0.9, 0.8, 0.8, 0.7]);
  });

  it('keeps a turn whose facts are beyond the window, and a turn a fact cites only in part', () => {
    const hits = [
      hit(1, 'exchange', [10], 0.9),
      hit(2, 'exchange', [11, 12], 0.8),
      hit(3, 'fact', [11], 0.7),
      hit(4, 'fact', [10], 0.6),
    ];
    expect(ids(factsInPlaceOfTurns(hits, 3, promote))).toEqual([1, 2, 3, 4]);
  });

  it('drops the turns an episode in the window covers, without moving the episode up', () => {
    const hits = [
      hit(1, 'exchange', [10], 0.9),
      hit(2, 'episode', [10, 11], 0.8),
      hit(3, 'exchange', [11], 0.7),
      hit(4, 'exchange', [10], 0.6),
      hit(5, 'exchange', [13], 0.5),
      hit(6, 'fact', [14], 0.45),
      hit(7, 'episode', [12, 13], 0.4),
    ];
    const kept = factsInPlaceOfTurns(hits, 10, promote);
    expect(ids(kept)).toEqual([2, 6, 7]);
    expect(kept.map((entry) => entry.score)).toEqual([0.8, 0.45, 0.4]);
  });
});
