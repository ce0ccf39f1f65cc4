import { randomUUID } from 'node:crypto';
import type { CitedChannels, MoveTarget } from '../storage/memory-store.js';
import type { EngineContext } from './engine-context.js';
import { errorMessage } from './errors.js';
import { createMembership } from './membership.js';
import { AUDIENCE_ACTOR } from './reserved-ids.js';
import { ownerKey, ownerPrefix } from './scope.js';
import type { Memory } from './types.js';

/** The `maintenance_state` task of audience changes: one row per change in progress (`changeAudience`). */
export const AUDIENCE_TASK = 'audience';

/**
 * How long an audience change marked and not checked is left to the process that marked it: it writes the
 * membership and moves the memories within milliseconds (seconds when it waits for the store), and one that died
 * in between leaves the mark for `maintain` to check after that.
 */
export const AUDIENCE_RECHECK_AFTER_MS = 60_000;

/** What an audience change names: a channel, or the owner key of a topic or project. */
export type AudienceChange = { channelId: string } | { owner: string };

/**
 * Runs `write` (a membership or visibility write) as an audience change that no crash leaves wider than its
 * sources (ADR 5, 2026-12-03): a mark of its own first (a `maintenance_state` row of task `audience`, keyed by a
 * new id, `watermark` the time, the change in `details`), then the write, then the memories checked
 * (`keepWithinSources`) when `narrows` says the write took a reader away, then the mark deleted. A process that
 * dies between the write and the moves leaves its mark for `recheckAudiences`. One mark per change: two changes of
 * one channel at once each keep theirs until their own check is done.
 */
export async function changeAudience<T>(
  context: EngineContext,
  change: AudienceChange,
  write: () => Promise<T>,
  narrows: (written: T) => boolean = () => true,
): Promise<T> {
  const { maintenanceState } = context.storage;
  const { key, watermark, details } = audienceMark(change, context.clock.now());
  // Neither the mark nor its removal waits for the disk (session 18: two fsyncs at each sender's first message in a
  // channel halved the rate of one ingest() a message): the write's durable commit makes the mark durable with it,
  // and a removal a power cut undoes only checks the change again.
  const deferred = { deferred: true };
  await maintenanceState.set(key, AUDIENCE_TASK, { watermark, details }, deferred);
  let written: T;
  try {
    written = await write();
  } catch (error) {
    // Refused: nothing changed, nothing to check.
    await maintenanceState.remove(key, AUDIENCE_TASK, deferred).catch(() => {});
    throw error;
  }
  if (narrows(written)) await keepWithinSources(context, change);
  await maintenanceState.remove(key, AUDIENCE_TASK, deferred);
  return written;
}

/** A new audience change's mark: its `maintenance_state` row (key, task `audience`, the time, the change). */
export function audienceMark(
  change: AudienceChange,
  at: number,
): { key: string; task: string; watermark: number; details: { change: AudienceChange } } {
  return { key: `audience:${randomUUID()}`, task: AUDIENCE_TASK, watermark: at, details: { change } };
}

/**
 * Checks the audience changes of marks written with their change (an append's memberships, `AppendOptions.joinMarks`)
 * and deletes the marks: each change once, however many marks name it. A failed check leaves the marks to
 * `recheckAudiences` and throws; a failed delete after the checks only leaves them (checking again changes nothing),
 * where it failed the append whose messages were in and checked (attack22: the retry under the same Idempotency-Key
 * stored the message and its /remember again).
 */
export async function settleAudienceMarks(
  context: EngineContext,
  marks: ReadonlyArray<{ key: string; details: Record<string, unknown> }>,
): Promise<void> {
  const checked = new Set<string>();
  for (const mark of marks) {
    const change = mark.details.change as AudienceChange;
    const name = JSON.stringify(change);
    if (checked.has(name)) continue;
    checked.add(name);
    await keepWithinSources(context, change);
  }
  for (const mark of marks) {
    await context.storage.maintenanceState.remove(mark.key, AUDIENCE_TASK, { deferred: true }).catch(() => {});
  }
}

/**
 * Checks the spaces (owner keys) among `owners` that an audience mark still names, whatever its age, and keeps the
 * marks (`maintain` deletes them after the minute, checking again): run for a retried message (a duplicate writes no
 * membership, so no mark of its own), whose first append may have left its mark unchecked (its check failed, or its
 * process died and the retry reached another; session 19). Returns how many spaces were checked.
 */
export async function checkMarkedSpaces(context: EngineContext, owners: ReadonlySet<string>): Promise<number> {
  if (owners.size === 0) return 0;
  const checked = new Set<string>();
  for (const mark of await context.storage.maintenanceState.list(AUDIENCE_TASK)) {
    const change = mark.details?.change as AudienceChange | undefined;
    if (!change || !('owner' in change) || !owners.has(change.owner) || checked.has(change.owner)) continue;
    checked.add(change.owner);
    await keepWithinSources(context, change);
  }
  return checked.size;
}

