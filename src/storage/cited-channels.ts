import { ownerPrefix } from '../core/scope.js';

/**
 * What both adapters share for `MemoryStore.citedChannels`: a memory built on memories (a dream insight, a merged
 * memory) quotes them, so it cites the channels they cite, whatever owner they are in now (ADR 5, 2026-12-03).
 */

/** The ids of `start` and of every memory built on one of them, directly or not, sorted. */
export function withBuiltOnThem(start: Iterable<number>, builtOn: ReadonlyMap<number, readonly number[]>): number[] {
  const users = new Map<number, number[]>();
  for (const [id, sources] of builtOn) {
    for (const source of sources) {
      const list = users.get(source) ?? [];
      list.push(id);
      users.set(source, list);
    }
  }
  const found = new Set(start);
  const queue = [...found];
  for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
    for (const user of users.get(id) ?? []) {
      if (found.has(user)) continue;
      found.add(user);
      queue.push(user);
    }
  }
  return [...found].sort((a, b) => a - b);
}

/**
 * The rows of an adapter's closure query (each memory asked, and a channel it cites, itself or through what it was
 * built on at any depth: a recursive query over `source_ids`, session 18) as each memory's channels, sorted.
 */
export function channelsByMemory(
  ids: readonly number[],
  rows: ReadonlyArray<{ memoryId: number; channelId: string }>,
): Map<number, string[]> {
  const channels = new Map<number, string[]>(ids.map((id) => [id, []]));
  for (const { memoryId, channelId } of rows) channels.get(memoryId)?.push(channelId);
  for (const list of channels.values()) list.sort();
  return channels;
}

/** The channel of a room's owner key (`room:<channel>`), or null for any other owner key. */
export function roomChannel(owner: string): string | null {
  return owner.startsWith(ownerPrefix.room) ? owner.slice(ownerPrefix.room.length) : null;
}
