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
 * `text` with each mention of `name` that the label does not already follow followed by the id (`Bob` becomes
 * `Bob (eve)`): a speaker's name where a memory calls them by it ("Bob prefers ..."). Words the name is only part of
 * ("Bobby") are left alone, a mention already labelled is kept as it is, and one in another case is written as the
 * name. With `lines`, only the name that begins a line of a transcript ("Bob: I approve"; an exchange, a search
 * context): what a speaker said is left as they said it, as when the label is computed at the write.
 */
export function withLabel(text: string, name: string, userId: string, lines = false): string {
  const label = labelOf(name, userId);
  const plain = lines
    ? new RegExp(`(?<=^|\\n)${escaped(name)}(?=: )`, 'giu')
    : new RegExp(
        `(?<![\\p{L}\\p{N}])${escaped(name)}(?![\\p{L}\\p{N}])(?!${escaped(label.slice(name.length))})`,
        'giu',
      );
  return text.replace(plain, () => label);
}

/**
 * The text and search context of a memory (`source` its source) with each of `named` (a user's id and the name a
 * memory may call them by) labelled, or null when nothing changes. An exchange is a transcript (`name: what they
 * said`), as is a search context: labelled only where a name begins a line.
 */
export function labelledText(
  memory: { content: string; searchContext: string | null; source: string },
  named: readonly (readonly [userId: string, name: string])[],
): { content: string; searchContext: string | null } | null {
  let { content, searchContext } = memory;
  const transcript = memory.source === 'exchange';
  for (const [userId, name] of named) {
    content = withLabel(content, name, userId, transcript);
    if (searchContext !== null) searchContext = withLabel(searchContext, name, userId, true);
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
const BRACKETS = /[()[\]{}<>\u2768-\u2775\u27e6-\u27ef\u2983-\u2998\u2e28\u2e29\u3008-\u3011]/u;
