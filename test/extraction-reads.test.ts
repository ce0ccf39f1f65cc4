import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { TextSearch } from '../src/storage/memory-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});
const start = Date.parse('2024-03-01T10:00:00Z');

/** What a channel's extraction asks of the store: the calls of a few store methods, counted on the real SQLite store. */
function watched(storage: Storage) {
  const calls = { getUser: 0, getChannel: 0, listBefore: 0, searches: [] as TextSearch[] };
  const { directory, memberships, messages, memories } = storage as {
    -readonly [Store in keyof Storage]: Storage[Store];
  };
  const getUser = directory.getUser.bind(directory);
  directory.getUser = (id) => {
    calls.getUser++;
    return getUser(id);
  };
  const getChannel = memberships.getChannel.bind(memberships);
  memberships.getChannel = (id) => {
    calls.getChannel++;
    return getChannel(id);
  };
  const listBefore = messages.listBefore.bind(messages);
  messages.listBefore = (...parameters) => {
    calls.listBefore++;
    return listBefore(...parameters);
  };
  const searchText = memories.searchText.bind(memories);
  memories.searchText = (search) => {
    calls.searches.push(search);
    return searchText(search);
  };
  return calls;
}

/** An engine over real SQLite with the offline extractor, extracting when `whenIdle()` is awaited, in batches of 64. */
function open(storage: Storage): Mneme {
  const mneme = createEngine({
    storage,
    embedder: null,
    clock: createFixedClock('2024-06-01T09:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({ ingest: { extractionBatchMessages: 64, extractionBatchMs: 60_000 } }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: createOfflineExtractor(),
  });
  engines.push(mneme);
  return mneme;
}

/** Ten turns of two people talking in one room, none asking anything, each long enough to be stored as an exchange. */
const talk = Array.from({ length: 10 }, (_, index) => ({
  channelId: 'room',
  sender: index % 2 === 0 ? 'ana' : 'ben',
  senderName: index % 2 === 0 ? 'Ana' : 'Ben',
  content: `I spent the weekend number ${index} repairing an old sailing boat with my cousin`,
  createdAt: new Date(start + index * 60_000).toISOString(),
}));

describe('the reads of a batch of extraction steps', () => {
  it('reads a sender’s display name and the channel’s visibility once a batch, not once a message', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    await mneme.ingestMany(talk);
    const calls = watched(storage);
    await mneme.whenIdle();
    // One batch: each of the two senders once, the channel once (a message a step would read them 10 to 20 times).
    expect(calls.getUser).toBe(2);
    expect(calls.getChannel).toBe(1);
    const memories = (await mneme.list({ limit: 100 })).memories;
    expect(memories.some((memory) => memory.category === 'exchange' && memory.content.startsWith('Ana:'))).toBe(true);
  });

  it('reads each sender’s display name once an append, not once a message', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    const calls = watched(storage);
    await mneme.ingestMany(talk);
    // Ten inputs of two senders: one read each (a read an input would be 10).
    expect(calls.getUser).toBe(2);
    expect((await storage.directory.getUser('ana'))?.displayName).toBe('Ana');
    expect((await storage.directory.getUser('ben'))?.displayName).toBe('Ben');
  });

  it('writes every rename within one append in the inputs’ order, the last one kept', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    await mneme.ingest(talk[0] as (typeof talk)[number]);
    const say = (content: string, senderName?: string) => ({
      channelId: 'room',
      sender: 'ana',
      content,
      ...(senderName === undefined ? {} : { senderName }),
    });
    // Ana renamed, then back to the name stored before the append, then a message that names no one.
    await mneme.ingestMany([say('first', 'Ana Lima'), say('second', 'Ana'), say('third')]);
    expect((await storage.directory.getUser('ana'))?.displayName).toBe('Ana');
    await mneme.ingestMany([say('fourth', 'Ana Lima'), say('fifth')]);
    expect((await storage.directory.getUser('ana'))?.displayName).toBe('Ana Lima');
  });

  it('sees a rename made between two batches', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    await mneme.ingestMany(talk.slice(0, 2));
    await mneme.whenIdle();
    await mneme.ingestMany([{ ...talk[2], senderName: 'Ana Lima' } as (typeof talk)[number]]);
    await mneme.whenIdle();
    const exchanges = (await mneme.list({ limit: 100 })).memories
      .filter((memory) => memory.category === 'exchange' && memory.userId === 'ana')
      .map((memory) => memory.content.split(':')[0]);
    expect(exchanges.sort()).toEqual(['Ana', 'Ana Lima']);
  });

  it('takes the message before a turn’s context from the page of the log it holds', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    await mneme.ingestMany(talk);
    const calls = watched(storage);
    await mneme.whenIdle();
    // Only the second turn's context starts the page: the log is read for the message before it once.
    expect(calls.listBefore).toBe(1);
    // Each of Ben's later turns is found by Ben's own turn before the context (ADR 21).
    const chunks = (await mneme.list({ limit: 100 })).memories.filter(
      (memory) => memory.category === 'exchange' && memory.userId === 'ben',
    );
    expect(chunks.length).toBe(5);
  });

  it('tells the store when every word of a related-memory search was counted within the bound', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = open(storage);
    await mneme.ingestMany([
      talk[0] as (typeof talk)[number],
      { ...talk[2], content: 'I work at Initech now, on the night shift' } as (typeof talk)[number],
    ]);
    const calls = watched(storage);
    await mneme.whenIdle();
    // The first message's words were counted; the second adds the words of where someone works, not counted.
    expect(calls.searches.map((search) => search.postingsAtMost)).toEqual([200, undefined]);
  });
});
