/**
 * Words too common to say two texts are about the same thing. Left out of word sets, so that
 * "Oz is a nurse" and "Oz is a runner" do not look alike because both contain "is a".
 */
const stopWords = new Set(
  (
    'a an the and or but if of at by for with about to from in into on onto off over under up down out ' +
    'is am are was were be been being do does did have has had having will would shall should can could ' +
    'may might must it its this that these those there here then than so as too very just also not no ' +
    'what which who whom whose when where why how all any both each few more most other some such only own same'
  ).split(' '),
);

/** Options of `wordSet`. */
export interface WordSetOptions {
  /** Keep stop words (default false: they are dropped). */
  keepStopWords?: boolean;
  /** Extra words to leave out, lower case (e.g. the speaker's name, which every fact about them shares). */
  ignore?: Iterable<string>;
}

/**
 * The distinct lower-case words of `text`: letters and digits of any script, a possessive "'s"
 * dropped, stop words left out unless asked for.
 */
export function wordSet(text: string, options: WordSetOptions = {}): Set<string> {
  const ignored = options.ignore === undefined ? null : new Set([...options.ignore].map((word) => word.toLowerCase()));
  const words = new Set<string>();
  // An ASCII text's letters and digits are [a-z0-9] once lower-cased: the same words by a plainer pattern.
  const ascii = !nonAscii.test(text);
  // `match` of a global pattern gives the words alone: no match object (with its index, input and groups) a word,
  // which for every memory's text (consolidation's near-duplicate index reads them all) was most of what the
  // collector had to free (2026-12-03, session 19).
  for (const found of text.toLowerCase().match(ascii ? asciiWordPattern : wordPattern) ?? []) {
    const word = ascii ? (found.endsWith("'s") ? found.slice(0, -2) : found) : found.replace(/['’]s$/u, '');
    if (word.length === 0 || ignored?.has(word)) continue;
    if (!options.keepStopWords && stopWords.has(word)) continue;
    words.add(word);
  }
  return words;
}

/**
 * True when `text` says nothing `other` does not: its words (stop words left out, each at its first place) are all
 * in `other`, in the same order. "Oz prefers dark mode" is said by "Oz prefers dark mode in every editor"; "Sam likes
 * coffee" is not said by "Sam likes tea. Lee likes coffee." (each word is there, not in that order in one run) when
 * the two are compared sentence by sentence, and "Alice owes Oz" is not said by "Oz owes Alice".
 */
export function isSaidBy(text: string, other: string): boolean {
  const words = [...wordSet(text)];
  let at = 0;
  for (const word of wordSet(other)) if (at < words.length && word === words[at]) at++;
  return at === words.length;
}

/** A word that says the opposite of the statement without it ("does not like", "no longer", "never"). */
const negation = /\b(?:not|no|never|nor|none|nobody|nothing|neither|cannot)\b|n['’]t\b/gi;

/**
 * Whether a statement is negated: an odd number of negations, so "Oz does not like coffee" is the opposite of "Oz
 * likes coffee" (which their words cannot tell: negations are stop words) and "not a day without no tea" reads as
 * the positive.
 */
export function isNegated(text: string): boolean {
  return ((text.match(negation) ?? []).length & 1) === 1;
}

/** A word: letters and digits of any script, with inner apostrophes followed by letters. */
const wordPattern = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
/** The same in an ASCII text, lower-cased. */
const asciiWordPattern = /[a-z0-9]+(?:'[a-z]+)*/g;
const nonAscii = /[\u0080-\uffff]/;

/**
 * Jaccard word overlap: |A ∩ B| / |A ∪ B|, from 0 (no word in common) to 1 (the same words).
 * Strings are turned into word sets with `wordSet`; two empty sets score 0.
 */
export function jaccard(a: string | ReadonlySet<string>, b: string | ReadonlySet<string>): number {
  const left = typeof a === 'string' ? wordSet(a) : a;
  const right = typeof b === 'string' ? wordSet(b) : b;
  if (left.size === 0 || right.size === 0) return 0;
  const [smaller, larger] = left.size <= right.size ? [left, right] : [right, left];
  let shared = 0;
  for (const word of smaller) if (larger.has(word)) shared++;
  return shared / (left.size + right.size - shared);
}
