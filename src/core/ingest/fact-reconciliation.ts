import type { MemoryChanges } from '../../storage/memory-store.js';
import { factSubject } from '../fact-subject.js';
import type { ExtractedFact } from '../ports/fact-extractor.js';
import { ownerKey, ownerPrefix, sectorOf } from '../scope.js';
import { isOpposite, isSaidBy, jaccard, wordSet } from '../similarity.js';
import type { Memory } from '../types.js';

/** One extracted fact, placed: its text, category, the owner key it is stored under, the message it comes from. */
export interface PlacedFact {
  content: string;
  /** An `event` that gives another value than a similar event is another event, not a change. */
  category: string;
  owner: string;
  messageId: number;
}

/** What `reconcileFact` compares a fact with, and how. */
export interface ReconciliationOptions {
  /** Jaccard word overlap at or above which two texts say the same thing (`similarityThreshold`). */
  threshold: number;
  /** The speaker's display name: its words, and "others", are left out, as every fact about the speaker shares them. */
  speaker: string;
  /** Facts of the same message already to be inserted, with their owner keys. */
  pending: ReadonlyArray<{ content: string; owner: string }>;
}

/**
 * What reconciliation reads of a memory: its text and category, the ids of its owner key, the
 * messages it cites, and the newer memory that supersedes it, if any.
 */
export type ReconciliationCandidate = Pick<
  Memory,
  | 'content'
  | 'category'
  | 'scope'
  | 'userId'
  | 'channelId'
  | 'projectId'
  | 'topicId'
  | 'sourceMessageIds'
  | 'supersededBy'
>;

/** What to do with one extracted fact. */
export type FactReconciliation<Candidate extends ReconciliationCandidate> =
  | { action: 'insert' }
  | { action: 'update'; memory: Candidate }
  | { action: 'done'; memory: Candidate }
  | { action: 'supersede'; memory: Candidate }
  | { action: 'repeated' };

/**
 * How a newer statement stands to an older one about the same subject: it says the same again
 * (`restatement`), says that what held has changed (`change`), is another event like it
 * (`another-event`), or is not close enough to tell (`unrelated`).
 */
export type StatementRelation = 'restatement' | 'change' | 'another-event' | 'unrelated';

/**
 * Decides what one fact of a message writes, given the memories found for that message. Only
 * candidates of the fact's owner and about the same subject are compared (`factSubject`, read with
 * the speaker: "Sam's team" and "Lee's team" are different facts however alike; a fact whose subject
 * cannot be told is compared with any), and a memory a newer one already supersedes is history, left
 * alone. The closest (the first of equals) by Jaccard word overlap decides: at or above the
 * threshold, when it already cites the message nothing is to be done (`done`: an earlier run or
 * fact did the work), and when the fact says it again (`restatement`) it is updated (`update`). A
 * fact that says what a candidate said has changed (`statementRelation`: change words, or a value
 * replaced) becomes a new memory that supersedes it (`supersede`, the closest such); otherwise the
 * fact is new (`insert`). A fact that says what a pending fact of the same owner and subject says is
 * `repeated`: nothing to write. No I/O.
 */
export function reconcileFact<Candidate extends ReconciliationCandidate>(
  fact: PlacedFact,
  candidates: readonly Candidate[],
  options: ReconciliationOptions,
): FactReconciliation<Candidate> {
  const ignore = [...wordSet(options.speaker, { keepStopWords: true }), 'others'];
  const words = wordSet(fact.content, { ignore });
  const subject = factSubject(fact.content, options.speaker);
  const shared = sharedSubject(subject, fact.owner, options.speaker);
  const isAboutSubject = (content: string) => {
    const other = factSubject(content, options.speaker);
    return subject === null || other === null || other === subject || (shared !== null && ownedPart(other) === shared);
  };
  const isRepeated = options.pending.some(
    (pending) =>
      pending.owner === fact.owner &&
      isAboutSubject(pending.content) &&
      jaccard(words, wordSet(pending.content, { ignore })) >= options.threshold,
  );
  if (isRepeated) return { action: 'repeated' };
  let closest: { memory: Candidate; score: number } | null = null;
  let changed: { memory: Candidate; score: number } | null = null;
  for (const memory of candidates) {
    if (ownerKey(memory.scope, memory) !== fact.owner || !isAboutSubject(memory.content)) continue;
    const cites = memory.sourceMessageIds.includes(fact.messageId);
    if (memory.supersededBy !== null && !cites) continue;
    const score = jaccard(words, wordSet(memory.content, { ignore }));
    if (!closest || score > closest.score) closest = { memory, score };
    if (cites || (changed && changed.score >= score)) continue;
    const about = subject ?? factSubject(memory.content, options.speaker);
    const relation = statementRelation(fact, memory, { threshold: options.threshold, ignore, subject: about });
    if (relation === 'change') changed = { memory, score };
  }
  if (closest && closest.score >= options.threshold) {
    if (closest.memory.sourceMessageIds.includes(fact.messageId)) return { action: 'done', memory: closest.memory };
    const about = subject ?? factSubject(closest.memory.content, options.speaker);
    const relation = statementRelation(fact, closest.memory, { threshold: options.threshold, ignore, subject: about });
    if (relation === 'restatement') return { action: 'update', memory: closest.memory };
  }
  if (changed) return { action: 'supersede', memory: changed.memory };
  return { action: 'insert' };
}

