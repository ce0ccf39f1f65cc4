import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
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
 * wt-attack22: a purge of one user (Bob) lands while a batch with chat commands is prepared (its /remember embedded).
 * ADR 30 refuses such an append (STORE_BUSY, send it again). Checked here: the refusal says so and writes nothing of
 * the batch (Ann's messages are not lost silently: the client is told to send them, and the retry stores them once,
 * also under an Idempotency-Key); nothing of Bob survives the purge, on SQLite and PGlite.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

/** The fake model, which runs `during` (once) when asked for a document vector of a text holding `word`. */
function embedderRunning(word: string): { model: EmbeddingModel; during: { run: (() => Promise<unknown>) | null } } {
  const fake = createFakeEmbeddingModel();
  const during: { run: (() => Promise<unknown>) | null } = { run: null };
  return {
    during,
    model: {
      modelId: fake.modelId,
      dimensions: fake.dimensions,
      async embed(texts, purpose, options) {
        const run = during.run;
        if (run && purpose === 'document' && texts.some((text) => text.includes(word))) {
          during.run = null;
          await run();
        }
        return fake.embed(texts, purpose, options);
      },
    },
  };
}

async function stored(storage: Storage, mneme: Pick<Mneme, 'turns'>) {
  const memories = (await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 })).memories;
  const messages = [
    ...(await mneme.turns({ channelId: 'general', count: 50 })),
    ...(await mneme.turns({ channelId: 'bob-desk', count: 50 })),
  ];
  return {
    bob: [
      ...memories.filter((memory) => memory.userId === 'bob').map((memory) => memory.content),
      ...messages.filter((message) => message.senderId === 'bob').map((message) => message.content),
    ],
    annCommands: memories
      .filter((memory) => memory.userId === 'ann' && memory.source === 'command')
      .map((memory) => memory.content)
      .sort(),
    annMessages: messages.filter((message) => message.senderId === 'ann').length,
  };
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  it('refuses with 503 and writes nothing when the purge of another user lands while a batch is prepared, and the retry stores it once', async () => {
    const embedder = embedderRunning('peanuts');
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: embedder.model });
    try {
      const annKey = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      await mneme.apiKeys.create({ label: 'ops' });
      await mneme.putChannel({ id: 'general', visibility: 'public', members: ['ann', 'bob'] });
      await mneme.putChannel({ id: 'bob-desk', visibility: 'private', members: ['bob'] });
      await mneme.ingest({ channelId: 'bob-desk', sender: 'bob', content: '/remember my safe code is 4417' });
      await mneme.ingest({ channelId: 'general', sender: 'bob', content: 'I will be late on Monday' });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const batch = {
        messages: [
          { channelId: 'general', sender: 'ann', content: '/remember I am allergic to peanuts', externalId: 'a1' },
          { channelId: 'general', sender: 'ann', content: 'Lunch at noon?', externalId: 'a2' },
          { channelId: 'general', sender: 'ann', content: '/forget nothing like this', externalId: 'a3' },
        ],
      };
      const post = (key?: string) =>
        app.request('/api/messages/batch', {
          method: 'POST',
          headers: {
            authorization: `Bearer ${annKey}`,
            'content-type': 'application/json',
            ...(key ? { 'idempotency-key': key } : {}),
          },
          body: JSON.stringify(batch),
        });
      embedder.during.run = () => mneme.purgeUser('bob');
      const refused = await post('batch-1');
      const problem = (await refused.json()) as { code: string; detail: string };
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).not.toBeNull();
      expect(problem).toMatchObject({ code: 'STORE_BUSY' });
      expect(problem.detail).toMatch(/purged.*nothing was written.*send them again/);
      expect(await stored(storage, mneme)).toEqual({ bob: [], annCommands: [], annMessages: 0 });

      // Sent again under the same key, and once more: stored once.
      const retried = await post('batch-1');
      expect(retried.status).toBe(202);
      const again = await post('batch-1');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      const withoutKey = await post();
      expect(withoutKey.status).toBe(202);
      expect(
        ((await withoutKey.json()) as { results: Array<{ duplicate: boolean }> }).results.every(
          (result: { duplicate: boolean }) => result.duplicate,
        ),
      ).toBe(true);
      await mneme.whenIdle();
      expect(await stored(storage, mneme)).toEqual({
        bob: [],
        annCommands: ['Ann is allergic to peanuts'],
        annMessages: 3,
      });
    } finally {
      embedder.during.run = null;
      await mneme.close();
    }
  });

  /*
   * FAULT (wt-attack22): Ann answers Bob (`replyTo` one of Bob's messages); Bob's purge lands after the engine checked
   * that the answered message exists and before the append. A purge deletes the user's messages (and the replies to
   * them). With a chat command in the post the append is refused with ADR 30's 503 "send them again"; without one the
   * append meets the foreign key of `reply_to` and the client gets 500 STORE_FAILED "FOREIGN KEY constraint failed"
   * (logged as a server error) instead of a clear 4xx ("replyTo: no message N") or the 503 the command gets.
   */
  it('answers a reply whose message is purged between its check and the append with a clear 4xx or a 503, never a 500', async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store });
    const errors: unknown[] = [];
    try {
      await mneme.putChannel({ id: 'general', visibility: 'public', members: ['ann', 'bob'] });
      const annKey = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
      const statuses: Record<string, number> = {};
      for (const content of ['/remember I answered Bob', 'Sure, I will answer Bob']) {
        const bob = await mneme.ingest({ channelId: 'general', sender: 'bob', content: 'Bob asks about lunch' });
        const asked = bob.messages[0]?.id ?? 0;
        // The first read of the message is the key's check that Ann may read it, the second the engine's check of
        // replyTo: the purge (another process) commits right after that one.
        const get = storage.messages.get.bind(storage.messages);
        let reads = 0;
        storage.messages.get = async (ids) => {
          const found = await get(ids);
          if (ids.includes(asked) && ++reads === 2) await mneme.purgeUser('bob');
          return found;
        };
        const response = await app.request('/api/messages', {
          method: 'POST',
          headers: { authorization: `Bearer ${annKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ channelId: 'general', sender: 'ann', content, replyTo: asked }),
        });
        storage.messages.get = get;
        expect(reads).toBe(2);
        statuses[content] = response.status;
      }
      expect(await mneme.turns({ channelId: 'general', count: 50 })).toEqual([]);
      expect(statuses['/remember I answered Bob']).toBe(503);
      expect(statuses['Sure, I will answer Bob']).toBeLessThan(500);
      expect(errors).toEqual([]);
    } finally {
      await mneme.close();
    }
  });

  it('refuses an administrator batch holding the purged user commands prepared before the purge, and keeps nothing of them', async () => {
    const embedder = embedderRunning('walnuts');
    const { mneme, storage } = await openMaintenanceEngine({ store, embedder: embedder.model });
    try {
      await mneme.putChannel({ id: 'general', visibility: 'public', members: ['ann', 'bob'] });
      await mneme.ingest({ channelId: 'general', sender: 'bob', content: '/remember I hide the key in the shed' });
      embedder.during.run = () => mneme.purgeUser('bob');
      const refused = await mneme
        .ingestMany([
          { channelId: 'general', sender: 'bob', content: '/remember I am allergic to walnuts', externalId: 'b1' },
          { channelId: 'general', sender: 'bob', content: '/forget shed', externalId: 'b2' },
          { channelId: 'general', sender: 'ann', content: '/remember I like tea', externalId: 'a1' },
        ])
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'STORE_BUSY' });
      expect(await stored(storage, mneme)).toEqual({ bob: [], annCommands: [], annMessages: 0 });
    } finally {
      embedder.during.run = null;
      await mneme.close();
    }
  });
});
