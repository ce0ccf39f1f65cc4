/** The Reciprocal Rank Fusion constant: a memory at rank r of a list adds 1 / (60 + r). */
export const RRF_K = 60;

/** The two ways recall searches: full text (FTS5, BM25) and vector (cosine KNN). */
export type SearchLeg = 'fts' | 'vector';

/** One leg's result list for one query text, best first. */
export interface RankedList {
  leg: SearchLeg;
  hits: ReadonlyArray<{ id: number; score: number }>;
  /** How much the list counts in the fusion (1 unless said: the recent conversation counts less). */
  weight?: number;
}

/** A memory found by at least one list, with its fused score and the best rank it had in each leg. */
export interface FusedCandidate {
  id: number;
  /** Sum of 1 / (k + rank) over every list that found it. */
  fused: number;
  /** Best 1-based rank in any full-text list, or null. */
  ftsRank: number | null;
  /** Best 1-based rank in any vector list, or null. */
  vectorRank: number | null;
  /** Highest cosine similarity in any vector list, or null. */
  similarity: number | null;
  /** Highest cosine similarity times its list's weight (the recent conversation's lists weigh less), or null. */
  weightedSimilarity: number | null;
}

/**
 * Reciprocal Rank Fusion: each list adds weight / (k + rank) to every memory it holds. Best first;
 * ties go to the better single rank, then the lower id, so the order is deterministic.
 */
export function reciprocalRankFusion(lists: readonly RankedList[], k: number = RRF_K): FusedCandidate[] {
  const candidates = new Map<number, FusedCandidate>();
  for (const list of lists) {
    const weight = list.weight ?? 1;
    list.hits.forEach((hit, index) => {
      const rank = index + 1;
      let candidate = candidates.get(hit.id);
      if (!candidate) {
        candidate = {
          id: hit.id,
          fused: 0,
          ftsRank: null,
          vectorRank: null,
          similarity: null,
          weightedSimilarity: null,
        };
        candidates.set(hit.id, candidate);
      }
      candidate.fused += weight / (k + rank);
      if (list.leg === 'fts') candidate.ftsRank = Math.min(candidate.ftsRank ?? rank, rank);
      else {
        candidate.vectorRank = Math.min(candidate.vectorRank ?? rank, rank);
        candidate.similarity = Math.max(candidate.similarity ?? hit.score, hit.score);
        candidate.weightedSimilarity = Math.max(candidate.weightedSimilarity ?? 0, weight * hit.score);
      }
    });
  }
  return [...candidates.values()].sort((a, b) => b.fused - a.fused || bestRank(a) - bestRank(b) || a.id - b.id);
}

/**
 * The relevance term (0..1) of a fused score: the fraction of the best score possible with lists of
 * this total weight (their count when each weighs 1), so 1 means first in every list that ran.
 */
export function relevanceOf(fused: number, listWeight: number, k: number = RRF_K): number {
  if (listWeight <= 0) return 0;
  return Math.min(1, fused / (listWeight / (k + 1)));
}

/** The total weight of the lists, as `relevanceOf` counts it. */
export function listWeight(lists: readonly RankedList[]): number {
  return lists.reduce((total, list) => total + (list.weight ?? 1), 0);
}

function bestRank(candidate: FusedCandidate): number {
  return Math.min(candidate.ftsRank ?? Number.POSITIVE_INFINITY, candidate.vectorRank ?? Number.POSITIVE_INFINITY);
}