/**
 * What a fact of a room says "our" of: a room fact whose subject the speaker owns ("our standup", written
 * "Oz's standup") is about the room's thing, which another member's "our standup" ("Lee's standup") is
 * about too. The owned part ("standup"), or null for any other fact.
 */
function sharedSubject(subject: string | null, owner: string, speaker: string): string | null {
  if (subject === null || !owner.startsWith(ownerPrefix.room)) return null;
  const [possessor, ...owned] = subject.split("'s ");
  return possessor === speaker.toLowerCase() && owned.length > 0 ? owned.join("'s ") : null;
}

/** "standup" of "lee's standup"; null for a subject that owns nothing. */
function ownedPart(subject: string): string | null {
  const [, ...owned] = subject.split("'s ");
  return owned.length > 0 ? owned.join("'s ") : null;
}

/**
 * Ways of saying the same kind of fact in other words: where someone lives ("lives in Oslo", "moved to
 * Bergen", "is based in Lyon") and where they work ("works at Acme", "joined Initech"). Each adds its
 * slot to the words two statements are compared by, so a new value of the slot reads as a change of it.
 */
const factSlots: ReadonlyArray<{ slot: string; pattern: RegExp; words: readonly string[] }> = [
  {
    slot: 'slot:home',
    pattern:
      /\b(?:live[sd]?|living|based|resides?|residing|settled)\s+(?:in|at|near)\b|\b(?:moved|moving|relocated|relocating)\s+(?:back\s+)?to\s+\p{Lu}|\bhome(?:town)?\s+is\s+(?:in\s+)?\p{Lu}/u,
    words: ['live', 'based', 'resides', 'settled', 'moved', 'relocated', 'home'],
  },
  {
    slot: 'slot:work',
    pattern:
      /\b(?:works?|working|worked|employed)\s+(?:at|for)\s+\p{Lu}|\b(?:joined|hired\s+by|job\s+at|started\s+at)\s+\p{Lu}/u,
    words: ['work', 'employed', 'joined', 'hired', 'job'],
  },
];

/**
 * The words other statements of the same kind of fact use ("live", "moved", "based" for where someone
 * lives), for a text that states one: the search for the memories a fact may change looks for them too,
 * so "Oz moved to Bergen" finds "Oz lives in Oslo".
 */
export function slotSearchTerms(text: string): string[] {
  return factSlots.flatMap(({ pattern, words }) => (pattern.test(text) ? words : []));
}

