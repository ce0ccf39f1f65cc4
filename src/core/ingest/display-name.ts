import type { EngineContext } from '../engine-context.js';
import { nameKey, unfitName } from '../name-key.js';
import { ASSISTANT_ID } from '../reserved-ids.js';

/**
 * The name a user goes by in memories ("Oz: ...", "Oz prefers ..."; ADR 40): their display name, followed by their
 * id when another user can be taken for that name (`Bob (eve)`: Eve named herself Bob, or "bob", "B0b", "Воb" with
 * a Cyrillic о; or "Assistant", the default assistant's id, even before it has replied) and always when it has
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
  // The assistant of exchanges that name none is always there to be taken for, before it has replied anywhere.
  if (userId !== ASSISTANT_ID && key === ASSISTANT_KEY) return `${name} (${userId})`;
  return (await directory.hasNamesake(userId, key)) ? `${name} (${userId})` : name;
}

/** The key of the default assistant's id: not a user, so not a row to find (ADR 38). */
const ASSISTANT_KEY = nameKey(ASSISTANT_ID);
const BRACKETS = /[()[\]{}<>\u2768-\u2775\u27e6-\u27ef\u2983-\u2998\u2e28\u2e29\u3008-\u3011]/u;
