import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mneme } from '../src/core/mneme.js';
import type { Storage } from '../src/storage/storage.js';
import { createFakeEmbeddingModel } from '../src/testing.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * wt-attack22: ADR 30 writes a chat command in its message's transaction. These tests run the append path of both
 * stores (SQLite, and PostgreSQL through PGlite) with batches that remember and forget, duplicates (same externalId)
 * and retries, and count the messages and command memories after each.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

const say = (content: string, externalId?: string, sender = 'ann') => ({
  channelId: 'kitchen',
  sender,
  senderName: sender === 'ann' ? 'Ann' : 'Bob',
  content,
  ...(externalId === undefined ? {} : { externalId }),
});

async function commandMemories(storage: Storage) {
  const page = await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 });
  return page.memories
    .filter((memory) => memory.source === 'command')
    .map((memory) => ({ content: memory.content, archived: memory.archivedAt !== null, owner: memory.userId }))
    .sort((a, b) => a.content.localeCompare(b.content));
}

async function messageCount(mneme: Mneme): Promise<number> {
  return (await mneme.turns({ channelId: 'kitchen', count: 50 })).length;
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  it('writes each command of a batch with duplicates once, and a retried batch writes none again', async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
    const batch = [
      say('/remember I prefer dark mode', 'e1'),
      say('/remember I prefer dark mode', 'e1'),
      say('/remember I like green tea', 'e2'),
      say('/forget green tea', 'e3'),
      say('/remember my locker is 12', 'e4', 'bob'),
      // Bob's /forget sees Bob's memories only: Ann's dark mode stays.
      say('/forget dark*', 'e5', 'bob'),
    ];
    const first = await mneme.ingestMany(batch);
    expect(first.map((result) => [result.duplicate, result.command?.reply ?? null])).toEqual([
      [false, 'Remembered: "Ann prefers dark mode"'],
      [true, null],
      [false, 'Remembered: "Ann likes green tea"'],
      [false, 'Forgot 1 memory matching "green tea".'],
      [false, 'Remembered: "Bob\'s locker is 12"'],
      [false, 'Nothing to forget: no memory of yours matches "dark*".'],
    ]);
    const after = await commandMemories(storage);
    expect(after).toEqual([
      { content: 'Ann likes green tea', archived: true, owner: 'ann' },
      { content: 'Ann prefers dark mode', archived: false, owner: 'ann' },
      { content: "Bob's locker is 12", archived: false, owner: 'bob' },
    ]);
    expect(await messageCount(mneme)).toBe(5);

    const retried = await mneme.ingestMany(batch);
    expect(retried.every((result) => result.duplicate && result.command === null)).toBe(true);
    expect(await commandMemories(storage)).toEqual(after);
    expect(await messageCount(mneme)).toBe(5);
    await mneme.close();
  });

  it('writes the /remember of an exchange once, and its retry (same externalIds) writes nothing', async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
    const exchange = {
      channelId: 'kitchen',
      userId: 'ann',
      userName: 'Ann',
      userMessage: '/remember I am allergic to peanuts',
      assistantReply: 'Noted.',
      externalId: 'x1',
      replyExternalId: 'x1-reply',
    };
    const first = await mneme.ingestExchange(exchange);
    expect(first.command?.remembered?.sourceMessageIds).toEqual([first.messages[0]?.id]);
    const again = await mneme.ingestExchange(exchange);
    expect(again).toMatchObject({ duplicate: true, command: null });
    // An exchange and a /forget of it in one batch: the /forget sees what the exchange remembered.
    const [, forgot] = await mneme.ingestMany([
      { ...exchange, externalId: 'x2', replyExternalId: 'x2-reply', userMessage: '/remember I am allergic to cats' },
      say('/forget allergic to cats', 'x3'),
    ]);
    expect(forgot?.command?.reply).toBe('Forgot 1 memory matching "allergic to cats".');
    expect(await commandMemories(storage)).toEqual([
      { content: 'Ann is allergic to cats', archived: true, owner: 'ann' },
      { content: 'Ann is allergic to peanuts', archived: false, owner: 'ann' },
    ]);
    expect(await messageCount(mneme)).toBe(5);
    await mneme.close();
  });

  it('writes a /remember once when two ingests of its externalId run at once', async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
    const message = say('/remember I keep the spare key under the mat', 'race-1');
    const results = await Promise.all([mneme.ingest(message), mneme.ingest(message), mneme.ingestMany([message])]);
    const written = results.flatMap((result) => (Array.isArray(result) ? result : [result]));
    expect(written.filter((result) => result.command !== null)).toHaveLength(1);
    expect(written.filter((result) => result.duplicate)).toHaveLength(2);
    expect(await commandMemories(storage)).toEqual([
      { content: 'Ann keeps the spare key under the mat', archived: false, owner: 'ann' },
    ]);
    await mneme.close();
  });

  /*
   * FAULT (wt-attack22): a batch `[/remember X (externalId e1), /forget X]` ends with X archived, whatever order
   * the two ingests are put in, when it runs alone (the /forget archives what the /remember before it in the
   * batch writes, ADR 30). When another ingest of the same /remember (e1: a client retry, a second engine on the
   * same file) is committed after the batch's /forget looked for its matches and before the batch's append, the
   * batch's /remember is a duplicate: it writes nothing, so `remembered` names no memory, and the matches found
   * before the append did not hold X yet. The /forget archives nothing and says "Nothing to forget", while the
   * log holds the /forget after the /remember: X stays active, in no serial order of the two appends.
   */
  it('forgets what a /remember before it in the batch remembered when that /remember is committed by another ingest meanwhile', async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
    const remember = say('/remember I prefer dark mode', 'e1');
    // The other ingest lands after the batch was prepared and before its append (another engine on the same store).
    // Session 22: the /forget finds its matches inside the append's transaction, so this is the last moment.
    const append = storage.messages.append.bind(storage.messages);
    let other: Promise<unknown> | null = null;
    storage.messages.append = async (messages, options) => {
      if (other === null && messages.some((message) => message.command && 'forget' in message.command)) {
        other = mneme.ingest(remember);
        await other;
      }
      return append(messages, options);
    };
    const [remembered, forgot] = await mneme.ingestMany([remember, say('/forget dark mode', 'e2')]);
    expect(other).not.toBeNull();
    expect(remembered?.duplicate).toBe(true);
    expect.soft(forgot?.command?.reply).toBe('Forgot 1 memory matching "dark mode".');
    expect(await commandMemories(storage)).toEqual([
      { content: 'Ann prefers dark mode', archived: true, owner: 'ann' },
    ]);
    await mneme.close();
  });
});

