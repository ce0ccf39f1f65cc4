import { porterStem } from './porter-stem.js';
import { queryTerms } from './query-terms.js';

/**
 * How informative each search word is, from how many memories contain it (BM25's inverse document
 * frequency, `ln(1 + (N - n + 0.5) / (n + 0.5))`, with n at least 1): a word in most memories (the user's
 * name) weighs little, a word in a few weighs much.
 */
export function inverseDocumentFrequency(memories: number, containing: number): number {
  // A word no memory contains weighs like a word in one: it cannot tell memories apart, but the query still
  // asks for it (left at 0 it would outweigh every word the store knows, and a match on those would count
  // for almost nothing in a small store).
  const found = Math.max(1, containing);
  const total = Math.max(memories, found);
  return Math.log(1 + (total - found + 0.5) / (found + 0.5));
}

/** A query text's words as the index stems them, each with its weight (its inverse document frequency). */
export interface WeightedTerms {
  stems: ReadonlyMap<string, number>;
  /** The sum of the weights: what a memory containing every word covers. */
  total: number;
}

/**
 * Words whose stem is remembered: a store's texts reuse their words, and stemming is most of coverage's
 * cost. Two generations of at most this many words each: when the newer is full it becomes the older
 * and the words found in the older are carried back, so the words in use stay remembered (emptying a
 * single map when full, a store of more distinct words than this stemmed them all again each time).
 */
const REMEMBERED_STEMS = 20_000;
let stemmed = new Map<string, string>();
let stemmedBefore = new Map<string, string>();

/** A word of ASCII letters and digits: decomposing it and removing its marks changes nothing. */
const asciiWord = /^[a-z0-9]*$/i;

/**
 * The letters whose marks the full-text index's `unicode61 remove_diacritics 2` removes: Latin ones ("é", "ñ", "ệ",
 * "Å"), but not "ǡ", "ǣ", "ǯ", "ǽ", "ǿ" nor any Greek, Cyrillic or other letter ("έ", "й" stay as they are),
 * measured against SQLite's tokenizer (`src/storage/sqlite/sqlite-porter-stem.test.ts`).
 */
const foldedByIndex = /[\u00c0-\u01df\u01e4-\u01ed\u01f0-\u01fb\u0200-\u024f\u1e00-\u1e9a\u1e9c-\u1ef9\u212b]/gu;

/** Lower case, diacritics removed as the index removes them, Porter-stemmed: how the full-text index (`porter unicode61 remove_diacritics 2`) sees a word. */
export function indexStem(word: string): string {
  let stem = stemmed.get(word);
  if (stem === undefined) {
    // A mark typed apart from its letter (NFD input) the index drops whatever the letter.
    stem =
      stemmedBefore.get(word) ??
      porterStem(
        asciiWord.test(word)
          ? word
          : word.replace(foldedByIndex, (letter) => letter.normalize('NFD')).replace(/\p{M}+/gu, ''),
      );
    if (stemmed.size >= REMEMBERED_STEMS) {
      stemmedBefore = stemmed;
      stemmed = new Map();
    }
    stemmed.set(word, stem);
  }
  return stem;
}

/** The weighted stems of a text's search words, given each word's weight (missing words weigh like a word no memory has). */
export function weightedTerms(text: string, weightOf: (term: string) => number): WeightedTerms {
  const stems = new Map<string, number>();
  for (const term of queryTerms(text)) {
    const stem = indexStem(term);
    stems.set(stem, Math.max(stems.get(stem) ?? 0, weightOf(term)));
  }
  let total = 0;
  for (const weight of stems.values()) total += weight;
  return { stems, total };
}

const wordPattern = /[\p{L}\p{N}\p{M}]+/gu;

/** The distinct stems of a memory's text. */
export function textStems(text: string): Set<string> {
  return new Set((text.toLowerCase().match(wordPattern) ?? []).map(indexStem));
}

/**
 * The calibrated lexical relevance of a text to a query: the share of the query's word weight that the
 * text contains (0 none of its words, 1 all of them). Unlike a rank, it says how well a memory matches,
 * whatever else matched: a memory sharing only a common word (a name) with the query gets little.
 */
export function coverage(query: WeightedTerms, stems: ReadonlySet<string>): number {
  if (query.total <= 0) return 0;
  let covered = 0;
  for (const [stem, weight] of query.stems) if (stems.has(stem)) covered += weight;
  return covered / query.total;
}
