import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';

/** The name a user goes by in memories: their display name, or their id when they have none. */
export async function displayName(context: EngineContext, userId: string): Promise<string> {
  return (await context.storage.directory.getUser(userId))?.displayName ?? userId;
}

/**
 * CONFLICT when memories would name another user as `name` (their display name, ignoring case, or their id): a user
 * who names themselves is never given another's name, under which what they say would be stored and recalled as said
 * by that user (ADR 39). The other user is not named.
 */
export async function assertNameOfNoOther(context: EngineContext, userId: string, name: string): Promise<void> {
  if ((await context.storage.directory.nameHolders(name, userId)).length === 0) return;
  throw new MnemeError(
    ErrorCode.Conflict,
    `user ${userId} cannot go by "${name}": another user goes by that name, and what ${userId} says would be remembered as theirs; choose another name`,
  );
}
