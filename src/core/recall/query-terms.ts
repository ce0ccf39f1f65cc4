/** At most this many distinct terms go into one full-text search; the rest of a long text is ignored. */
export const MAX_QUERY_TERMS = 64;
/** Longer "words" (hashes, base64, runs of one letter) are not searched for. */
export const MAX_TERM_CHARS = 100;

/** Words that match nearly every memory: dropped from full-text queries unless nothing else is left. */
const stopwords = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both
  but by can could did do does doing down during each few for from further had has have having he her here hers
  herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
  once only or other our ours ourselves out over own same she should so some such than that the their theirs them
  themselves then there these they this those through to too under until up very was we were what when where which
  while who whom why will with would you your yours yourself yourselves s t d ll m re ve`.split(/\s+/),
);

const wordPattern = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * The full-text terms of a text: lower-cased runs of letters and digits (what the FTS5 `unicode61`
 * tokenizer sees as words), stopwords dropped unless only stopwords are left, deduplicated in order,
 * at most {@link MAX_QUERY_TERMS}. Punctuation and operators never survive, so `node.js` gives
 * `node`, `js`; `C++` gives `c`; `"x` gives `x`; an emoji gives nothing.
 */
export function queryTerms(text: string): string[] {
  const words = (text.toLowerCase().match(wordPattern) ?? []).filter((word) => word.length <= MAX_TERM_CHARS);
  const meaningful = words.filter((word) => !stopwords.has(word));
  return [...new Set(meaningful.length > 0 ? meaningful : words)].slice(0, MAX_QUERY_TERMS);
}

/** The whitespace-separated words of a text, as a person would count them. */
export function queryWords(text: string): string[] {
  return text.split(/\s+/u).filter((word) => word.length > 0);
}

/** A query of more than this many words is also searched with its first {@link SHORT_QUERY_WORDS} words. */
export const MULTI_QUERY_MIN_WORDS = 8;
export const SHORT_QUERY_WORDS = 5;

/**
 * The texts one recall searches with: the query, with the channel's latest user messages appended
 * when given (conversation-aware recall), and, when that text has more than 7 words, a second query
 * made of its first 5 words (multi-query), so the question itself is not drowned by a long text.
 */
export function shapeQueries(query: string, recentUserMessages: readonly string[] = []): string[] {
  const trimmed = query.trim();
  const appended = recentUserMessages
    .map((message) => message.trim())
    .filter((message) => message.length > 0 && message !== trimmed);
  const full = [trimmed, ...appended].join('\n');
  const words = queryWords(full);
  if (words.length < MULTI_QUERY_MIN_WORDS) return [full];
  return [full, words.slice(0, SHORT_QUERY_WORDS).join(' ')];
}