/**
 * The audience changes still marked (their process died between the write and the moves, or before the write: then
 * there is nothing to move, or it is still at work), checked now; run by `maintain`, by an engine's reads (at most
 * every `AUDIENCE_WATCH_MS`) and by `createMneme` at open. Checking twice moves nothing twice, so every mark is checked
 * at every call, a live process's too: one checked before its write landed moves nothing, and is checked again.
 * A mark is deleted once this engine has known it for `AUDIENCE_RECHECK_AFTER_MS` (a live process deletes its own
 * within seconds), never by its time, which is its writer's clock (attack21: another server on the same PostgreSQL
 * database, its clock ahead or behind this one's, had its dead mark left unchecked for an hour, or a live one
 * deleted before its write). A mark without a time (an upgrade's) is deleted once checked. Returns how many marks
 * were deleted.
 */
export async function recheckAudiences(context: EngineContext): Promise<number> {
  const { maintenanceState } = context.storage;
  const now = context.clock.now();
  const seen = marksSeen(context);
  const marks = await maintenanceState.list(AUDIENCE_TASK);
  const listed = new Set(marks.map((mark) => mark.channelId));
  for (const key of seen.keys()) if (!listed.has(key)) seen.delete(key);
  let deleted = 0;
  for (const mark of marks) {
    const seenAt = seen.get(mark.channelId) ?? now;
    seen.set(mark.channelId, seenAt);
    const change = mark.details?.change as AudienceChange | undefined;
    if (change && ('channelId' in change || 'owner' in change)) await keepWithinSources(context, change);
    if (mark.watermark !== null && !(now - seenAt >= AUDIENCE_RECHECK_AFTER_MS)) continue;
    await maintenanceState.remove(mark.channelId, AUDIENCE_TASK);
    seen.delete(mark.channelId);
    deleted++;
  }
  return deleted;
}

/** When this engine first saw each audience mark, by its clock (`recheckAudiences`). */
const seenMarks = new WeakMap<EngineContext, Map<string, number>>();
function marksSeen(context: EngineContext): Map<string, number> {
  let seen = seenMarks.get(context);
  if (!seen) {
    seen = new Map();
    seenMarks.set(context, seen);
  }
  return seen;
}

/** Milliseconds between two looks of an engine's reads for the audience marks a stopped process left. */
export const AUDIENCE_WATCH_MS = 10_000;

/**
 * The look an engine's reads take before they read memories (ADR 5, session 20): at most once every `everyMs` of the
 * engine's clock, the audience marks left (a process died between its change's write and the moves) are checked
 * (`recheckAudiences`; deleted once known here for `AUDIENCE_RECHECK_AFTER_MS`), so a process beside the one that
 * died, with no scheduler and no call of `maintain`, serves no memory wider than its sources for longer than one look.
 * Reads at once share a look in progress. A failed look (the store busy) is logged once until one works, and the read
 * goes on: the next look tries again.
 */
export function createAudienceWatch(context: EngineContext, everyMs = AUDIENCE_WATCH_MS): () => Promise<void> {
  // `createMneme` checked every mark when it opened the store.
  let lastLook = context.clock.now();
  let looking: Promise<void> | null = null;
  let failing = false;
  return () => {
    if (looking) return looking;
    const now = context.clock.now();
    // A clock set back looks at once.
    if (now >= lastLook && now - lastLook < everyMs) return Promise.resolve();
    lastLook = now;
    looking = recheckAudiences(context)
      .then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          if (!failing) {
            context.logger.warn(
              `the audience changes a stopped process left are checked again in ${everyMs / 1000} s: ${errorMessage(error)}`,
            );
          }
          failing = true;
        },
      )
      .finally(() => {
        looking = null;
      });
    return looking;
  };
}

/**
 * Whether the readers of a memory's owner may read a channel (`readable`), and whether every reader of a room may
 * (`roomReads`): the questions `keepWithinSources` asks, each answered once per check.
 */
function audienceReach(context: EngineContext) {
  const membership = createMembership(context);
  const reaches = new Map<string, boolean>();
  // Whether every reader of room `room` may read channel `channelId`: anyone reads the room of a public channel.
  const roomReads = async (channelId: string, room: string): Promise<boolean> =>
    channelId === room ||
    ((await membership.isPublic(room))
      ? membership.isPublic(channelId)
      : membership.reaches(channelId, 'channel', room));
  const readable = async (channelId: string, memory: Memory): Promise<boolean> => {
    const owner = ownerKey(memory.scope, memory);
    // A JSON pair: ids hold spaces, so a channel and an owner joined by one could read as another pair (attack27a).
    const key = JSON.stringify([channelId, owner]);
    let answer = reaches.get(key);
    if (answer === undefined) {
      answer =
        memory.scope === 'global'
          ? await membership.isPublic(channelId)
          : memory.scope === 'room'
            ? await roomReads(channelId, owner.slice(ownerPrefix.room.length))
            : memory.scope === 'session'
              ? await membership.reaches(channelId, 'topic', owner.slice(ownerPrefix.session.length))
              : memory.scope === 'project'
                ? await membership.reaches(channelId, 'project', owner.slice(ownerPrefix.project.length))
                : true;
      reaches.set(key, answer);
    }
    return answer;
  };
  return { readable, roomReads };
}

