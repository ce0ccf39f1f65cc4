import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../src/core/errors.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { Storage } from '../src/storage/storage.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * wt-attack22b: since 03e40a9 a post whose messages were appended and whose audience check then failed throws an
 * error carrying what it committed (`MnemeError.committed`), which the HTTP face stores as the Idempotency-Key's
 * answer (202). Since a7addbe a user key's post is written only while its key is active (`IngestOptions.keyId`).
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

const busy = () => new MnemeError(ErrorCode.StoreBusy, 'the store is busy; retry');

/** Makes the audience check's read of cited channels throw STORE_BUSY the next `times` calls, running `before` first. */
function failCheck(storage: Storage, times: number, before: () => Promise<void> = async () => {}) {
  const cited = storage.memories.citedChannels.bind(storage.memories);
  let failed = 0;
  storage.memories.citedChannels = async (query) => {
    if (failed < times) {
      failed++;
      await before();
      throw busy();
    }
    return cited(query);
  };
  return { failed: () => failed };
}

async function counts(storage: Storage, mneme: Pick<Mneme, 'turns'>, channelId = 'kitchen') {
  const memories = (await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 })).memories;
  return {
    messages: (await mneme.turns({ channelId, count: 50 })).length,
    commands: memories.filter((memory) => memory.source === 'command').length,
  };
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  async function open() {
    const engine = await openMaintenanceEngine({ store });
    const app = createHttpApp({ mneme: engine.mneme, apiKeys: engine.mneme.apiKeys, logError: () => {} });
    const send = (path: string, key: string, body: unknown, bearer?: string) =>
      app.request(path, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
        },
        body: JSON.stringify(body),
      });
    return { ...engine, send };
  }

  /*
   * FAULT (wt-attack22b): a purge erases every stored Idempotency-Key answer (`UPDATE idempotency_keys SET body =
   * NULL`: an answer may quote the purged user), and a replay of an erased one is told 409. The answer of a post whose
   * audience check failed is stored after the check failed, and the check fails with STORE_BUSY when another writer
   * held the write lock past the busy timeout: a purge of the sender is such a writer. It commits, then the failed
   * post stores its committed answer, quoting the purged user's words and their /remember, under the key; the replay
   * gives them back after the purge, for a day.
   */
  it('does not replay the words of a user purged while the post check was failing', async () => {
    const { mneme, storage, send } = await open();
    try {
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to peanuts' };
      // The check meets the write lock of ann's purge; the purge commits before the post is answered.
      const failing = failCheck(storage, 1, async () => {
        await mneme.purgeUser('ann');
      });
      const first = await send('/api/messages', 'k-purged', body);
      expect(failing.failed()).toBe(1);
      expect(first.status).toBe(503);
      expect(await counts(storage, mneme)).toEqual({ messages: 0, commands: 0 });
      const replay = await send('/api/messages', 'k-purged', body);
      const text = await replay.text();
      expect(text, `replayed ${replay.status}`).not.toMatch(/peanuts/);
    } finally {
      await mneme.close();
    }
  });

  it('stores the batch answer as { results } with each item, and replays it without appending again', async () => {
    const { mneme, storage, send } = await open();
    try {
      const body = {
        messages: [
          { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to almonds' },
          { channelId: 'kitchen', sender: 'bob', content: 'Noted' },
        ],
      };
      const failing = failCheck(storage, 1);
      const first = await send('/api/messages/batch', 'k-batch', body);
      expect(failing.failed()).toBe(1);
      expect(first.status).toBe(503);
      const replay = await send('/api/messages/batch', 'k-batch', body);
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      const answer = (await replay.json()) as {
        results: Array<{ messages: Array<{ content: string }>; command: { reply: string } | null; queued: boolean }>;
      };
      expect(answer.results.map((result) => result.messages.map((message) => message.content))).toEqual([
        ['/remember I am allergic to almonds'],
        ['Noted'],
      ]);
      expect(answer.results[0]?.command?.reply).toBe('Remembered: "Ann is allergic to almonds"');
      expect(answer.results[1]?.command).toBeNull();
      await mneme.whenIdle();
      expect(await counts(storage, mneme)).toEqual({ messages: 2, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  it('stores the answer of a user key post whose check failed (another post check left to it) and replays it to that user', async () => {
    const { mneme, storage, send } = await open();
    try {
      await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
      const annKey = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      // An administrator's post into a new channel fails its check, and the check fails again at ann's post.
      failCheck(storage, 2);
      await expect(mneme.ingest({ channelId: 'hall', sender: 'bob', content: 'Hello' })).rejects.toThrow(/were stored/);
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to cashews' };
      const first = await send('/api/messages', 'k-user', body, annKey);
      expect(first.status).toBe(503);
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
      const replay = await send('/api/messages', 'k-user', body, annKey);
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(((await replay.json()) as { command: { reply: string } }).command.reply).toBe(
        'Remembered: "Ann is allergic to cashews"',
      );
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  it('writes nothing of a user key post whose key is revoked just before its append, and gives the key back', async () => {
    const { mneme, storage, clock, send } = await open();
    try {
      await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
      const created = await mneme.apiKeys.create({ label: 'ann', userId: 'ann' });
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to pecans' };
      const append = storage.messages.append.bind(storage.messages);
      let revoked = false;
      storage.messages.append = async (messages, options) => {
        if (!revoked) {
          revoked = true;
          await mneme.apiKeys.revoke(created.prefix);
        }
        return append(messages, options);
      };
      const first = await send('/api/messages', 'k-revoked', body, created.key);
      expect(revoked).toBe(true);
      expect(first.status).toBe(403);
      expect(await counts(storage, mneme)).toEqual({ messages: 0, commands: 0 });
      const kept = await storage.idempotency.claim({
        principal: 'user:ann',
        key: 'k-revoked',
        requestSha256: 'another',
        now: clock.now(),
        lockedUntil: clock.now(),
        expiresAt: clock.now() + 1000,
      });
      expect(kept, 'the claim of the refused post was given back').toBeNull();
    } finally {
      await mneme.close();
    }
  });
});
