import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_LOCK_MS } from '../src/core/idempotency.js';
import { createHttpApp } from '../src/http/http-app.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * ADR 14's last gap (left alone since session 4, closed 2026-12-04): an Idempotency-Key's response is stored in a
 * transaction of its own after the work. A process that died between the two left the key claimed with no response,
 * and the retry after the claim's 5 minutes took it over and did the work a second time: a second memory, the
 * messages appended twice. Work that creates now counts its write transaction on the key in that transaction.
 *
 * The crash is the state it leaves: the work committed, nothing after it. `complete` (storing the response) is made
 * to do nothing, as a process that died there did nothing more; the response it sends stands for the one never sent.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

/** Each route whose work, done twice, stores its effect twice, with a body and how to count that effect. */
const creating = [
  {
    path: '/api/memories',
    body: { content: 'Ann keeps the spare key under the blue pot', scope: 'global' },
    effect: 'Ann keeps the spare key under the blue pot',
  },
  {
    path: '/api/messages',
    body: { channelId: 'kitchen', sender: 'ann', content: 'The boiler code is 4471' },
    effect: 'The boiler code is 4471',
  },
  {
    path: '/api/messages/batch',
    body: { messages: [{ channelId: 'kitchen', sender: 'ann', content: 'The gate code is 9022' }] },
    effect: 'The gate code is 9022',
  },
  {
    path: '/api/exchanges',
    body: { channelId: 'kitchen', userId: 'ann', userMessage: 'Where is the ladder?', assistantReply: 'In the shed.' },
    effect: 'Where is the ladder?',
  },
];

async function openApp(store: EngineStore, path?: string) {
  const engine = await openMaintenanceEngine({ store, ...(path === undefined ? {} : { path }) });
  const app = createHttpApp({ mneme: engine.mneme, apiKeys: engine.mneme.apiKeys, logError: () => {} });
  const send = (route: string, key: string, body: unknown) =>
    app.request(route, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
  /** How many stored messages and memories hold `text`. */
  const copies = async (text: string) => {
    const turns = await engine.mneme.turns({ channelId: 'kitchen', count: 50 });
    const memories = (await engine.storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 }))
      .memories;
    return (
      turns.filter((turn) => turn.content === text).length +
      memories.filter((memory) => memory.content === text && memory.source === 'manual').length
    );
  };
  return { ...engine, send, copies };
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  it.each(creating)(
    'does not do the work of $path twice when its process died before its response was stored',
    async ({ path, body, effect }) => {
      const { mneme, storage, clock, send, copies } = await openApp(store);
      try {
        // The process dies after the work committed: nothing after it is written.
        const complete = storage.idempotency.complete.bind(storage.idempotency);
        storage.idempotency.complete = async () => {};
        const first = await send(path, 'k-crash', body);
        expect(first.status, await first.text()).toBeLessThan(300);
        expect(await copies(effect)).toBe(1);
        storage.idempotency.complete = complete;

        // Within the claim's lock the retry is told to wait, as before.
        const early = await send(path, 'k-crash', body);
        expect(early.status).toBe(409);
        expect(await early.text()).toMatch(/still running/);

        // After it, the retry (the client that never got an answer) was taken over and done again.
        clock.advance(IDEMPOTENCY_LOCK_MS + 1_000);
        const retry = await send(path, 'k-crash', body);
        const text = await retry.text();
        expect(retry.status, text).toBe(409);
        expect(text).toMatch(/was done before: what it wrote was committed/);
        expect(await copies(effect)).toBe(1);

        // Another key is another request: done.
        const again = await send(path, 'k-new', body);
        expect(again.status, await again.text()).toBeLessThan(300);
        expect(await copies(effect)).toBe(2);
      } finally {
        await mneme.close();
      }
    },
  );

  it('still does a request again whose process died before its work committed anything', async () => {
    const { mneme, storage, clock, send, copies } = await openApp(store);
    try {
      const body = { content: 'Bob parks on level 3', scope: 'global' };
      // The process dies inside the work, before its write: the write never happens.
      const insert = storage.memories.insert.bind(storage.memories);
      storage.memories.insert = async () => {
        throw new Error('the process died here');
      };
      const release = storage.idempotency.release.bind(storage.idempotency);
      storage.idempotency.release = async () => {};
      expect((await send('/api/memories', 'k-early', body)).status).toBe(500);
      storage.memories.insert = insert;
      storage.idempotency.release = release;
      expect(await copies('Bob parks on level 3')).toBe(0);

      clock.advance(IDEMPOTENCY_LOCK_MS + 1_000);
      const retry = await send('/api/memories', 'k-early', body);
      expect(retry.status, await retry.text()).toBe(201);
      expect(await copies('Bob parks on level 3')).toBe(1);
    } finally {
      await mneme.close();
    }
  });
});

describe('the work of a route that creates', () => {
  it.each(creating)('commits $path in one counted write transaction', async ({ path, body }) => {
    // The count tells "done" only if the work is one transaction: a crash between two would be told done, half done.
    const folder = mkdtempSync(join(tmpdir(), 'mneme-keyed-'));
    const file = join(folder, 'mneme.db');
    const { mneme, send } = await openApp('sqlite', file);
    try {
      const answer = await send(path, 'k-count', body);
      expect(answer.status, await answer.text()).toBeLessThan(300);
      await mneme.whenIdle();
      const reader = new Database(file, { readonly: true });
      try {
        const row = reader.prepare("SELECT committed, status FROM idempotency_keys WHERE key = 'k-count'").get();
        expect(row).toEqual({ committed: 1, status: answer.status });
      } finally {
        reader.close();
      }
    } finally {
      await mneme.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
