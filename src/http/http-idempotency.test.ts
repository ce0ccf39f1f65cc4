import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import { IDEMPOTENCY_KEY_TTL_MS } from '../core/idempotency.js';
import type { Mneme } from '../core/mneme.js';
import { createFakeEmbeddingModel, createFixedClock } from '../testing.js';
import { type RunningHttpServer, startHttpServer } from './http-server.js';

describe('retried writes over HTTP', () => {
  const clock = createFixedClock('2024-06-15T12:00:00Z');
  let mneme: Mneme;
  let server: RunningHttpServer;
  const keys = { admin: '', ann: '', bob: '' };

  beforeAll(async () => {
    mneme = await createMneme({ path: ':memory:', clock, logger: { warn: () => {}, info: () => {} } });
    keys.admin = (await mneme.apiKeys.create({ label: 'ops' })).key;
    keys.ann = (await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' })).key;
    keys.bob = (await mneme.apiKeys.create({ label: 'bob-app', userId: 'bob' })).key;
    await mneme.putChannel({ id: 'room', members: ['ann', 'bob'] });
    server = await startHttpServer({ mneme, port: 0 });
  });
  afterAll(async () => {
    await server.close();
    await mneme.close();
  });

  async function call(method: string, path: string, body: unknown, key: string, idempotencyKey?: string) {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      replayed: response.headers.get('idempotent-replayed') === 'true',
      type: response.headers.get('content-type'),
      text: await response.text(),
    };
  }

  const count = async (channelId: string) => (await mneme.turns({ channelId, count: 50 })).length;
  const post = (content: string, sender = 'ann') => ({ channelId: 'room', sender, content });

  it('replays the first response for a retry with the same key and request, without storing the message again', async () => {
    const before = await count('room');
    const first = await call('POST', '/api/messages', post('I bake sourdough every Sunday'), keys.ann, 'key-1');
    expect(first).toMatchObject({ status: 202, replayed: false });
    const retry = await call('POST', '/api/messages', post('I bake sourdough every Sunday'), keys.ann, 'key-1');
    expect(retry).toMatchObject({ status: 202, replayed: true, type: 'application/json', text: first.text });
    expect(await count('room')).toBe(before + 1);
  });

  it('refuses the same key with another request with a 422 problem, writing nothing', async () => {
    const before = await count('room');
    const other = await call('POST', '/api/messages', post('I bake rye bread instead'), keys.ann, 'key-1');
    expect(other).toMatchObject({ status: 422, type: 'application/problem+json' });
    expect(JSON.parse(other.text)).toMatchObject({
      code: 'INVALID_INPUT',
      detail: 'Idempotency-Key key-1 was used with a different request; send a new key for a new request',
    });
    const malformed = await call('POST', '/api/messages', post('a key with a space'), keys.ann, 'key with space');
    expect(malformed.status).toBe(422);
    expect(await count('room')).toBe(before);
  });

  it("keeps keys per principal: another user's request under the same key does its own work", async () => {
    const before = await count('room');
    const bob = await call('POST', '/api/messages', post('I bake sourdough every Sunday', 'bob'), keys.bob, 'key-1');
    expect(bob).toMatchObject({ status: 202, replayed: false });
    expect(JSON.parse(bob.text)).toMatchObject({ messages: [{ senderId: 'bob', duplicate: false }] });
    expect(await count('room')).toBe(before + 1);
  });

  it('stores nothing for a refused first request, so the retry does the work once it may', async () => {
    const body = { channelId: 'kitchen', sender: 'ann', content: 'The kitchen tap is leaking again' };
    const refused = await call('POST', '/api/messages', body, keys.ann, 'key-2');
    expect(refused.status).toBe(403);
    await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
    const retried = await call('POST', '/api/messages', body, keys.ann, 'key-2');
    expect(retried).toMatchObject({ status: 202, replayed: false });
    expect(await count('kitchen')).toBe(1);
  });

  it('forgets a key after 24 hours', async () => {
    const first = await call('PUT', '/api/users/ann', { displayName: 'Ann' }, keys.ann, 'key-3');
    expect(first.status).toBe(200);
    expect((await call('PUT', '/api/users/ann', { displayName: 'Annie' }, keys.ann, 'key-3')).status).toBe(422);
    clock.advance(IDEMPOTENCY_KEY_TTL_MS);
    const later = await call('PUT', '/api/users/ann', { displayName: 'Annie' }, keys.ann, 'key-3');
    expect(later).toMatchObject({ status: 200, replayed: false });
    expect(JSON.parse(later.text)).toMatchObject({ displayName: 'Annie' });
  });

  it('erases stored responses when a user is purged, since they may quote what the user said', async () => {
    await mneme.putChannel({ id: 'carol-dm', members: ['carol'] });
    const body = { channelId: 'carol-dm', sender: 'carol', content: 'My locker code is 4512' };
    const first = await call('POST', '/api/messages', body, keys.admin, 'carol-key');
    expect(first.status).toBe(202);
    expect((await call('POST', '/api/messages', body, keys.admin, 'carol-key')).replayed).toBe(true);
    expect((await call('DELETE', '/api/users/carol/data', undefined, keys.admin)).status).toBe(200);
    const after = await call('POST', '/api/messages', body, keys.admin, 'carol-key');
    expect(after).toMatchObject({ status: 409, replayed: false, type: 'application/problem+json' });
    expect(after.text).not.toContain('4512');
    expect(await count('carol-dm')).toBe(0);
  });

  // Attack finding (wt-attack, 2026-12-01): a purge of one user deleted every stored key, so another
  // user's retry of an acknowledged write after it was done a second time.
  it("does not do a retried write twice after another user's purge: the retry learns it was done", async () => {
    await mneme.putChannel({ id: 'dave-dm', members: ['dave'] });
    await call('POST', '/api/messages', { channelId: 'dave-dm', sender: 'dave', content: 'hello' }, keys.admin);
    const before = await count('room');
    const body = post('The plumber comes on Thursday at nine');
    const first = await call('POST', '/api/messages', body, keys.ann, 'plumber-key');
    expect(first).toMatchObject({ status: 202, replayed: false });
    expect((await call('DELETE', '/api/users/dave/data', undefined, keys.admin)).status).toBe(200);
    const retry = await call('POST', '/api/messages', body, keys.ann, 'plumber-key');
    expect(retry).toMatchObject({ status: 409, replayed: false, type: 'application/problem+json' });
    expect(JSON.parse(retry.text)).toMatchObject({
      code: 'CONFLICT',
      detail: expect.stringMatching(/plumber-key was done before.*not done again/),
    });
    expect(await count('room')).toBe(before + 1);
    const other = await call('POST', '/api/messages', post('Something else entirely'), keys.ann, 'plumber-key');
    expect(other.status).toBe(422);
    expect(await count('room')).toBe(before + 1);
  });

  it('acknowledges a message sent again under its externalId with duplicate: true and the stored id', async () => {
    const message = { ...post('Our standup moved to 9:30'), externalId: '$matrix-event-1' };
    const first = JSON.parse((await call('POST', '/api/messages', message, keys.ann)).text);
    const second = await call('POST', '/api/messages', message, keys.ann);
    expect(second.status).toBe(202);
    expect(JSON.parse(second.text)).toMatchObject({
      duplicate: true,
      messages: [{ id: first.messages[0].id, externalId: '$matrix-event-1', duplicate: true }],
    });
  });

  it('appends a batch in one transaction, and refuses a batch with a bad item naming its index, writing nothing', async () => {
    const before = await count('room');
    const batch = {
      messages: [
        post('First of the batch'),
        { channelId: 'room', userId: 'ann', userMessage: 'Second, an exchange', assistantReply: 'Indeed.' },
        { ...post('Third, with an id'), externalId: 'batch-3' },
      ],
    };
    const stored = await call('POST', '/api/messages/batch', batch, keys.admin, 'batch-key');
    expect(stored.status).toBe(202);
    const { results } = JSON.parse(stored.text) as { results: Array<{ duplicate: boolean; messages: unknown[] }> };
    expect(results.map((result) => [result.duplicate, result.messages.length])).toEqual([
      [false, 1],
      [false, 2],
      [false, 1],
    ]);
    expect(await count('room')).toBe(before + 4);
    expect(await call('POST', '/api/messages/batch', batch, keys.admin, 'batch-key')).toMatchObject({
      status: 202,
      replayed: true,
      text: stored.text,
    });

    const bad = await call(
      'POST',
      '/api/messages/batch',
      { messages: [post('would be first'), post(''), post('would be third')] },
      keys.admin,
    );
    expect(bad).toMatchObject({ status: 422, type: 'application/problem+json' });
    expect(JSON.parse(bad.text).detail).toMatch(/^invalid message at index 1: content: /);
    const notObject = await call('POST', '/api/messages/batch', { messages: [post('fine'), 'text'] }, keys.admin);
    expect(JSON.parse(notObject.text)).toMatchObject({ status: 422, errors: [{ path: 'messages.1' }] });
    const tooMany = await call(
      'POST',
      '/api/messages/batch',
      { messages: Array.from({ length: 1001 }, (_, index) => post(`message ${index}`)) },
      keys.admin,
    );
    expect(tooMany.status).toBe(422);
    expect(JSON.parse(tooMany.text).detail).toMatch(/more than 1000 items/);
    expect(await count('room')).toBe(before + 4);
  });

  it("applies POST /api/messages's access rules to every item of a batch", async () => {
    const before = await count('room');
    const forOther = await call(
      'POST',
      '/api/messages/batch',
      { messages: [post('mine'), post('yours', 'bob')] },
      keys.ann,
    );
    expect(forOther.status).toBe(403);
    const exchange = await call(
      'POST',
      '/api/messages/batch',
      { messages: [{ channelId: 'room', userId: 'ann', userMessage: 'hi', assistantReply: 'hello' }] },
      keys.ann,
    );
    expect(exchange.status).toBe(403);
    const outside = await call(
      'POST',
      '/api/messages/batch',
      { messages: [{ ...post('x'), channelId: 'secret' }] },
      keys.ann,
    );
    expect(outside.status).toBe(403);
    expect(await count('room')).toBe(before);
    const own = await call('POST', '/api/messages/batch', { messages: [post('mine, in a batch')] }, keys.ann);
    expect(own.status).toBe(202);
    expect(await count('room')).toBe(before + 1);
  });

  it('never replays a search or a context block: a member removed from a channel is refused, key or not', async () => {
    await mneme.putChannel({ id: 'den', members: ['ann', 'bob'] });
    await mneme.remember({ content: 'The den safe code is 4471', scope: 'room', channelId: 'den', userId: 'ann' });
    const search = { query: 'den safe code', viewer: { channelId: 'den' } };
    const first = await call('POST', '/api/memories/search', search, keys.bob, 'search-1');
    expect(first).toMatchObject({ status: 200, replayed: false });
    expect(first.text).toContain('4471');
    const context = await call('POST', '/api/context', search, keys.bob, 'context-1');
    expect(context.text).toContain('4471');
    await mneme.putChannel({ id: 'den', members: ['ann'] });
    for (const [path, key] of [
      ['/api/memories/search', 'search-1'],
      ['/api/context', 'context-1'],
    ] as const) {
      const retry = await call('POST', path, search, keys.bob, key);
      expect(retry).toMatchObject({ status: 403, replayed: false, type: 'application/problem+json' });
      expect(retry.text).not.toContain('4471');
    }
  });

  it("keeps two administrator keys of one label apart: the second key's write is done, not answered with the first's", async () => {
    const first = (await mneme.apiKeys.create({ label: 'deploy' })).key;
    const second = (await mneme.apiKeys.create({ label: 'deploy' })).key;
    const before = await count('room');
    const body = post('The backup runs at 02:00', 'bob');
    const one = await call('POST', '/api/messages', body, first, 'nightly');
    const two = await call('POST', '/api/messages', body, second, 'nightly');
    expect(one).toMatchObject({ status: 202, replayed: false });
    expect(two).toMatchObject({ status: 202, replayed: false });
    expect(await count('room')).toBe(before + 2);
    // Each key still has its own retry protection.
    expect(await call('POST', '/api/messages', body, second, 'nightly')).toMatchObject({
      replayed: true,
      text: two.text,
    });
    expect(await count('room')).toBe(before + 2);
  });

  it('documents the batch route and the Idempotency-Key header of every write', async () => {
    const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>>;
    };
    const batch = document.paths['/api/messages/batch']?.post;
    expect(batch?.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }));
    expect(document.paths['/api/memories/{id}']?.patch?.parameters).toContainEqual(
      expect.objectContaining({ name: 'Idempotency-Key' }),
    );
    for (const read of [document.paths['/api/memories']?.get, document.paths['/api/memories/search']?.post]) {
      expect(read?.parameters ?? []).not.toContainEqual(expect.objectContaining({ name: 'Idempotency-Key' }));
    }
  });
});

