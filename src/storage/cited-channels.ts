/**
 * What an adapter reads for `MemoryStore.citedChannels`, and the closure both adapters compute from it: a
 * memory built on memories (a dream insight, a merged memory) quotes them, so it cites the channels they
 * cite, whatever owner they are in now (ADR 5, 2026-12-03).
 */
export interface CitedChannelsReads {
  /** Every memory with `sourceIds`, by id: the memories it was built on. */
  builtOn(): Promise<Map<number, readonly number[]>>;
  /** The distinct channels of the messages the memories cite directly, sorted. */
  channelsOf(ids: readonly number[]): Promise<string[]>;
}

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

/** The memory and every memory it was built on, directly or not. */
export function withItsSources(id: number, builtOn: ReadonlyMap<number, readonly number[]>): number[] {
  const found = new Set([id]);
  const queue = [id];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const source of builtOn.get(next) ?? []) {
      if (found.has(source)) continue;
      found.add(source);
      queue.push(source);
    }
  }
  return [...found];
}

/** The channels each memory cites, itself or through what it was built on: `ids` in order, with theirs. */
export async function transitiveChannels(
  ids: readonly number[],
  reads: CitedChannelsReads,
  builtOn: ReadonlyMap<number, readonly number[]>,
): Promise<Map<number, string[]>> {
  const channels = new Map<number, string[]>();
  for (const id of ids) channels.set(id, await reads.channelsOf(withItsSources(id, builtOn)));
  return channels;
}