/** Words that say a fact changed, whatever else the sentence says (see `saysChange`). */
const changeWords = /\b(?:switched|moved|changed|no longer|anymore|instead|replaced|nowadays)\b/i;
/** "stopped" or "quit", not negated. */
const endingVerbs = /\b(?:stopped|quit)\b/i;
const negatedEnding =
  /\b(?:not|never|won't|wouldn't|don't|doesn't|didn't|can't|cannot|couldn't|will not|would not)\s+(?:\w+\s+)?(?:stopped|quit)\b/i;
/** Change words that end what was true without naming a new value: "Oz no longer eats meat". */
const endingWords = /\b(?:no longer|anymore)\b/i;
/** "now" after an auxiliary: "Oz is now a nurse", "the standup's now on Wednesday". */
const nowAfterAuxiliary = /(?:\b(?:is|are|am|was|were|has|have|had|does|do|did|will|can)|'s|'re|'m)\s+now\b/i;
/** "now" before a word that is no function word, not opening the sentence: "Oz now lives in Bergen". */
const nowBeforeVerb = /[^.!?:;,\s-]\s+now\s+([a-z][a-z']*)/g;
const notAfterNow = new Set(
  'a an the for on in at to of and or but that then is was with by from as so too it this these those more'.split(' '),
);
/** The words of change words, left out when comparing what two statements say. */
const changeVocabulary = [
  'switched',
  'moved',
  'changed',
  'now',
  'longer',
  'anymore',
  'instead',
  'replaced',
  'stopped',
  'quit',
  'nowadays',
];

const monthNames = 'January|February|March|April|May|June|July|August|September|October|November|December';
/** Dates the extractor writes, which say when, not what: "(mentioned on 5 March 2024)", "7 May 2023", "June 2023". */
const datePatterns = [
  /\(mentioned on [^)]*\)/gi,
  new RegExp(`\\b\\d{1,2} (?:${monthNames}) \\d{4}\\b`, 'gi'),
  new RegExp(`\\b(?:${monthNames}) \\d{4}\\b`, 'gi'),
];

/**
 * Whether a text says something changed: a change word ("switched", "moved", "changed", "no longer",
 * "anymore", "instead", "replaced", "nowadays"), "stopped" or "quit" not negated, or "now" where it
 * says so (`saysNow`).
 */
export function saysChange(text: string): boolean {
  const said = text.replaceAll('’', "'");
  return changeWords.test(said) || (endingVerbs.test(said) && !negatedEnding.test(said)) || saysNow(said);
}

/**
 * Whether a text says "now" of a change: after an auxiliary ("Oz is now a nurse") or before a verb
 * inside its sentence ("Oz now lives in Bergen"). Not "for a while now", "right now", "learning German
 * now", nor a sentence's opening "Now" or "and now Oz ..." (a turn of the story, not a new value).
 */
function saysNow(text: string): boolean {
  if (nowAfterAuxiliary.test(text)) return true;
  for (const match of text.matchAll(nowBeforeVerb)) {
    if (!notAfterNow.has(match[1] ?? '')) return true;
  }
  return false;
}

/** Whether a text ends what was true ("no longer", "anymore", "stopped", "quit"), negation aside. */
function saysEnd(text: string): boolean {
  const said = text.replaceAll('’', "'");
  return endingWords.test(said) || (endingVerbs.test(said) && !negatedEnding.test(said));
}

/**
 * How `newer` stands to `older`, two facts about the same subject (`subject`, whose name, like the
 * speaker's in `ignore`, every such fact shares). Their words are compared without dates, change
 * words and that name ("Oz's standup" still shares "standup"):
 * - `change`: the newer says something changed (`saysChange`), is related to the older (a word
 *   shared, and a word overlap of at least half the threshold) and adds a word (or ends what the
 *   older said: "no longer", "stopped"), unless the older is an event that was no change itself
 *   (what happened stays true); or the two are similar (Jaccard at or above `threshold`) and the
 *   newer drops a value of the older for another (a capitalised word or a number: "lives in Oslo"
 *   -> "lives in Bergen"), neither being an event.
 *   The same holds when one says the opposite of the other (`isOpposite`) ("Oz likes coffee" -> "Oz does not like coffee"), and
 *   when the two put their shared words in another order ("Alice owes Oz" -> "Oz owes
 *   Alice", "allergic to peanuts but not almonds" -> "... to almonds but not peanuts"): who does what to whom
 *   changed, which a word overlap cannot see, so the older stays as history rather than being rewritten.
 * - `another-event`: similar, a value replaced (or the words reordered), and one of them an event ("met Lee" /
 *   "met Sam").
 * - `restatement`: similar, no value replaced, the shared words in the same order.
 * - `unrelated`: otherwise.
 * Episodes and exchanges record what was said, so nothing changes them.
 */
export function statementRelation(
  newer: Pick<PlacedFact, 'content' | 'category'>,
  older: Pick<Memory, 'content' | 'category'>,
  options: { threshold: number; ignore: readonly string[]; subject: string | null },
): StatementRelation {
  const ignore = [...options.ignore, ...wordSet(ownerOfSubject(options.subject), { keepStopWords: true })];
  const newerWords = comparedWords(newer.content, ignore);
  const olderWords = comparedWords(older.content, ignore);
  const added = new Set([...newerWords].filter((word) => !olderWords.has(word)));
  const dropped = new Set([...olderWords].filter((word) => !newerWords.has(word)));
  const shared = newerWords.size - added.size;
  const recorded = older.category === 'episode' || older.category === 'exchange';
  const related = shared > 0 && jaccard(newerWords, olderWords) >= options.threshold / 2;
  if (!recorded && related && saysChange(newer.content)) {
    const ends = saysEnd(newer.content) && !saysEnd(older.content);
    const stillTrue = older.category === 'event' && !saysChange(older.content);
    if ((added.size > 0 || ends) && !stillTrue) return 'change';
  }
  const similar =
    jaccard(wordSet(newer.content, { ignore: options.ignore }), wordSet(older.content, { ignore: options.ignore })) >=
    options.threshold;
  if (!similar) return 'unrelated';
  const replaced =
    ([...valueWords(newer.content)].some((word) => added.has(word)) &&
      [...valueWords(older.content)].some((word) => dropped.has(word))) ||
    reordered(newer.content, older.content, ignore) ||
    isOpposite(newer.content, older.content);
  if (!replaced) return 'restatement';
  if (newer.category === 'event' || older.category === 'event') return 'another-event';
  return recorded ? 'restatement' : 'change';
}

/**
 * True when the words two statements share (dates, change words and `ignore` left out) come in another order. The
 * words of a list ("tea and coffee", "German, French and Italian", "Lee and Sam") are left out: naming its items in
 * another order says the same.
 */
function reordered(newer: string, older: string, ignore: readonly string[]): boolean {
  const inOrder = (text: string) => [
    ...wordSet(withoutDates(text).replace(wordList, ' '), { ignore: [...ignore, ...changeVocabulary] }),
  ];
  const newerWords = inOrder(newer);
  const olderWords = new Set(inOrder(older));
  const sharedNewer = newerWords.filter((word) => olderWords.has(word));
  const newerShared = new Set(sharedNewer);
  const sharedOlder = [...olderWords].filter((word) => newerShared.has(word));
  return sharedNewer.some((word, at) => word !== sharedOlder[at]);
}

/** A list of single words: "tea and coffee", "German, French and Italian", "tea or coffee". */
const wordList = /[\p{L}\p{N}]+(?:\s*,\s*[\p{L}\p{N}]+)*,?\s+(?:and|or|&)\s+[\p{L}\p{N}]+/giu;

/**
 * The name a subject starts with, which every fact about it shares: "sam" of "sam's team" (the team
 * is what the facts are about, so it counts as a shared word), all of "lee chen".
 */
function ownerOfSubject(subject: string | null): string {
  return subject?.split("'s ")[0] ?? '';
}

/** The words two statements are compared by: dates, change words and `ignore` left out. */
function comparedWords(text: string, ignore: readonly string[]): Set<string> {
  const words = wordSet(withoutDates(text), { ignore: [...ignore, ...changeVocabulary] });
  for (const { slot, pattern } of factSlots) if (pattern.test(text)) words.add(slot);
  return words;
}

function withoutDates(text: string): string {
  return datePatterns.reduce((rest, pattern) => rest.replace(pattern, ' '), text);
}

/**
 * The values a statement gives, lower case: numbers, and capitalised words that do not start a
 * sentence ("Oslo", "PostgreSQL", "Wednesday"), dates left out.
 */
function valueWords(text: string): Set<string> {
  const values = new Set<string>();
  const undated = withoutDates(text);
  for (const match of undated.matchAll(/[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu)) {
    const word = match[0];
    const before = undated.slice(0, match.index ?? 0);
    const startsSentence = /(?:^|[.!?:]\s*)\s*$/u.test(before) || before.trim() === '';
    if (/\p{N}/u.test(word) || (/^\p{Lu}/u.test(word) && !startsSentence && word !== 'I')) {
      values.add(word.toLowerCase().replace(/['’]s$/u, ''));
    }
  }
  return values;
}

/**
 * Whether a restatement's text should replace the memory's: not when the memory already says all of it, in that
 * order, nor when it has fewer distinct words than the memory ("Oz really prefers dark mode in every editor" of "Oz
 * prefers dark mode in every editor and terminal Oz uses"): taking it would drop details from what recall finds.
 * Of two texts with as many words, the newer.
 */
function saysMore(fact: string, memory: string): boolean {
  return wordSet(fact).size >= wordSet(memory).size && !isSaidBy(fact, memory);
}

/**
 * The changes that fold a fact of a message (its id, and when it was said in epoch milliseconds) into
 * `memory`: the message cited, the higher importance, the fact's text when it says more (`saysMore`), its category
 * unless the memory is pinned, and the time it was said when that is later than the memory's
 * `validFrom` (a memory's time is that of the latest message saying it). The new text's vector is
 * left to the caller.
 */
export function factChanges(
  memory: Pick<Memory, 'content' | 'category' | 'importance' | 'pinned' | 'sourceMessageIds' | 'validFrom'>,
  fact: ExtractedFact,
  message: { id: number; saidAt: number },
): MemoryChanges {
  const changes: MemoryChanges = {
    sourceMessageIds: [...memory.sourceMessageIds, message.id],
    importance: Math.max(memory.importance, fact.importance),
  };
  if (message.saidAt > Date.parse(memory.validFrom)) changes.validFrom = message.saidAt;
  if (memory.content !== fact.content && saysMore(fact.content, memory.content)) changes.content = fact.content;
  if (memory.category !== fact.category && !memory.pinned) {
    changes.category = fact.category;
    changes.sector = sectorOf(fact.category);
  }
  return changes;
}
