import type { EngineContext } from '../engine-context.js';
import { nameKey, unfitName } from '../name-key.js';

/**
 * The name a user goes by in memories ("Oz: ...", "Oz prefers ..."; ADR 40): their display name, followed by their
 * id when another user can be taken for that name (`Bob (eve)`: Eve named herself Bob, or "bob", "B0b", "Воb" with
 * a Cyrillic о), or their id alone when they have no name or one that cannot stand before a colon (stored before
 * such names were refused). Ids are given by whoever runs mneme and are unique: they are shown as they are.
 */
export async function displayName(context: EngineContext, userId: string): Promise<string> {
  const { directory } = context.storage;
  const name = (await directory.getUser(userId))?.displayName ?? null;
  if (name === null || unfitName(name) !== null) return userId;
  const key = nameKey(name);
  const spellings = [...new Set([name, name.toLowerCase(), key])];
  return (await directory.hasNamesake(userId, key, spellings)) ? `${name} (${userId})` : name;
}
