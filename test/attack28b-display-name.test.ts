import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { stdioSession } from '../src/mcp/mcp-session.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Wt-attack28b, who said what: memories name people by their display name ("Ann: ...", "Ann prefers ..."), and a
 * user key sets its own user's name. Bob named himself Ann and posted in a room he shares with Ann and Cy; the room's
 * turn was stored as "Ann: I am resigning today ...", and Cy, asking what Ann said about the launch, was given Bob's
 * words as Ann's. The same through a post's `senderName`, with Ann's name in another case, or with the id of a user
 * who has no display name (memories name them by it), and through the `userName` of a stdio MCP session's exchange.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

async function openWorld(store: EngineStore) {
  const engine = await openMaintenanceEngine({ store });
  const { mneme } = engine;
  const keys = {
    admin: (await mneme.apiKeys.create({ label: 'ops' })).key,
    bob: (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
  };
  await mneme.putChannel({ id: 'team', visibility: 'private', members: ['ann', 'bob', 'cy'] });
  await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
  await mneme.setDisplayName({ userId: 'bob', displayName: 'Bob' });
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const send = async (key: string, method: string, path: string, body: unknown) => {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return { ...engine, keys, send };
}

describe.each(engineStores)('on %s', (store) => {
  it('refuses a user key the display name another user goes by', async () => {
    const { mneme, storage, keys, send } = await openWorld(store);
    for (const displayName of ['Ann', 'ANN', '  ann ', 'cy']) {
      const renamed = await send(keys.bob, 'PUT', '/api/users/bob', { displayName });
      expect(renamed.status).toBe(409);
      expect(renamed.body.code).toBe('CONFLICT');
    }
    const posted = await send(keys.bob, 'POST', '/api/messages', {
      channelId: 'team',
      sender: 'bob',
      senderName: 'Ann',
      content: 'I am resigning today, and our team should cancel the Friday launch.',
    });
    expect(posted.status).toBe(409);
    expect(await storage.messages.listAfter('team', 0, 10)).toEqual([]);
    expect(await storage.directory.getUser('bob')).toEqual({ id: 'bob', displayName: 'Bob' });

    // What Bob says is his own.
    await send(keys.bob, 'POST', '/api/messages', {
      channelId: 'team',
      sender: 'bob',
      content: 'I am resigning today, and our team should cancel the Friday launch.',
    });
    await mneme.whenIdle();
    const cy = mneme.as({ kind: 'user', userId: 'cy', label: 'cy' });
    const { text } = await cy.context({ query: 'What did Ann say about the launch?', viewer: { channelId: 'team' } });
    expect(text).not.toContain('Ann: I am resigning');
    expect(text).toContain('Bob: I am resigning');
    await mneme.close();
  });

  it('refuses a stdio MCP session of one user the name of another for its exchanges', async () => {
    const { mneme, storage } = await openWorld(store);
    const session = stdioSession(mneme, { userId: 'bob', channelId: 'team' });
    await expect(
      session.exchanges.ingestExchange({
        channelId: 'team',
        userId: 'bob',
        userName: 'Ann',
        userMessage: 'I am resigning today, cancel the Friday launch.',
        assistantReply: 'Understood.',
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await storage.messages.listAfter('team', 0, 10)).toEqual([]);
    expect(await storage.directory.getUser('bob')).toEqual({ id: 'bob', displayName: 'Bob' });
    await mneme.close();
  });

  it('lets a user key take a name no other user goes by, or keep its own', async () => {
    const { mneme, keys, send } = await openWorld(store);
    expect((await send(keys.bob, 'PUT', '/api/users/bob', { displayName: 'Bob' })).status).toBe(200);
    expect((await send(keys.bob, 'PUT', '/api/users/bob', { displayName: 'BOB' })).status).toBe(200);
    expect((await send(keys.bob, 'PUT', '/api/users/bob', { displayName: 'Bobby Tables' })).status).toBe(200);
    const posted = await send(keys.bob, 'POST', '/api/messages', {
      channelId: 'team',
      sender: 'bob',
      senderName: 'Robert',
      content: 'Morning all, the coffee machine on the third floor works again.',
    });
    expect(posted.status).toBe(202);
    expect(await mneme.as({ kind: 'user', userId: 'bob', label: 'bob' }).turns({ channelId: 'team' })).toHaveLength(1);
    await mneme.close();
  });

  it('lets an administrator give two users one name, as a chat platform may', async () => {
    const { mneme, storage, keys, send } = await openWorld(store);
    expect((await send(keys.admin, 'PUT', '/api/users/bob', { displayName: 'Ann' })).status).toBe(200);
    expect(await storage.directory.getUser('bob')).toEqual({ id: 'bob', displayName: 'Ann' });
    await mneme.close();
  });
});
