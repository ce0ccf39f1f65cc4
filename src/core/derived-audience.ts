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
 * the room of a channel it cites whose readers may read every channel it cites, where exactly they see it; when
 * no such room exists (messages of two channels with different readers), into its user's personal scope (the
 * user's own words, restated in both), and, for a memory of no user, it is archived as `forget` does.
 * Personal memories stay: the speaker's own. Returns how many memories moved or were archived.
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
  // Whether every reader of room `room` may read channel `channelId`.
  const roomReads = async (channelId: string, room: string): Promise<boolean> =>
    channelId === room || membership.reaches(channelId, 'channel', room);
  let moved = 0;
  for (const { memory, channelIds } of await context.storage.memories.citedChannels(query)) {
    if (memory.scope === 'personal') continue;
    let outside = false;
    for (const channelId of channelIds) {
      if (!(await readable(channelId, memory))) {
        outside = true;
        break;
      }
    }
    if (!outside) continue;
    const from = ownerKey(memory.scope, memory);
    const write = { at: context.clock.now(), actor: AUDIENCE_ACTOR };
    // The room of a channel it cites whose readers may read every channel it cites: with messages of two
    // channels, the room of one may not read the other.
    let room: string | undefined;
    for (const candidate of channelIds) {
      let readsAll = true;
      for (const channelId of channelIds) {
        if (!(await roomReads(channelId, candidate))) {
          readsAll = false;
          break;
        }
      }
      if (readsAll) {
        room = candidate;
        break;
      }
    }
    if (room !== undefined) {
      await context.storage.memories.moveTo(
        memory.id,
        { scope: 'room', channelId: room },
        {
          ...write,
          reason: `moved from ${from} into the room of channel ${room}: not everyone who sees ${from} may read the channels it came from`,
        },
      );
    } else if (memory.userId !== null) {
      // No room's readers may read every channel it cites: its user's own (what that user said).
      await context.storage.memories.moveTo(
        memory.id,
        { scope: 'personal' },
        {
          ...write,
          reason: `moved from ${from} to its user's own: the channels it came from (${channelIds.join(', ')}) have no room whose readers may read them all`,
        },
      );
    } else {
      // Of no user, with no room for it (never written so by mneme's extraction): archived, as `forget` does.
      if (memory.archivedAt === null || memory.fadedAt !== null) {
        await context.storage.memories.archive([memory.id], {
          ...write,
          reason: `archived from ${from}: the channels it came from (${channelIds.join(', ')}) have no readers in common any more`,
        });
      }
    }
    moved++;
  }
  return moved;
}
