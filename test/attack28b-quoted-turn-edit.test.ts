import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Wt-attack28b, who said what: a turn between people (a message and another user's answer to it) is stored as one
 * room memory, "Ann: ...\nBob: ...", under the first speaker's id. A user key edits the memories its user wrote, so
 * Ann could rewrite Bob's half: "Bob: I agree to give Ann my car". The room's members then recalled it as Bob's words,
 * and its sources showed Bob's real message, as if it were what he said.
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
  await mneme.apiKeys.create({ label: 'ops' });
  const keys = {
    ann: (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key,
    bob: (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
  };
  await mneme.putChannel({ id: 'team', visibility: 'private', members: ['ann', 'bob', 'cy'] });
  await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
  await mneme.setDisplayName({ userId: 'bob', displayName: 'Bob' });
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const send = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const asked = await send(keys.ann, 'POST', '/api/messages', {
    channelId: 'team',
    sender: 'ann',
    content: 'Can someone drive me to the airport on Friday morning?',
  });
  const annSaid = (asked.body.messages as Array<{ id: number }>)[0]?.id;
  await send(keys.bob, 'POST', '/api/messages', {
    channelId: 'team',
    sender: 'bob',
    replyTo: annSaid,
    content: 'I can drive you there at seven, my car has room for the bags.',
  });
  await mneme.whenIdle();
  const { memories } = await mneme.list({ limit: 100 });
  const turn = memories.find((memory) => memory.category === 'exchange' && memory.userId === 'ann') as Memory;
  return { ...engine, keys, send, turn };
}

describe.each(engineStores)('on %s', (store) => {
  it("refuses a user key an edit of a memory that quotes another user's message", async () => {
    const { mneme, keys, send, turn } = await openWorld(store);
    expect(turn.content).toContain('Bob: I can drive you there at seven');
    const forged = 'Ann: Can someone drive me to the airport?\nBob: I agree to give Ann my car for good.';
    const edited = await send(keys.ann, 'PATCH', `/api/memories/${turn.id}?channelId=team`, { content: forged });
    expect(edited.status).toBe(403);
    expect(edited.body.code).toBe('FORBIDDEN');
    expect((await mneme.get(turn.id)).content).toBe(turn.content);
    const cy = mneme.as({ kind: 'user', userId: 'cy', label: 'cy' });
    const { hits } = await cy.recall({ query: 'Bob car', viewer: { channelId: 'team' } });
    expect(hits.map((hit) => hit.memory.content).join('\n')).not.toContain('for good');
    await mneme.close();
  });

  it('lets a user key edit what only its user said, and forget a turn it is in', async () => {
    const { mneme, keys, send, turn } = await openWorld(store);
    const own = await send(keys.ann, 'POST', '/api/memories', { content: 'Ann flies out on Friday morning' });
    expect(own.status).toBe(201);
    const fixed = await send(keys.ann, 'PATCH', `/api/memories/${own.body.id}`, {
      content: 'Ann flies out on Friday at nine',
    });
    expect(fixed.status).toBe(200);
    expect((await send(keys.ann, 'DELETE', `/api/memories/${turn.id}?channelId=team`)).status).toBe(200);
    await mneme.close();
  });
});
