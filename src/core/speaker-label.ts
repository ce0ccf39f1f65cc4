import { nameKey, unfitName } from './name-key.js';
import { EXTRACTOR_ACTOR_PREFIX, RESERVED_IDS } from './reserved-ids.js';

/**
 * How a speaker's label reads in a memory (ADR 40): `Bob (eve)`, the name followed by the id, when another user can
 * be taken for the name. Pure: used when a memory is written (`displayName`) and when a namesake arrives after it was
 * (ADR 44: the storage's `know` and name writes label the memories that call a user by a name another user can now be
 * taken for).
 */
export function labelOf(name: string, userId: string): string {
  return `${name} (${userId})`;
}

/** Whether a name is always labelled: it has brackets (`Bob (bob)` could pass for a label of a namesake). */
export function hasBrackets(name: string): boolean {
  return BRACKETS.test(name.normalize('NFKC'));
}

/**
 * Whether a name's key reads like the id of one of mneme's own actors (`assistant`, `maintenance`, `extractor:gpt`,
 * ...): they have no rows to find (ADR 38), and a name reading like one is always labelled.
 */
export function readsLikeOwnActor(key: string): boolean {
  return OWN_ACTOR_KEYS.has(key) || key.startsWith(EXTRACTOR_KEY);
}

/**
 * The name a memory written before may call user `userId` by without a label, when `name` is their display name: null
 * when it never stood unlabelled (no name, one that cannot stand before a colon, with brackets, or reading like one of
 * mneme's own actors: such names are shown as the id, or always labelled).
 */
export function plainName(name: string | null, userId: string): string | null {
  if (name === null || unfitName(name) !== null || hasBrackets(name)) return null;
  const key = nameKey(name);
  return readsLikeOwnActor(key) && key !== nameKey(userId) ? null : name;
}

/**
 * Whether a user who renames themselves from `left` to `name` leaves no name: the new one is the old one in another
 * case, so every mention of the old one is found as a mention of the new one when a namesake arrives (`withLabel` reads
 * any case), and nobody can take the old one without being a namesake of the new one. A name that only reads alike
 * (same key, another spelling: "Bob" and "Bób") is left: a namesake's arrival looks for the new spelling only.
 */
export function sameNameInAnotherCase(left: string, name: string): boolean {
  return new RegExp(`^${escaped(name)}$`, 'iu').test(left);
}

/**
 * The name user `userId` left (`left`, now called `name`) to label in a memory whose text may have been made before they
 * left it, as `[userId, left]`; none when it never stood unlabelled, reads as their id (nobody can take it without
 * being labelled themselves) or is their name in another case (it is not left).
 */
export function leftName(userId: string, left: string, name: string | null): [string, string][] {
  const plain = plainName(left, userId);
  if (plain === null || nameKey(plain) === nameKey(userId)) return [];
  return name !== null && sameNameInAnotherCase(plain, name) ? [] : [[userId, plain]];
}

/** A name a user left (`users.left_name`), and when (`at`, ms). */
export interface LeftName {
  name: string;
  at: number;
}

/**
 * The names `users.left_name` holds, oldest first (`leftAt`, `users.left_at`, the time of the last): a JSON list of
 * `[name, at]` since attack 31d, or the one name session 31 wrote. A name held plain never starts with "[" (a name with
 * brackets is always labelled, never left), and code that reads the column as one name finds brackets in a list.
 */
export function storedLeftNames(stored: string | null, leftAt: number | null): LeftName[] {
  if (stored === null) return [];
  if (!stored.startsWith('[')) return leftAt === null ? [] : [{ name: stored, at: leftAt }];
  try {
    const list: unknown = JSON.parse(stored);
    if (!Array.isArray(list)) return [];
    return list.flatMap((entry: unknown) =>
      Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number'
        ? [{ name: entry[0], at: entry[1] }]
        : [],
    );
  } catch {
    return [];
  }
}

/** `users.left_name` holding `names` (oldest first), as `withLeftName` writes it; `users.left_at` is the last one's `at`. */
export function leftNamesText(names: readonly LeftName[]): string {
  return JSON.stringify(names.map((left) => [left.name, left.at]));
}

/**
 * `users.left_name` once the user leaves `name` at `at`: the names left before are kept (the last `KEPT_LEFT_NAMES`),
 * so a user who renames themselves twice while a text is being made leaves both names to label in it (attack 31d).
 */
export function withLeftName(stored: string | null, leftAt: number | null, name: string, at: number): string {
  const kept = storedLeftNames(stored, leftAt)
    .filter((left) => left.name !== name)
    .slice(-(KEPT_LEFT_NAMES - 1));
  return leftNamesText([...kept, { name, at }]);
}

/**
 * The names the speakers of a memory left (`leaving`) at or after `since` (the time of the messages its text was made
 * from) to label in it (`leftName` of each), but a name another of its `speakers` reads as now (its name or id key):
 * the mention is theirs, labelled or not ("Bob (robert)" written while Eve was called Bob too stays Bob's; attack 31d).
 */
export function leftNamesIn(
  leaving: readonly { id: string; display_name: string | null; left_name: string; left_at: number | string }[],
  since: number,
  speakers: readonly { id: string; name_key: string; id_key: string }[],
): [string, string][] {
  return leaving.flatMap((user) =>
    storedLeftNames(user.left_name, Number(user.left_at))
      .filter((left) => left.at >= since)
      .flatMap((left) => leftName(user.id, left.name, user.display_name))
      .filter(([, left]) => {
        const key = nameKey(left);
        return !speakers.some((other) => other.id !== user.id && (other.name_key === key || other.id_key === key));
      }),
  );
}

