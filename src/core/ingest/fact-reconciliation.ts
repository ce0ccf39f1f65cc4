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
  const subject = subjectOf(fact.content, options.speaker);
  const shared = sharedSubject(subject, fact.owner, options.speaker);
  const isAboutSubject = (content: string): Sameness => {
    const other = subjectOf(content, options.speaker);
    if (shared !== null && other !== null && ownedPart(other) === shared) return 'same';
    return sameThing(subject, other, fact.content, content, options.speaker);
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
    const sameness = ownerKey(memory.scope, memory) === fact.owner ? isAboutSubject(memory.content) : false;
    if (!sameness) continue;
    const cites = memory.sourceMessageIds.includes(fact.messageId);
    if (memory.supersededBy !== null && !cites) continue;
    const score = jaccard(words, wordSet(memory.content, { ignore }));
    if (!closest || score > closest.score) closest = { memory, score };
    if (cites || (changed && changed.score >= score)) continue;
    const about = subject ?? subjectOf(memory.content, options.speaker);
    const relation = statementRelation(fact, memory, { threshold: options.threshold, ignore, subject: about });
    // "Oz switched Oz's phone to dark mode" says nothing of "Oz's phone is a Pixel 6": of a thing of the speaker's, a
    // change names a new value ("Oz upgraded Oz's phone to an iPhone 15").
    const namesNew =
      sameness === 'same' || [...valueWords(fact.content)].some((word) => !wordSet(memory.content).has(word));
    if (relation === 'change' && namesNew) changed = { memory, score };
  }
  if (closest && closest.score >= options.threshold) {
    if (closest.memory.sourceMessageIds.includes(fact.messageId)) return { action: 'done', memory: closest.memory };
    const about = subject ?? subjectOf(closest.memory.content, options.speaker);
    const relation = statementRelation(fact, closest.memory, { threshold: options.threshold, ignore, subject: about });
    if (relation === 'restatement') return { action: 'update', memory: closest.memory };
  }
  if (changed) return { action: 'supersede', memory: changed.memory };
  return { action: 'insert' };
}

/**
 * The subject of a fact as reconciliation compares it (`factSubject`): what the speaker passes on is about its own
 * subject ("Oz says Mia moved to Rome" is about Mia), and the speaker's "new" or "current" thing is that thing ("Oz's
 * new manager is Lee" is about Oz's manager).
 */
