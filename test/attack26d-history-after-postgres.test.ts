import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/**
 * Attack finding (wt-d, attack 26d): the page of a history starts after version `after`, any whole number up to 2^53.
 * PostgreSQL keeps a version as an integer (32 bits), and the store compared it with the number as given: an `after`
 * of 2^31 or more failed the read there (`value "2147483648" is out of range for type integer`), so a user key asking
 * for a page past the end of its own memory's history got 500 STORE_FAILED, logged as an unexpected error, where
 * SQLite answers the empty page. Both stores now answer it empty.
 */
const errors: unknown[] = [];
let mneme: Mneme;
let server: RunningHttpServer;
let bob: string;
let memoryId: number;

beforeAll(async () => {
  mneme = await createMneme({ path: 'pglite:memory:', logger: { warn: () => {}, info: () => {} } });
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  const asBob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
  memoryId = (await asBob.remember({ content: 'Bob keeps bees on the roof', scope: 'personal', userId: 'bob' })).id;
  await asBob.update({ id: memoryId, content: 'Bob keeps three hives of bees on the roof' });
  server = await startHttpServer({ mneme, port: 0, logError: (error) => errors.push(error) });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await mneme?.close();
});

describe('a page of history after a version past 32 bits on PostgreSQL', () => {
  it.each([2 ** 31, 2 ** 53 - 1])('is the empty page for after %d, not a store failure', async (after) => {
    const response = await fetch(`${server.url}/api/memories/${memoryId}/history?after=${after}`, {
      headers: { authorization: `Bearer ${bob}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([]);
    expect(await mneme.history({ id: memoryId, after, limit: 10 })).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('still answers the versions after a small after, oldest first', async () => {
    const response = await fetch(`${server.url}/api/memories/${memoryId}/history?after=1`, {
      headers: { authorization: `Bearer ${bob}` },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as Array<{ version: number }>).map((version) => version.version)).toEqual([2]);
  });
});
