import type { MemoryStore } from '../../storage/memory-store.js';
import { indexStem, inverseDocumentFrequency } from './calibrated-relevance.js';
import { queryTerms } from './query-terms.js';

/** One query word with the texts of the memories it was found in (the viewer's, best matches first). */
export interface TermNeighbourhood {
  term: string;
  texts: readonly string[];
}

/** How many memories a word must share with a query word to be associated with it. */
export const MIN_SHARED_MEMORIES = 2;

/**
 * Candidate words associated with the query's words: for each query word, the words of the memories it is
 * found in, scored by the share of those memories they occur in (their words counted once a memory), summed
 * over the query words. Words of the query, shorter than 3 letters or numbers are not candidates; a word in
 * fewer than {@link MIN_SHARED_MEMORIES} of a query word's memories is not associated with it. Best first, at
 * most `limit`, each as a surface word (the first seen) with its score.
 */
export function associationCandidates(
  query: readonly string[],
  neighbourhoods: readonly TermNeighbourhood[],
  limit: number,
): Array<{ word: string; stem: string; share: number }> {
  const queryStems = new Set(query.map(indexStem));
  const scores = new Map<string, { word: string; share: number }>();
  for (const { texts } of neighbourhoods) {
    if (texts.length === 0) continue;
    const counts = new Map<string, { word: string; count: number }>();
    for (const text of texts) {
      const seen = new Set<string>();
      for (const word of queryTerms(text)) {
        if (word.length < 3 || /^\p{N}+$/u.test(word)) continue;
        const stem = indexStem(word);
        if (queryStems.has(stem) || seen.has(stem)) continue;
        seen.add(stem);
        const entry = counts.get(stem);
        if (entry) entry.count += 1;
        else counts.set(stem, { word, count: 1 });
      }
    }
    for (const [stem, { word, count }] of counts) {
      if (count < MIN_SHARED_MEMORIES) continue;
      const entry = scores.get(stem);
      const share = count / texts.length;
      if (entry) entry.share += share;
      else scores.set(stem, { word, share });
    }
  }
  return [...scores.entries()]
    .map(([stem, { word, share }]) => ({ word, stem, share }))
    .sort((a, b) => b.share - a.share || (a.stem < b.stem ? -1 : a.stem > b.stem ? 1 : 0))
    .slice(0, limit);
}

/**
 * The associated words worth searching: each candidate's share times its inverse document frequency among
 * the viewer's memories (a word in most memories, a name or "great", says nothing), best first, at most
 * `limit`, and together in at most `maxMemories` of them (a word that would pass that is skipped): searching
 * them ranks every memory that holds one, so their memories bound the search's cost whatever the store's size.
 */
export function associatedWords(
  candidates: ReadonlyArray<{ word: string; share: number }>,
  counts: { memories: number; counts: readonly number[] },
  limit: number,
  maxMemories = Number.POSITIVE_INFINITY,
): string[] {
  const ranked = candidates
    .map((candidate, index) => {
      const count = counts.counts[index] ?? 0;
      return {
        word: candidate.word,
        count,
        weight: candidate.share * inverseDocumentFrequency(counts.memories, count),
      };
    })
    .sort((a, b) => b.weight - a.weight || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
  const words: string[] = [];
  let memories = 0;
  for (const { word, count } of ranked) {
    if (words.length >= limit) break;
    if (memories + count > maxMemories) continue;
    memories += count;
    words.push(word);
  }
  return words;
}

/** The bounds of one recall's association search (`associatedSearchWords`). */
export const ASSOCIATION = {
  /** The query's rarest words whose memories are read, at most. */
  queryWords: 3,
  /** The best memories read for each of them. */
  memoriesPerWord: 20,
  /** A query word in more than this share of the viewer's memories (a name, "like") has no associations read. */
  maxShare: 0.2,
  /**
   * Nor one in more than this many of them, and the associated words searched are together in at most this
   * many: ranking a word's memories costs in proportion to how many hold it (the full-text leg's threshold
   * for a very common term is the same).
   */
  maxMemories: 1_000,
  /** Candidates whose rarity is counted. */
  candidates: 40,
  /** Associated words searched, at most. */
  words: 6,
} as const;

/**
 * The words associated with a query's words in the viewer's own memories (ADR 26): for each of the query's
 * rarest words (in at least 2 and at most `ASSOCIATION.maxShare` of the memories of `owners`), the memories
 * of `owners` it is found in, best first; the words they share, by `associationCandidates` and
 * `associatedWords`. "Melanie's family" finds her turns about "the kids" when other memories say "family"
 * and "kids" together. Every count and every memory read is of `owners` only, so no word comes from a
 * memory the viewer may not see. Three kinds of storage call: two `termCounts`, at most
 * `ASSOCIATION.queryWords` searches and one `get`.
 */
export async function associatedSearchWords(
  memories: Pick<MemoryStore, 'termCounts' | 'searchText' | 'get'>,
  terms: readonly string[],
  counts: { memories: number; counts: readonly number[] },
  owners: readonly string[],
  includeFaded: boolean,
): Promise<string[]> {
  const rare = terms
    .map((term, index) => ({ term, count: counts.counts[index] ?? 0 }))
    .filter(
      ({ count }) =>
        count >= MIN_SHARED_MEMORIES &&
        count <= Math.min(ASSOCIATION.maxShare * counts.memories, ASSOCIATION.maxMemories),
    )
    .sort((a, b) => a.count - b.count || (a.term < b.term ? -1 : a.term > b.term ? 1 : 0))
    .slice(0, ASSOCIATION.queryWords);
  if (rare.length === 0) return [];
  const found = await Promise.all(
    rare.map(({ term }) =>
      memories.searchText({ terms: [term], owners, limit: ASSOCIATION.memoriesPerWord, includeFaded }),
    ),
  );
  const read = await memories.get([...new Set(found.flat().map((hit) => hit.id))]);
  const textOf = new Map(read.map((memory) => [memory.id, memory.content]));
  const neighbourhoods = rare.map(({ term }, index) => ({
    term,
    texts: (found[index] ?? []).flatMap((hit) => textOf.get(hit.id) ?? []),
  }));
  const candidates = associationCandidates(terms, neighbourhoods, ASSOCIATION.candidates);
  if (candidates.length === 0) return [];
  const background = await memories.termCounts(
    candidates.map((candidate) => candidate.word),
    { owners },
  );
  return associatedWords(candidates, background, ASSOCIATION.words, ASSOCIATION.maxMemories);
}
