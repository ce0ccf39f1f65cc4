import type { Channel } from '../../storage/membership-store.js';
import type { Storage } from '../../storage/storage.js';
import type { EngineContext } from '../engine-context.js';

/**
 * The context of one batch of extraction steps, whose store reads of users and channels (a speaker's
 * display name, whether a channel is public) are made once a batch, not once a message: each step of a
 * channel's batch asks them again for the same sender and channel. Extraction writes neither, and a
 * rename or a change of visibility that comes in while a batch holds the store waits for its end
 * (ADR 19), so each message sees what it would have read; one that comes in between two messages
 * before the batch holds the store is seen by the next batch, as if it had come just after the hold.
 */
export function withBatchReads(context: EngineContext): EngineContext {
  const { storage } = context;
  const users = new Map<string, ReturnType<Storage['directory']['getUser']>>();
  const channels = new Map<string, Promise<Channel | null>>();
  const directory: Storage['directory'] = Object.create(storage.directory);
  directory.getUser = (id) => remembered(users, id, () => storage.directory.getUser(id));
  const memberships: Storage['memberships'] = Object.create(storage.memberships);
  memberships.getChannel = (id) => remembered(channels, id, () => storage.memberships.getChannel(id));
  return { ...context, storage: { ...storage, directory, memberships } };
}

/** The promise kept for `key`, or `read()` kept for it; a read that fails is not kept. */
function remembered<T>(kept: Map<string, Promise<T>>, key: string, read: () => Promise<T>): Promise<T> {
  const known = kept.get(key);
  if (known) return known;
  const reading = read();
  kept.set(key, reading);
  reading.catch(() => kept.delete(key));
  return reading;
}
