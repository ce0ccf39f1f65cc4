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
    // A curly apostrophe is the straight one ("don’t" typed on a phone is "don't").
    const word = ascii
      ? found.endsWith("'s")
        ? found.slice(0, -2)
        : found
      : found.replace(/['’]s$/u, '').replaceAll('’', "'");
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

/**
 * A word that says the opposite of what follows it in its clause ("does not like", "never", "no car"), not in the
 * phrases that say no opposite: "not only ... but also", "no matter", "no doubt", "can't wait".
 */
const negation =
  /\b(?:not(?!\s+only\b)|no(?!\s+(?:matter|doubt)\b)|never|nor|none|nobody|nothing|neither|cannot)\b|n['’]t\b(?!\s+wait\b)/giu;
/** Where what a negation says the opposite of ends: a sentence, a comma or bracket, a "but". */
const clauseEnd = /[.!?;:,()]|\b(?:but|though|although|whereas|however|yet)\b/iu;

/** The words of `text` (as `wordSet` has them) said under a negation of their clause, and those said without. */
function negatedWords(text: string): { negated: Set<string>; plain: Set<string> } {
  const negated = new Set<string>();
  const plain = new Set<string>();
  for (const clause of text.split(new RegExp(clauseEnd.source, 'giu'))) {
    const cut = clause.search(negation);
    const before = cut < 0 ? clause : clause.slice(0, cut);
    for (const word of wordSet(before)) plain.add(word);
    if (cut >= 0) for (const word of wordSet(clause.slice(cut).replace(negation, ' '))) negated.add(word);
  }
  return { negated, plain };
}

/**
 * Whether one statement says the opposite of the other: a word both say is under a negation of its clause in one
 * ("Oz does not like coffee", "Oz has no car", "Oz never eats meat") and never in the other ("Oz likes coffee"), which
 * their words cannot tell (negations are stop words). Clause by clause, so a memory of two negated sentences ("Oz
 * does not eat meat. Oz does not drink.") is no opposite of one of them, nor "Oz likes tea, not coffee" of "Oz likes
 * tea"; a word said both ways in one text decides nothing.
 */
export function isOpposite(text: string, other: string): boolean {
  const one = negatedWords(text);
  const two = negatedWords(other);
  const onlyNegated = (words: { negated: Set<string>; plain: Set<string> }, word: string) =>
    words.negated.has(word) && !words.plain.has(word);
  const onlyPlain = (words: { negated: Set<string>; plain: Set<string> }, word: string) =>
    words.plain.has(word) && !words.negated.has(word);
  for (const word of new Set([...one.negated, ...one.plain])) {
    if ((onlyNegated(one, word) && onlyPlain(two, word)) || (onlyPlain(one, word) && onlyNegated(two, word))) {
      return true;
    }
  }
  return false;
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
