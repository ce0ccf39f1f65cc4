import type { EngineContext } from '../engine-context.js';
import { nameKey, unfitName } from '../name-key.js';
import { EXTRACTOR_ACTOR_PREFIX, RESERVED_IDS } from '../reserved-ids.js';

/**
 * The name a user goes by in memories ("Oz: ...", "Oz prefers ..."; ADR 40): their display name, followed by their
 * id when another user can be taken for that name (`Bob (eve)`: Eve named herself Bob, or "bob", "B0b", "Воb" with
 * a Cyrillic о; or "Assistant", the default assistant's id, even before it has replied, or "Maintenance", another
 * of mneme's own actors, under which an assistant may reply) and always when it has
 * brackets (`Bob (bob)` would pass for a label); their id alone when they have no name or one that cannot stand
 * before a colon (stored before such names were refused). Ids are given by whoever runs mneme and are unique: they
 * are shown as they are.
 */
export async function displayName(context: EngineContext, userId: string): Promise<string> {
  const { directory } = context.storage;
  const name = (await directory.getUser(userId))?.displayName ?? null;
  if (name === null || unfitName(name) !== null) return userId;
  // A name with brackets ("Bob (bob)") could pass for a labelled one: it is always labelled.
  if (BRACKETS.test(name.normalize('NFKC'))) return `${name} (${userId})`;
  const key = nameKey(name);
  // mneme's own actors have no row to find (ADR 38), and each may send assistant replies (`assistantId`, an ingest's
  // sender with the role `assistant`): the default assistant before it has replied anywhere, `maintenance` or
  // `extractor:gpt` once an administrator's bot replied under it, are always there to be taken for.
  if (readsLikeOwnActor(key) && key !== nameKey(userId)) return `${name} (${userId})`;
  return (await directory.hasNamesake(userId, key)) ? `${name} (${userId})` : name;
}

/** The keys of mneme's own actors' ids (`assistant`, `maintenance`, ...): no users, so no rows to find (ADR 38). */
const OWN_ACTOR_KEYS = new Set(RESERVED_IDS.map(nameKey));
/** The key of the prefix of extraction's actors (`extractor:gpt` reads as `extractorgpt`). */
const EXTRACTOR_KEY = nameKey(EXTRACTOR_ACTOR_PREFIX);

/** Whether a name's key reads like the id of one of mneme's own actors. */
function readsLikeOwnActor(key: string): boolean {
  return OWN_ACTOR_KEYS.has(key) || key.startsWith(EXTRACTOR_KEY);
}
const BRACKETS = /[()[\]{}<>\u2768-\u2775\u27e6-\u27ef\u2983-\u2998\u2e28\u2e29\u3008-\u3011]/u;