describe.each(engineStores.map((store) => ({ store })))(
  'a /forget over many memories on $store',
  ({ store }: { store: EngineStore }) => {
    /*
     * FAULT (wt-attack22, in the matching ADR 30 kept before the append): a /forget finds its matches by pages of 500 of
     * the sender's active memories, newest first, by offset, each page a read of its own. A memory of the sender archived
     * between two pages (another /forget of the sender, an edit, maintenance) shifts every older memory one place up, and
     * the first of the next page is never looked at. Ann's oldest memory matches, was active before, during and after,
     * and the /forget says "Nothing to forget" and leaves it: the command reads as made at no moment.
     */
    it('archives every matching memory that stays active while it looks, when another is archived between its pages', async () => {
      const { mneme, storage } = await openMaintenanceEngine({ store });
      const context = { at: Date.parse('2024-05-01T00:00:00Z'), actor: 'test' };
      const memory = (content: string) => ({
        content,
        category: 'general',
        sector: 'semantic' as const,
        scope: 'personal' as const,
        owner: 'user:ann',
        userId: 'ann',
        channelId: null,
        projectId: null,
        topicId: null,
        source: 'manual' as const,
        importance: 0.5,
        pinned: false,
        sourceMessageIds: [],
        sourceIds: [],
        embedding: null,
      });
      // The oldest of 501: the last of the first 500 newest-first pages is the 500th, it is the first of the second.
      const [target] = await storage.memories.insert(
        [
          memory('Ann hides the spare key in the green jar'),
          ...Array.from({ length: 500 }, (_, i) => memory(`Note ${i}`)),
        ],
        context,
      );
      // Session 22: the matches are found inside the append's transaction, in one read; another request of Ann's (or
      // maintenance) archives one of her newest notes just before it.
      const append = storage.messages.append.bind(storage.messages);
      let archivedMeanwhile = false;
      storage.messages.append = async (messages, options) => {
        if (!archivedMeanwhile && messages.some((message) => message.command && 'forget' in message.command)) {
          archivedMeanwhile = true;
          const { memories } = await storage.memories.list({
            owners: ['user:ann'],
            archived: 'exclude',
            limit: 1,
            offset: 0,
          });
          await storage.memories.archive([memories[0]?.id ?? 0], { ...context, reason: 'elsewhere' });
        }
        return append(messages, options);
      };
      const result = await mneme.ingest({ channelId: 'kitchen', sender: 'ann', content: '/forget green jar' });
      expect(archivedMeanwhile).toBe(true);
      expect.soft(result.command?.reply).toBe('Forgot 1 memory matching "green jar".');
      const [after] = await storage.memories.get([target?.id ?? 0]);
      expect(after?.archivedAt).not.toBeNull();
      await mneme.close();
    });
  },
);