/**
 * A channel that memory `memory` cites (its messages', or those of the memories it was built on) which someone who
 * would see it in its owner may not read; null when there is none (personal memories: the speaker's own). What a
 * restore asks before it brings back a memory the audience check archived (ADR 52): the check archived it, of no user,
 * because its owner's readers may not read where it came from, and nothing has moved it since.
 */
export async function channelOutsideAudience(
  context: EngineContext,
  memory: Memory,
  /** What each owner's memories cite, kept across the calls of one read (a page of a list). */
  read: Map<string, Promise<CitedChannels[]>> = new Map(),
): Promise<string | null> {
  if (memory.scope === 'personal') return null;
  const owner = ownerKey(memory.scope, memory);
  let owners = read.get(owner);
  if (owners === undefined) {
    owners = context.storage.memories.citedChannels({ owner });
    read.set(owner, owners);
  }
  const cited = (await owners).find((entry) => entry.memory.id === memory.id);
  if (cited === undefined) return null;
  const { readable } = audienceReach(context);
  for (const channelId of cited.channelIds) if (!(await readable(channelId, memory))) return channelId;
  return null;
}

/**
 * After an audience changed (ADR 5, 2026-12-03): a channel's (its visibility or members, `channelId`: what cites
 * it), or a room's, topic's or project's (its members, `owner`: `room:<id>`, `topic:<id>`, `project:<id>`: what it
 * holds; a room's readers are everyone when its channel is public). A memory seen by more than the
 * readers of a channel it cites (a global fact of a public channel made private, a session or project
 * memory of a channel that a member of the topic or project cannot read, now or since joining) moves into
 * the room of a channel it cites whose readers may read every channel it cites, where exactly they see it; when
 * no such room exists (messages of two channels with different readers), into its user's personal scope (the
 * user's own words, restated in both), and, for a memory of no user, it is archived as `forget` does.
 * Personal memories stay: the speaker's own. A memory built on memories (a dream insight, a merged memory) cites the
 * channels they cite (`MemoryStore.citedChannels`), wherever they are now, and is checked and placed by them all.
 * Returns how many memories moved or were archived.
 */
export async function keepWithinSources(context: EngineContext, query: AudienceChange): Promise<number> {
  const { readable, roomReads } = audienceReach(context);
  const write = { at: context.clock.now(), actor: AUDIENCE_ACTOR };
  /** The memories moved or archived. */
  const placed = new Set<number>();
  const place = async (memory: Memory, to: MoveTarget | null, reason: string): Promise<void> => {
    const from = ownerKey(memory.scope, memory);
    if (to === null || (to.scope === 'personal' && memory.userId === null)) {
      // Of no user, with no room for it (never so written by mneme's extraction): archived, as `forget` does.
      if (memory.archivedAt === null || memory.fadedAt !== null) {
        await context.storage.memories.archive([memory.id], { ...write, reason: `archived from ${from}: ${reason}` });
      }
      placed.add(memory.id);
      return;
    }
    const into = to.scope === 'room' ? `the room of channel ${to.channelId}` : "its user's own";
    await context.storage.memories.moveTo(memory.id, to, {
      ...write,
      reason: `moved from ${from} into ${into}: ${reason}`,
    });
    placed.add(memory.id);
  };

  // Again after a pass that placed any: a memory built on those it placed (a dream insight, a merge) that another
  // process wrote after the pass read, before they left, was written where they were (one written after they
  // left is refused by its insert or merge).
  for (let before = -1; before < placed.size; ) {
    before = placed.size;
    await placeOutside();
  }
  return placed.size;

  async function placeOutside(): Promise<void> {
    for (const { memory, channelIds } of await context.storage.memories.citedChannels(query)) {
      if (memory.scope === 'personal' || placed.has(memory.id)) continue;
      let outside = false;
      for (const channelId of channelIds) {
        if (!(await readable(channelId, memory))) {
          outside = true;
          break;
        }
      }
      if (!outside) continue;
      // The room of a channel it cites whose readers may read every channel it cites: with messages of two
      // channels, the room of one may not read the other. Else its user's own (the speaker's words, restated in both).
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
      await place(
        memory,
        room === undefined ? { scope: 'personal' } : { scope: 'room', channelId: room },
        room === undefined
          ? `the channels it came from (${channelIds.join(', ')}) have no room whose readers may read them all`
          : 'not everyone who saw it may read the channels it came from',
      );
    }
  }
}
