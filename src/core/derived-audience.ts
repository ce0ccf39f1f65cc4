import type { EngineContext } from './engine-context.js';
import { createMembership } from './membership.js';
import { ownerKey, ownerPrefix } from './scope.js';
import type { Memory } from './types.js';

/** The actor of the version row an audience change writes. */
export const AUDIENCE_ACTOR = 'audience';

/**
 * After an audience changed (ADR 5, 2026-12-03): a channel's (its visibility or members, `channelId`), or a
 * topic's or project's (its members, `owner`: `topic:<id>`, `project:<id>`). A memory seen by more than the
 * readers of a channel it cites (a global fact of a public channel made private, a session or project
 * memory of a channel that a member of the topic or project cannot read, now or since joining) moves into
 * that channel's room, where exactly its readers see it. Personal memories stay: the speaker's own.
 * Returns how many memories moved.
 */
export async function keepWithinSources(
  context: EngineContext,
  query: { channelId: string } | { owner: string },
): Promise<number> {
  const membership = createMembership(context);
  const reaches = new Map<string, boolean>();
  const readable = async (channelId: string, memory: Memory): Promise<boolean> => {
    const owner = ownerKey(memory.scope, memory);
    const key = `${channelId} ${owner}`;
    let answer = reaches.get(key);
    if (answer === undefined) {
      answer =
        memory.scope === 'global'
          ? await membership.isPublic(channelId)
          : memory.scope === 'room'
            ? owner === ownerKey('room', { channelId }) ||
              (await membership.reaches(channelId, 'channel', owner.slice(ownerPrefix.room.length)))
            : memory.scope === 'session'
              ? await membership.reaches(channelId, 'topic', owner.slice(ownerPrefix.session.length))
              : memory.scope === 'project'
                ? await membership.reaches(channelId, 'project', owner.slice(ownerPrefix.project.length))
                : true;
      reaches.set(key, answer);
    }
    return answer;
  };
  let moved = 0;
  for (const { memory, channelIds } of await context.storage.memories.citedChannels(query)) {
    if (memory.scope === 'personal') continue;
    let outside: string | undefined;
    for (const channelId of channelIds) {
      if (!(await readable(channelId, memory))) {
        outside = channelId;
        break;
      }
    }
    if (outside === undefined) continue;
    const from = ownerKey(memory.scope, memory);
    await context.storage.memories.moveToRoom(memory.id, outside, {
      at: context.clock.now(),
      actor: AUDIENCE_ACTOR,
      reason: `moved from ${from} into the room of channel ${outside}: not everyone who sees ${from} may read that channel`,
    });
    moved++;
  }
  return moved;
}
