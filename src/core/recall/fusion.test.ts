import { describe, expect, it } from 'vitest';
import { RRF_K, reciprocalRankFusion, relevanceOf } from './fusion.js';

const hits = (...ids: number[]) => ids.map((id, index) => ({ id, score: 1 - index / 10 }));

describe('reciprocal rank fusion', () => {
  it('adds 1 / (60 + rank) from every list that holds a memory', () => {
    const [first] = reciprocalRankFusion([
      { leg: 'fts', hits: hits(7, 8) },
      { leg: 'vector', hits: hits(9, 7) },
    ]);
    expect(first?.id).toBe(7);
    expect(first?.fused).toBeCloseTo(1 / (RRF_K + 1) + 1 / (RRF_K + 2), 12);
    expect(first).toMatchObject({ ftsRank: 1, vectorRank: 2, similarity: 0.9 });
  });

  it('ranks a memory found by both legs above memories each leg ranked first alone', () => {
    const fused = reciprocalRankFusion([
      { leg: 'fts', hits: hits(1, 3) },
      { leg: 'vector', hits: hits(2, 3) },
    ]);
    expect(fused.map((candidate) => candidate.id)).toEqual([3, 1, 2]);
  });

  it('keeps the best rank per leg and the highest similarity across several queries', () => {
    const [candidate] = reciprocalRankFusion([
      { leg: 'vector', hits: [{ id: 4, score: 0.2 }] },
      { leg: 'vector', hits: [...hits(5, 6), { id: 4, score: 0.7 }] },
      { leg: 'fts', hits: hits(6, 6, 4) },
    ]).filter((entry) => entry.id === 4);
    expect(candidate).toMatchObject({ vectorRank: 1, ftsRank: 3, similarity: 0.7 });
  });

  it('breaks ties by the better single rank, then by the lower id', () => {
    const fused = reciprocalRankFusion([
      { leg: 'fts', hits: hits(20, 10) },
      { leg: 'vector', hits: hits(11, 21) },
    ]);
    expect(fused.map((candidate) => candidate.id)).toEqual([11, 20, 10, 21]);
  });

  it('measures relevance against the best fused score possible with the lists that ran', () => {
    expect(relevanceOf(2 / (RRF_K + 1), 2)).toBeCloseTo(1, 12);
    expect(relevanceOf(1 / (RRF_K + 1), 2)).toBeCloseTo(0.5, 12);
    expect(relevanceOf(1 / (RRF_K + 1), 1)).toBeCloseTo(1, 12);
    expect(relevanceOf(1 / (RRF_K + 11), 1)).toBeCloseTo(61 / 71, 12);
    expect(relevanceOf(0.5, 0)).toBe(0);
  });
});