describe('an administrator key across the upgrade of its key space (ADR 14, session 6)', () => {
  it('replays a write the key made before the upgrade, stored under its label, instead of doing it again', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-idem-upgrade-'));
    const path = join(folder, 'mneme.db');
    const mneme = await createMneme({ path, logger: { warn: () => {}, info: () => {} } });
    const server = await startHttpServer({ mneme, port: 0 });
    try {
      const { key, id } = await mneme.apiKeys.create({ label: 'deploy' });
      const send = (content: string) =>
        fetch(`${server.url}/api/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'idempotency-key': 'n1' },
          body: JSON.stringify({ channelId: 'ops', sender: 'bob', content }),
        });
      const first = await send('The backup runs at 02:00');
      expect(first.status).toBe(202);
      const firstBody = await first.text();
      // What a version before session 4 stored: the same row under the key's label (written once extraction,
      // which writes too, is idle).
      await mneme.whenIdle();
      const file = new Database(path, { timeout: 10_000 });
      try {
        const moved = file
          .prepare("UPDATE idempotency_keys SET principal = 'admin:deploy' WHERE principal = ?")
          .run(`admin-key:${id}`);
        expect(moved.changes).toBe(1);
      } finally {
        file.close();
      }
      const retry = await send('The backup runs at 02:00');
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(await retry.text()).toBe(firstBody);
      expect(await mneme.turns({ channelId: 'ops', count: 10 })).toHaveLength(1);
      // Another request under that key is this key's own and is done.
      expect((await send('The restore test runs on Fridays')).headers.get('idempotent-replayed')).toBeNull();
      expect(await mneme.turns({ channelId: 'ops', count: 10 })).toHaveLength(2);
    } finally {
      await server.close();
      await mneme.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('concurrent retries over HTTP', () => {
  it('does the work once: a retry while the first request runs gets a 409, one after it the stored response', async () => {
    const fake = createFakeEmbeddingModel();
    let hold: { started: () => void; released: Promise<void> } | null = null;
    // The first request's embedding call waits until the test lets it go, so it is still running.
    const embedder = {
      modelId: fake.modelId,
      dimensions: fake.dimensions,
      async embed(...parameters: Parameters<typeof fake.embed>) {
        const held = hold;
        if (held) {
          held.started();
          await held.released;
        }
        return fake.embed(...parameters);
      },
    };
    const mneme = await createMneme({ path: ':memory:', embedder, logger: { warn: () => {}, info: () => {} } });
    const server = await startHttpServer({ mneme, port: 0 });
    try {
      const request = () =>
        fetch(`${server.url}/api/memories`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'remember-once' },
          body: JSON.stringify({ content: 'The office wifi password rotates monthly', scope: 'global' }),
        });
      let release = () => {};
      const started = new Promise<void>((resolve) => {
        hold = { started: resolve, released: new Promise((done) => (release = done)) };
      });
      const first = request();
      await started;
      hold = null;
      const during = await request();
      expect(during.status).toBe(409);
      expect(await during.json()).toMatchObject({ code: 'CONFLICT', detail: expect.stringMatching(/still running/) });
      release();
      const answered = await first;
      expect(answered.status).toBe(201);
      const body = await answered.text();
      const after = await request();
      expect(after.status).toBe(201);
      expect(after.headers.get('idempotent-replayed')).toBe('true');
      expect(await after.text()).toBe(body);
      expect((await mneme.list({ limit: 10 })).total).toBe(1);
    } finally {
      await server.close();
      await mneme.close();
    }
  });
});