function subjectOf(text: string, speaker: string): string | null {
  const told = text.trim().replace(new RegExp(`^${escapeRegExp(speaker.trim())}\\s+says\\s+(?:that\\s+)?`, 'iu'), '');
  const bare = told.replace(/(['’]s)\s+(?:new|current|present|latest)\s+/giu, '$1 ');
  return factSubject(bare, speaker);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whether two subjects (`subjectOf`) name the same thing: equal, or one not told; the speaker's own thing and the same
 * thing named bare ("oz's standup" and "standup"); a relative and their name ("oz's sister mia" and "mia"); or a
 * person and a thing of theirs that is no person (`thingOf`) when the person's text names the thing ("Oz upgraded Oz's
 * phone" and "Oz's phone is a Pixel 6") or says it went from a value the other gives it to another ("Oz moved from
 * LastPass to Bitwarden" and "Oz's password manager is LastPass"), `thing`.
 */
function sameThing(
  left: string | null,
  right: string | null,
  leftText: string,
  rightText: string,
  speaker: string,
): Sameness {
  if (left === null || right === null || left === right) return 'same';
  const own = `${speaker.trim().toLowerCase()}'s `;
  const bare = (subject: string) => (subject.startsWith(own) ? subject.slice(own.length) : subject);
  if (bare(left) === bare(right)) return 'same';
  const named = (subject: string) => {
    const owned = ownedPart(subject)?.split(' ') ?? [];
    return owned.length === 2 ? owned[1] : null;
  };
  if (named(left) === right || named(right) === left) return 'same';
  // "Oz upgraded Oz's phone to ..." of "Oz's phone is a Pixel 6"; not "Oz joined Globex, thanks to Oz's brother" of
  // "Oz's brother works at Acme": a person the speaker names is not a thing of theirs (`thingOf`).
  const mentions = (text: string, subject: string, person: string) =>
    thingOf(subject) === person && text.toLowerCase().replaceAll('’', "'").includes(subject);
  if (mentions(leftText, right, left) || mentions(rightText, left, right)) return 'thing';
  // "Oz moved from LastPass to Bitwarden" of "Oz's password manager is LastPass".
  const thing = (subject: string, text: string, person: string, personText: string) =>
    thingOf(subject) === person && replacesNamedValue(personText, text);
  return thing(left, leftText, right, rightText) || thing(right, rightText, left, leftText) ? 'thing' : false;
}

/** How two subjects name the same thing (`sameThing`): as one (`same`), as a person and a thing of theirs (`thing`). */
type Sameness = 'same' | 'thing' | false;

/** Words for people: a subject that owns one of them ("oz's sister", "oz's boss") is another person. */
const people = new Set(
  (
    'sister sisters brother brothers mom mum mother dad father parents parent wife husband partner spouse son sons ' +
    'daughter daughters kid kids child children baby family friend friends boyfriend girlfriend fiance fiancee boss ' +
    'manager lead colleague colleagues coworker coworkers team teammate teammates neighbor neighbour neighbors ' +
    'neighbours cousin cousins aunt uncle niece nephew grandma grandpa grandmother grandfather grandparents roommate ' +
    'doctor therapist teacher coach client clients students student mentor grandson granddaughter grandkids ' +
    'grandchildren grandchild landlord landlady bestie'
  ).split(' '),
);

/** Words before a word for a person that say which one: "best friend", "little brother", "ex wife". */
const personModifiers = new Set(
  'best closest close old little big baby older younger elder eldest oldest youngest twin step ex late new'.split(' '),
);

/**
 * The person whose thing a subject is, when the thing is no person: "oz" of "oz's password" (Oz's password manager);
 * null for "oz's sister" (another person) or a subject that owns nothing.
 */
function thingOf(subject: string): string | null {
  const [possessor, ...owned] = subject.split("'s ");
  // "oz's best friend", "oz's little brother": the word after such a modifier says what the thing is, and a subject
  // cut after one ("oz's best" of "Oz's best friend is in Oslo") may be a person.
  const thing =
    owned
      .join(' ')
      .split(' ')
      .find((word) => !personModifiers.has(word)) ?? '';
  return owned.length > 0 && thing !== '' && !people.has(thing) ? (possessor ?? null) : null;
}

/**
 * Whether `newer` says something went from the value `older` gives a thing to another: "from LastPass to Bitwarden"
 * of "... is LastPass". Only a value said with "is" or "are": "Oz's grandson lives in Oslo" says where someone lives, so
 * "Oz moved from Oslo to Rome" is not about it.
 */
function replacesNamedValue(newer: string, older: string): boolean {
  const from = /\bfrom\s+(\p{Lu}[\p{L}\p{N}]*(?:\s+\p{Lu}[\p{L}\p{N}]*)*)\s+to\s+\p{Lu}/u.exec(newer);
  const value = attributeAndValue(older, []);
  if (!from || !value) return false;
  const named = wordSet(value.valueText);
  return [...wordSet(from[1] ?? '')].every((word) => named.has(word));
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
      /\b(?:live[sd]?|living|based|resides?|residing|settled)\s+(?:in|at|near)\b|\b(?:moved|moving|relocated|relocating)\s+(?:back\s+)?(?:from\s+\p{Lu}\p{L}*(?:\s+\p{Lu}\p{L}*)*\s+)?to\s+\p{Lu}|\b(?:moved|moving)\s+(?:in\s+with|into|out\s+of)\b|\blive[sd]?\s+with\b|\bhome(?:town)?\s+is\s+(?:in\s+)?\p{Lu}/u,
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

/**
 * Words that say a fact changed, whatever else the sentence says (see `saysChange`): also a thing called the speaker's
 * new one ("Oz's new manager"), and a sale with a purchase ("sold Oz's Honda and bought a Tesla").
 */
const changeWords =
  /\b(?:switched|moved|changed|no longer|anymore|instead|replaced|nowadays|from now on|upgraded|migrated|swapped|ditched|got rid of)\b|(?:'s|\bmy|\bour)\s+new\b|\bsold\b[^.;!?]*\b(?:bought|got)\b|\bleft\b[^.;!?]*\b(?:joined|started)\b/i;
/** Change words that give a new number ("Oz is down to 75 kilos", "Oz's daughter turned 6"): a change of a number. */
const numberChange = /(?:\b(?:is|am|are|went|got)|'s|'m|'re)\s+(?:down|up)\s+to\b|\bturned\s+\d/i;
/** "stopped", "quit" or "gave up", not negated. */
const endingVerbs = /\b(?:stopped|quit|gave up)\b/i;
const negatedEnding =
  /\b(?:not|never|won't|wouldn't|don't|doesn't|didn't|can't|cannot|couldn't|will not|would not)\s+(?:\w+\s+)?(?:stopped|quit|gave up)\b/i;
/** What an ending is of: "running" of "stopped running", "Spanish" of "gave up Spanish". */
const endedThing =
  /\b(?:stopped|quit|gave up|no longer)\s+(?:(?:really|even|ever|completely|totally|going|doing)\s+)?([\p{L}\p{N}]+)/giu;
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
  'gave',
  'nowadays',
  'upgraded',
  'migrated',
  'swapped',
  'ditched',
  'sold',
  'turned',
  'just',
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
  return saysOtherChange(said) || numberChange.test(said);
}

/** `saysChange` but for a new number (`numberChange`). */
function saysOtherChange(said: string): boolean {
  return changeWords.test(said) || (endingVerbs.test(said) && !negatedEnding.test(said)) || saysNow(said);
}

/**
 * Whether `newer` says a change of `older`: any change word, but a new number ("turned 7") only of an older that gives
 * a number ("Oz's daughter turned 7" changes "... is 6 years old", not "... plays soccer on Saturdays").
 */
function saysChangeOf(newer: string, older: string): boolean {
  const said = newer.replaceAll('’', "'");
  return saysOtherChange(said) || (numberChange.test(said) && /\p{N}/u.test(withoutDates(older)));
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
 *   (what happened stays true); or, with that same exception, the newer ends what the older says it does
 *   (`endsWhatWasSaid`), gives a slot of the older another value (`newValueOfSlot`) or an attribute of the older
 *   another value (`newValueOfAttribute`), however few words the two share; or the two are similar (Jaccard at or
 *   above `threshold`) and the newer drops a value of the older for another (a capitalised word, a number or an
 *   ordinal: "lives in Oslo" -> "lives in Bergen"), neither being an event, nor the newer saying "also" (`addsOne`:
 *   `unrelated`).
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
  // "Oz says" opens what the speaker passes on: it says nothing of the fact.
  const ignore = [...options.ignore, 'says', ...wordSet(ownerOfSubject(options.subject), { keepStopWords: true })];
  const newerWords = comparedWords(newer.content, ignore);
  const olderWords = comparedWords(older.content, ignore);
  const added = new Set([...newerWords].filter((word) => !olderWords.has(word)));
  const dropped = new Set([...olderWords].filter((word) => !newerWords.has(word)));
  const shared = newerWords.size - added.size;
  const recorded = older.category === 'episode' || older.category === 'exchange';
  const related = shared > 0 && jaccard(newerWords, olderWords) >= options.threshold / 2;
  if (!recorded && related && saysChangeOf(newer.content, older.content)) {
    const ends = saysEnd(newer.content) && !saysEnd(older.content);
    const stillTrue = older.category === 'event' && !saysChange(older.content);
    if ((added.size > 0 || ends) && !stillTrue) return 'change';
  }
  if (!recorded && !(older.category === 'event' && !saysChange(older.content))) {
    if (endsWhatWasSaid(newer.content, olderWords)) return 'change';
    if (newValueOfSlot(newer.content, older.content, added, dropped)) return 'change';
    if (newValueOfAttribute(newer.content, older.content, ignore)) return 'change';
  }
  const similar =
    jaccard(wordSet(newer.content, { ignore: options.ignore }), wordSet(older.content, { ignore: options.ignore })) >=
    options.threshold;
  if (!similar) return 'unrelated';
  const valueReplaced =
    [...valueWords(newer.content)].some((word) => added.has(word)) &&
    [...valueWords(older.content)].some((word) => dropped.has(word));
  const reorderedOrOpposite =
    reordered(newer.content, older.content, ignore) || isOpposite(newer.content, older.content);
  // "Oz's favorite band is also Radiohead" after "... is Muse": one value more, neither the same nor a change.
  if (valueReplaced && !reorderedOrOpposite && addsOne(newer.content)) return 'unrelated';
  // "... is also green" after "... is blue" says one more, and taking its text would lose the blue.
  if (!valueReplaced && !reorderedOrOpposite)
    return addsOne(newer.content) && dropped.size > 0 ? 'unrelated' : 'restatement';
  if (newer.category === 'event' || older.category === 'event') return 'another-event';
  return recorded ? 'restatement' : 'change';
}

/** Whether a statement gives one value more ("also", "too", "as well"), not another one. */
function addsOne(text: string): boolean {
  return /\b(?:also|too|as well)\b/i.test(withoutDates(text));
}

/**
 * Whether `newer` ends something the older statement said it does ("stopped running" of "goes running"): the ended
 * thing, and what it is done to when the newer says ("reading the news" is not "reading a book about cats"), are in the
 * older.
 */
function endsWhatWasSaid(newer: string, olderWords: ReadonlySet<string>): boolean {
  const said = newer.replaceAll('’', "'");
  if (negatedEnding.test(said)) return false;
  return [...said.matchAll(endedThing)].some((match) => {
    if (!olderWords.has((match[1] ?? '').toLowerCase())) return false;
    const rest = said.slice((match.index ?? 0) + match[0].length);
    const object = wordSet(withoutDates(rest).split(endOfObject)[0] ?? '');
    return object.size === 0 || [...object].some((word) => olderWords.has(word));
  });
}

/** Where what an ending is done to stops: "the news" of "stopped reading the news, because ...". */
const endOfObject = /[,;.!?]|\b(?:because|since|as|and|but|so|when|after|before|every|each|for|due)\b/iu;

/**
 * Whether `newer` gives a slot of `older` (`factSlots`: where someone lives or works) another value: both state the
 * slot, the newer names a value the older does not and drops one it named ("works at Acme" -> "a new job at
 * Globex"). `added` and `dropped` are the compared words only one of the two has.
 */
function newValueOfSlot(
  newer: string,
  older: string,
  added: ReadonlySet<string>,
  dropped: ReadonlySet<string>,
): boolean {
  return (
    factSlots.some(({ pattern }) => statesNow(pattern, newer) && pattern.test(older)) &&
    [...valueWords(newer)].some((word) => added.has(word)) &&
    [...valueWords(older)].some((word) => dropped.has(word))
  );
}

/**
 * Whether a text states a slot (`factSlots`) other than in the past of living or working: "Oz lived in Paris as a
 * student" and "Oz worked at Google for five years" say where Oz was, not where Oz is ("moved to", a change, counts).
 */
function statesNow(pattern: RegExp, text: string): boolean {
  const matches = [...text.matchAll(new RegExp(pattern.source, 'gu'))];
  return matches.some((match) => !/^(?:lived|worked|resided)\b/iu.test(match[0]));
}

/** Words of an attribute that say which one, not what it is: "Actually Oz's new manager" is Oz's manager. */
const attributeNoise = [
  'actually',
  'says',
  'new',
  'current',
  'present',
  'latest',
  'really',
  'days',
  'nowadays',
  'lately',
  'currently',
];
/** Attributes that hold one value at a time by their name: a favourite, a usual, a preferred one. */
const singleValued = /\b(?:favou?rite|usual|preferred|main|go-to)\b/i;
/** A preposition opening a value: "in" of "in Paris this week", "at" of "at 10am"; a value without one says what. */
const valuePreposition = /^(?:in|at|on|with|from|until|till|by|near|into|for|to|of|off|under|over|out)\b/i;
/** "now", "from now on", "these days" closing a statement: the value is a new one. */
const closingNow = /\s+(?:now|from now on|these days|nowadays)$/i;

/**
 * Whether `newer` gives an attribute another value, said as "<attribute> is <value>" by both: "Oz's favorite color is
 * blue" -> "Actually Oz's favorite color is green now", "Oz's manager is Dana" -> "Oz's new manager is Lee", "Oz is
 * training for a 10k race" -> "... for a marathon now" (a verb in "-ing" opening the value belongs to the attribute).
 * The same attribute (its words, the speaker's name and `attributeNoise` aside), values of at most five words sharing
 * none, and either value naming something (a capitalised word or a number), the attribute holding one value
 * (`singleValued`), or the newer saying so ("now", "new", "actually"); what the subject itself is ("Oz is a nurse" ->
 * "Oz is a doctor now") only when the newer says so. "Oz's kids are great" and "Oz's kids are at school" are two
 * things said, not a change, and a value said "also" or "too" is one more.
 */
function newValueOfAttribute(newer: string, older: string, ignore: readonly string[]): boolean {
  const newerParts = attributeAndValue(newer, ignore);
  const olderParts = attributeAndValue(older, ignore);
  if (!newerParts || !olderParts) return false;
  const sameAttribute =
    newerParts.attribute.size === olderParts.attribute.size &&
    [...newerParts.attribute].every((word) => olderParts.attribute.has(word));
  if (!sameAttribute || [...newerParts.value].some((word) => olderParts.value.has(word))) return false;
  // "Oz's sister is a nurse" and "... is in Paris this week", "... is on Monday" and "... is at 10am": where or when
  // is another attribute than what, or another one than when.
  if (newerParts.preposition !== olderParts.preposition) return false;
  if (addsOne(newerParts.valueText)) return false;
  // "Oz is a nurse" -> "Oz is a doctor now": what the subject itself is changes only when the newer says so.
  if (newerParts.attribute.size === 0) return newerParts.marked;
  const names = valueWords(newerParts.valueText).size > 0 || valueWords(olderParts.valueText).size > 0;
  return names || singleValued.test(older) || newerParts.marked;
}

function attributeAndValue(
  text: string,
  ignore: readonly string[],
): { attribute: Set<string>; value: Set<string>; valueText: string; preposition: string; marked: boolean } | null {
  const sentence = withoutDates(text)
    .trim()
    .replace(/[.!]+$/u, '');
  const copula = /\s(?:is|are)\s+(?:now\s+)?/iu.exec(sentence);
  if (!copula || /[.;!?]/u.test(sentence)) return null;
  // "Oz is training for a marathon": what Oz is doing is the attribute, "a marathon" its value.
  const said = sentence.slice(copula.index + copula[0].length).replace(closingNow, '');
  const doing = /^\p{L}+ing(?:\s+(?:for|to|in|on|at|with|as|about))?\s+/iu.exec(said)?.[0] ?? '';
  const attributeText = `${sentence.slice(0, copula.index)} ${doing}`;
  const valueText = said.slice(doing.length);
  const value = wordSet(valueText, { ignore });
  if (value.size === 0 || value.size > 5) return null;
  const marked =
    /\bnow\b/i.test(copula[0]) ||
    closingNow.test(sentence) ||
    /^(?:actually|now)\b/i.test(sentence) ||
    /\bnew\b/i.test(attributeText);
  return {
    attribute: wordSet(attributeText, { ignore: [...ignore, ...attributeNoise] }),
    value,
    valueText: ` ${valueText}`,
    preposition: valuePreposition.exec(valueText)?.[0].toLowerCase() ?? '',
    marked,
  };
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

/** Ordinal words, values as numbers are: "the third floor" -> "the fifth floor". */
const ordinals = new Set(
  'first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth'.split(' '),
);

/**
 * The values a statement gives, lower case: numbers, ordinal words ("third"), and capitalised words that do not start a
 * sentence ("Oslo", "PostgreSQL", "Wednesday"), dates left out.
 */
function valueWords(text: string): Set<string> {
  const values = new Set<string>();
  const undated = withoutDates(text);
  for (const match of undated.matchAll(/[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu)) {
    const word = match[0];
    const before = undated.slice(0, match.index ?? 0);
    const startsSentence = /(?:^|[.!?:]\s*)\s*$/u.test(before) || before.trim() === '';
    if (
      /\p{N}/u.test(word) ||
      ordinals.has(word.toLowerCase()) ||
      (/^\p{Lu}/u.test(word) && !startsSentence && word !== 'I')
    ) {
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
