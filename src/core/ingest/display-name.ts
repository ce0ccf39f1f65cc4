import type { EngineContext } from '../engine-context.js';

/** The name a user goes by in memories: their display name, or their id when they have none. */
export async function displayName(context: EngineContext, userId: string): Promise<string> {
  return (await context.storage.directory.getUser(userId))?.displayName ?? userId;
}
