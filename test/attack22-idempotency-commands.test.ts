import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import { ErrorCode, MnemeError } from '../src/core/errors.js';
import { IDEMPOTENCY_LOCK_MS } from '../src/core/idempotency.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { Storage } from '../src/storage/storage.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * wt-attack22: `POST /api/messages` of a `/remember` under an `Idempotency-Key` (ADR 14: a retry under the same key is
 * answered, not done again), when a write around the command's append meets a busy store: the claim's `complete`, its
 * `release`, and the audience check after the append (an administrator's post makes its sender a member of a new
 * channel). The retry the 503 asks for must store the message and its memory once, on SQLite and PGlite.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

const busy = () => new MnemeError(ErrorCode.StoreBusy, 'the store is busy; retry');

/** Makes `method` of `object` throw STORE_BUSY the next `times` calls. */
function failNext<T extends object, K extends keyof T>(object: T, method: K, times = 1): { failed(): number } {
  const real = (object[method] as (...args: unknown[]) => Promise<unknown>).bind(object);
  let failed = 0;
  (object as Record<K, unknown>)[method] = async (...args: unknown[]) => {
    if (failed < times) {
      failed++;
      throw busy();
    }
    return real(...args);
  };
  return { failed: () => failed };
}

async function counts(storage: Storage, mneme: Pick<Mneme, 'turns'>) {
  const memories = (await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 })).memories;
  return {
    messages: (await mneme.turns({ channelId: 'kitchen', count: 50 })).length,
    commands: memories.filter((memory) => memory.source === 'command').length,
  };
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  async function open() {
    const engine = await openMaintenanceEngine({ store });
    const app = createHttpApp({ mneme: engine.mneme, apiKeys: engine.mneme.apiKeys, logError: () => {} });
    const post = (key: string, body: unknown) =>
      app.request('/api/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
    return { ...engine, post };
  }

  it('answers the retry with the stored response when the claim could not be completed, writing the command once', async () => {
    const { mneme, storage, post } = await open();
    try {
      await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to peanuts' };
      const failing = failNext(storage.idempotency, 'complete');
      const first = await post('k-complete', body);
      expect(failing.failed()).toBe(1);
      expect(first.status).toBe(503);
      const retried = await post('k-complete', body);
      expect(retried.status).toBe(202);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(((await retried.json()) as { command: { reply: string } }).command.reply).toBe(
        'Remembered: "Ann is allergic to peanuts"',
      );
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  it('does the request at the retry when the claim of a refused request could not be given back, writing it once', async () => {
    const { mneme, storage, post } = await open();
    try {
      await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to walnuts' };
      const appending = failNext(storage.messages, 'append');
      const releasing = failNext(storage.idempotency, 'release');
      const first = await post('k-release', body);
      expect([appending.failed(), releasing.failed()]).toEqual([1, 1]);
      expect(first.status).toBe(503);
      expect(await counts(storage, mneme)).toEqual({ messages: 0, commands: 0 });
      const retried = await post('k-release', body);
      expect(retried.status).toBe(202);
      const again = await post('k-release', body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  /*
   * Fixed in session 22: the mark's delete after the check is bookkeeping (its failure leaves the mark, checked again
   * later, and the post is answered 202); a failure of the check itself is answered with an error that carries what
   * the append committed, which the HTTP face stores as the key's answer (the next test).
   * FAULT (wt-attack22): ADR 30 says "a 503 now means nothing of the request was written". An administrator's post
   * (a chat bridge's key) whose sender joins the channel with it writes an audience mark in the append and checks it
   * after; when that check meets a busy store the client is answered 503 STORE_BUSY, with the message and, since ADR
   * 30, the memory of its /remember already committed. The HTTP layer gives the Idempotency-Key back (a failed
   * request "stores nothing, so a retry does the work"), so the retry the 503 asks for, under the same key, appends the
   * message again and writes the /remember a second time: two pinned copies of the memory. (Before ADR 30 the command
   * ran after the check, so this retry wrote it once; the message was doubled either way.)
   */
  it('writes the /remember once when the audience check after its append fails and the 503 is retried under the same key', async () => {
    const { mneme, storage, post } = await open();
    try {
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to cashews' };
      // The mark's delete after the check (a write) meets another process's write lock past the busy timeout.
      const failing = failNext(storage.maintenanceState, 'remove');
      const first = await post('k-check', body);
      expect(failing.failed()).toBe(1);
      expect(first.status).toBe(202);
      const retried = await post('k-check', body);
      expect(retried.status).toBe(202);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      await mneme.whenIdle();
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  it('answers the retry under the same key with what was stored when the audience check itself failed after the append', async () => {
    const { mneme, storage, post } = await open();
    try {
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to hazelnuts' };
      // The check after the append (ann joins the new channel kitchen) meets another process's write lock.
      const failing = failNext(storage.memories, 'citedChannels');
      const first = await post('k-check-fails', body);
      expect(failing.failed()).toBe(1);
      expect(first.status).toBe(503);
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
      const retried = await post('k-check-fails', body);
      expect(retried.status).toBe(202);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(((await retried.json()) as { command: { reply: string } }).command.reply).toBe(
        'Remembered: "Ann is allergic to hazelnuts"',
      );
      await mneme.whenIdle();
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await mneme.close();
    }
  });

  /*
   * FAULT (wt-attack22): since ADR 30 a process remembers a claim it could not give back (`release` met a busy store)
   * and gives it back before the key's next request it receives, however late. The give-back deletes whatever claim
   * of the key is still running (`DELETE ... WHERE status IS NULL`: it does not name the claim it gives back). Two
   * servers on one database: the first's request fails and its release fails; after the 5 minutes a claim is held,
   * the client's retry reaches the second server, which takes the key over and runs the request; a retry meanwhile
   * reaching the first server gives back the second server's running claim as its own, claims the key and runs the
   * request too. Without an externalId the message and its /remember are stored twice; the retry should have been
   * told 409 (still running).
   */
  it('does not give back another server running claim when it gives back its own failed one', async () => {
    const first = await open();
    const { mneme, storage, clock } = first;
    const second = createEngine({
      storage,
      embedder: null,
      clock,
      logger: { warn: () => {} },
      policy: resolvePolicy(),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
    });
    const secondApp = createHttpApp({ mneme: second, apiKeys: second.apiKeys, logError: () => {} });
    try {
      await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
      const body = { channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to pecans' };
      const appending = failNext(storage.messages, 'append');
      const releasing = failNext(storage.idempotency, 'release');
      expect((await first.post('k-two', body)).status).toBe(503);
      expect([appending.failed(), releasing.failed()]).toEqual([1, 1]);

      clock.advance(IDEMPOTENCY_LOCK_MS + 1);
      // The second server runs the retry; while it works, another retry of the client reaches the first server.
      const append = storage.messages.append.bind(storage.messages);
      let meanwhile: Response | null = null;
      storage.messages.append = async (messages, options) => {
        if (meanwhile === null) meanwhile = await first.post('k-two', body);
        return append(messages, options);
      };
      const onSecond = await secondApp.request('/api/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k-two' },
        body: JSON.stringify(body),
      });
      expect(onSecond.status).toBe(202);
      expect.soft((meanwhile as Response | null)?.status, 'the retry while the second server ran it').toBe(409);
      expect(await counts(storage, mneme)).toEqual({ messages: 1, commands: 1 });
    } finally {
      await second.close();
      await mneme.close();
    }
  });
});
