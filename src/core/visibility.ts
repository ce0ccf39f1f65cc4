import { channelOutsideAudience } from './derived-audience.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import { ownerKey, visibleOwners } from './scope.js';
import type { Memory, Viewer } from './types.js';

/**
 * The memory with this id, or NOT_FOUND, also when a viewer is given and may not see it (so a
 * caller cannot tell another user's memory from a missing one): of an owner not the viewer's, or archived by the
 * audience check (one its owner's readers may not read a channel of; ADR 52), which only the administrator reads.
 */
export async function requireVisible(context: EngineContext, id: number, viewer: Viewer | undefined): Promise<Memory> {
  const [memory] = await context.storage.memories.get([id]);
  if (
    !memory ||
    (viewer &&
      (!visibleOwners(viewer).includes(ownerKey(memory.scope, memory)) || (await beyondItsReaders(context, memory))))
  ) {
    throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
  }
  return memory;
}

/**
 * Whether `memory` is archived and its owner's readers may not read a channel it came from: what the audience check
 * archives (ADR 5, a memory of no user with no room whose readers read all its channels). It stays in its owner, so
 * reads for a viewer leave it out (ADR 52); an archived memory is rare, and only it costs the check.
 */
export async function beyondItsReaders(
  context: EngineContext,
  memory: Memory,
  read?: Parameters<typeof channelOutsideAudience>[2],
): Promise<boolean> {
  return memory.archivedAt !== null && (await channelOutsideAudience(context, memory, read)) !== null;
}

/**
 * Whether anyone but `userId` reads the channel (a public one, or one with another member): a reply recorded
 * there is read by them, so a face that records one recalls only the channel's memories for it (ADR 47).
 */
export function othersReadChannel(
  channel: { visibility: string; members: readonly string[] } | null,
  userId: string,
): boolean {
  return channel !== null && (channel.visibility === 'public' || channel.members.some((member) => member !== userId));
}

/**
 * Whether every reader of the channel may see the memory: a global one, or one of that channel's. A user's personal
 * memory, a project's or a topic's is not theirs: a reply built on one is not recorded where another reader came
 * while it was made (ADR 47).
 */
export function channelReadersSee(memory: Pick<Memory, 'scope' | 'channelId'>, channelId: string): boolean {
  return memory.scope === 'global' || (memory.scope === 'room' && memory.channelId === channelId);
}

/** Where a user stands in a channel: one of its members, not one, or it does not exist (yet). */
export type Standing = 'member' | 'outsider' | 'absent';

/**
 * Where the user stands in the channel. A face that records a reply compares it with where they stood when the request
 * came: a user removed meanwhile, or whose channel was declared meanwhile without them, is not made a member again by
 * the reply's write (ADR 18, attack 32d).
 */
export function standingIn(channel: { members: readonly string[] } | null, userId: string): Standing {
  if (channel === null) return 'absent';
  return channel.members.includes(userId) ? 'member' : 'outsider';
}