/**
 * Whether a name has a character outside ASCII. The label reads a name in any case as Unicode folds it ("ΝΊΚΟΣ" is
 * "Νίκος", "🙂CHLOË" holds "Chloë"), which neither a text index (PostgreSQL's lowers only ASCII in the C locale; SQLite's
 * reads "🙂chloe" as one word) nor an ASCII case fold of the text can be trusted to find: a rename or a namesake's arrival
 * reads every memory that names a user with such a name (attack 31d). An ASCII name is found by the ASCII fold once
 * the only two other letters Unicode folds to ASCII ones (`ASCII_FOLDED`: long s, Kelvin sign) are written as them.
 */
export function beyondAscii(name: string): boolean {
  return NON_ASCII.test(name);
}

/** The letters outside ASCII that Unicode's case folding makes ASCII ones, and those ones: "ſ" is "s", "\u212a" "k". */
export const ASCII_FOLDED = { from: '\u017f\u212a', to: 'sk' } as const;

/**
 * Where a name is a speaker's in a text: `mentions`, every mention as a whole word ("Bob prefers ...": a fact of the
 * speaker's own); `lines`, where it begins a line of a transcript ("Bob: I approve": an exchange, a search context);
 * `speakers`, where it stands before a colon at the start of a line or after a sentence's end (an episode's "Ann: I
 * approve. Bob: Noted."): the rest of a text that quotes others is theirs, and a name that is also a word ("I", "The")
 * is not the speaker there (attack 30d).
 */
export type LabelPlaces = 'mentions' | 'lines' | 'speakers';

/**
 * `text` with each mention of `name` in `places` that the label does not already follow followed by the id (`Bob`
 * becomes `Bob (eve)`). Words the name is only part of ("Bobby") are left alone, a mention already labelled is kept as
 * it is, and one in another case is written as the name. What stands in brackets without a space (the id of a label,
 * `Bob (bob)`) is never labelled: "bob" there is another user's id, not Eve's name (attack 30d).
 */
export function withLabel(text: string, name: string, userId: string, places: LabelPlaces = 'mentions'): string {
  const label = labelOf(name, userId);
  const at = escaped(name);
  const plain =
    places === 'mentions'
      ? `(?<![\\p{L}\\p{N}])${at}(?![\\p{L}\\p{N}])(?!${escaped(label.slice(name.length))})`
      : places === 'lines'
        ? `(?<=^|\\n)${at}(?=: )`
        : `(?<=^|\\n|[.!?\u2026] )${at}(?=: )`;
  const pattern = new RegExp(`(\\([^()\\s]+\\))|${plain}`, 'giu');
  return text.replace(pattern, (found: string, id: string | undefined) => (id === undefined ? label : found));
}

/**
 * The text and search context of a memory (`source` its source, `userId` its user) with each of `named` (a user's id
 * and the name a memory may call them by) labelled, or null when nothing changes. An exchange is a transcript (`name:
 * what they said`), as is a search context: labelled only where a name begins a line. A memory whose user is the one
 * named (their fact) is labelled at every mention, and so is one in prose (a chat model's episode: "Bob approved the
 * budget"). One that quotes speakers (an offline episode, "Ann: I approve. Bob: Noted.") quotes others too: it is
 * labelled only where the name stands as a speaker's, and what Ann said stays as she said it (attack 30d).
 */
export function labelledText(
  memory: { content: string; searchContext: string | null; source: string; userId: string | null },
  named: readonly (readonly [userId: string, name: string])[],
): { content: string; searchContext: string | null } | null {
  let { content, searchContext } = memory;
  const transcript = memory.source === 'exchange';
  const quotes = SPEAKER_MARK.test(content);
  for (const [userId, name] of named) {
    const places = transcript ? 'lines' : memory.userId === userId || !quotes ? 'mentions' : 'speakers';
    content = withLabel(content, name, userId, places);
    if (searchContext !== null) searchContext = withLabel(searchContext, name, userId, 'lines');
  }
  return content === memory.content && searchContext === memory.searchContext ? null : { content, searchContext };
}

function escaped(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

/** The keys of mneme's own actors' ids (`assistant`, `maintenance`, ...). */
const OWN_ACTOR_KEYS = new Set(RESERVED_IDS.map(nameKey));
/** The key of the prefix of extraction's actors (`extractor:gpt` reads as `extractorgpt`). */
const EXTRACTOR_KEY = nameKey(EXTRACTOR_ACTOR_PREFIX);
/** A speaker quoted (`Ann: ...`) at the start of a line or after a sentence's end. */
const SPEAKER_MARK = /(?:^|\n|[.!?\u2026] )[^\n.!?\u2026:]+: /u;
/** How many names a user left `users.left_name` keeps (an export carries as many: `leftNames`). */
export const KEPT_LEFT_NAMES = 8;
const NON_ASCII = /[\u0080-\u{10ffff}]/u;
const BRACKETS = /[()[\]{}<>\u2768-\u2775\u27e6-\u27ef\u2983-\u2998\u2e28\u2e29\u3008-\u3011]/u;
