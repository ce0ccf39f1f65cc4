import type { MemoryStore } from '../storage/memory-store.js';

/** How many of a text's terms a bounded candidate search keeps. */
export interface RarestTermsBound {
  /** Terms kept at most. */
  maxTerms: number;
  /** Memories (full-text index entries) the kept terms may be in, together; the rarest term is kept whatever its count. */
  maxPostings: number;
}

/**
 * The rarest of `terms` among the memories of `owners` (the ones to be searched; `null`: every
 * owner), in their order: rarest first (ties: the first), at most
 * `maxTerms`, and only while the memories they are in add up to at most `maxPostings` (the rarest
 * one always). A full-text search by them reads at most about that many index entries, whatever
 * the size of the store: the candidate searches of extraction and consolidation look for memories
 * that share a text's telling words, and a memory sharing only words that hundreds of memories have
 * is no near match for either. Counts are exact up to `maxPostings` (`termCounts` with `exactUpTo`),
 * so when every term is in more memories than that, the first term is the one kept.
 */
export async function rarestTerms(
  memories: Pick<MemoryStore, 'termCounts'>,
  terms: readonly string[],
  owners: readonly string[] | null,
  bound: RarestTermsBound,
): Promise<string[]> {
  return (await rarestTermCounts(memories, terms, owners, bound)).map((kept) => kept.term);
}

/** `rarestTerms` with the count of each term kept (exact up to `maxPostings`; more: `maxPostings + 1`). */
export async function rarestTermCounts(
  memories: Pick<MemoryStore, 'termCounts'>,
  terms: readonly string[],
  owners: readonly string[] | null,
  bound: RarestTermsBound,
): Promise<Array<{ term: string; count: number }>> {
  if (terms.length === 0) return [];
  // Exact counts (up to the bound): the choice depends on the memories alone, not on what a process
  // remembers, so a run resumed after a crash searches as an uninterrupted one would.
  const { counts } = await memories.termCounts(terms, { owners, exactUpTo: bound.maxPostings });
  const byRarity = terms
    .map((_term, index) => ({ index, count: counts[index] ?? 0 }))
    .sort((left, right) => left.count - right.count || left.index - right.index);
  const kept = new Set<number>();
  let postings = 0;
  for (const { index, count } of byRarity) {
    if (kept.size >= bound.maxTerms || (kept.size > 0 && postings + count > bound.maxPostings)) break;
    kept.add(index);
    postings += count;
  }
  return terms.flatMap((term, index) => (kept.has(index) ? [{ term, count: counts[index] ?? 0 }] : []));
}
