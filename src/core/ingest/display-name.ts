import type { EngineContext } from '../engine-context.js';
import { nameKey, unfitName } from '../name-key.js';
import { hasBrackets, labelOf, readsLikeOwnActor } from '../speaker-label.js';

/**
 * The name a user goes by in memories ("Oz: ...", "Oz prefers ..."; ADR 40): their display name, followed by their
 * id when another user can be taken for that name (`Bob (eve)`: Eve named herself Bob, or "bob", "B0b", "Воb" with
 * a Cyrillic о; or "Assistant", the default assistant's id, even before it has replied, or "Maintenance", another
 * of mneme's own actors, under which an assistant may reply) and always when it has
 * brackets (`Bob (bob)` would pass for a label); their id alone when they have no name or one that cannot stand
 * before a colon (stored before such names were refused). Ids are given by whoever runs mneme and are unique: they
 * are shown as they are. A namesake who arrives after the memory is written gets it labelled then (ADR 44: the storage
 * labels the memories that call a user by a name another user can now be taken for, with the write that makes them
 * known or names them).
 */
export async function displayName(context: EngineContext, userId: string): Promise<string> {
  const { directory } = context.storage;
  const name = (await directory.getUser(userId))?.displayName ?? null;
  if (name === null || unfitName(name) !== null) return userId;
  // A name with brackets ("Bob (bob)") could pass for a labelled one: it is always labelled.
  if (hasBrackets(name)) return labelOf(name, userId);
  const key = nameKey(name);
  // mneme's own actors have no row to find (ADR 38), and each may send assistant replies (`assistantId`, an ingest's
  // sender with the role `assistant`): the default assistant before it has replied anywhere, `maintenance` or
  // `extractor:gpt` once an administrator's bot replied under it, are always there to be taken for.
  if (readsLikeOwnActor(key) && key !== nameKey(userId)) return labelOf(name, userId);
  return (await directory.hasNamesake(userId, key)) ? labelOf(name, userId) : name;
}
