import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Wt-attack18: an audience change (ADR 5, 2026-12-03) moves a memory citing two channels into the room of one
 * whose readers may read both. That room's readers are checked when it is chosen, never again: a room that
 * gains readers afterwards (a member added, a sender joining it by an administrator's ingest, the channel made
 * public) showed them the other channel's words. And a public room was chosen by its members alone, while
 * anyone may read a public channel's room.
 */
describe('a memory moved into a room because of another channel it cites, once that room gains readers', () => {
  let mneme: Mneme;
  let carlKey: string;
  const query = 'osprey-lane office merger talks';

  beforeEach(async () => {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
    });
    await mneme.apiKeys.create({ label: 'ops' });
    carlKey = (await mneme.apiKeys.create({ label: 'carl', userId: 'carl' })).key;
  });
  afterEach(async () => {
    await mneme.close();
  });

  /** What Carl's key reads of the memory through the HTTP routes with this viewer: search, context, get, list. */
  async function carlReads(id: number, viewer: Record<string, string>): Promise<string[]> {
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
    const call = async (method: string, path: string, body?: object) => {
      const response = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${carlKey}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, text: await response.text() };
    };
    const seen: string[] = [];
    const params = new URLSearchParams({ ...viewer, userId: 'carl' }).toString();
    const ids = (text: string, field: 'hits' | 'memories') =>
      (JSON.parse(text) as Record<string, Array<{ id?: number; memory?: { id: number } }>>)[field]?.map(
        (entry) => entry.memory?.id ?? entry.id,
      ) ?? [];
    const body = { query, topK: 50, viewer: { ...viewer, userId: 'carl' } };
    const search = await call('POST', '/api/memories/search', body);
    if (ids(search.text, 'hits').includes(id)) seen.push('search');
    const context = await call('POST', '/api/context', { query, viewer: body.viewer });
    if (ids(context.text, 'hits').includes(id)) seen.push('context');
    const got = await call('GET', `/api/memories/${id}?${params}`);
    if (got.status === 200) seen.push('get');
    const listed = await call('GET', `/api/memories?${new URLSearchParams({ ...viewer, limit: '200' })}`);
    if (ids(listed.text, 'memories').includes(id)) seen.push('list');
    for (const answer of [search, context, listed]) expect(answer.status, answer.text).toBe(200);
    return seen;
  }

  /**
   * Bob says it in both channels under the topic (its memory cites a message of each); Dave joins the topic and
   * reads neither, so the memory moves into the room of the channel whose readers read both.
   */
  async function movedIntoARoom(first: string, second: string): Promise<number> {
    await mneme.createTopic({ id: 'merger', members: ['bob'] });
    for (const [channelId, content] of [
      [first, 'I prefer the osprey-lane office for the merger talks'],
      [second, 'I prefer the osprey-lane office for the merger talks, as I said'],
    ] as const) {
      await mneme.ingest({ channelId, sender: 'bob', senderName: 'Bob', topicId: 'merger', content });
    }
    await mneme.whenIdle();
    await mneme.extract('merger');
    const channelOf = new Map<number, string>();
    for (const channelId of [first, second]) {
      for (const message of (await mneme.messages({ channelId, limit: 100 })).messages) {
        channelOf.set(message.id, channelId);
      }
    }
    const session = (await mneme.list({ scope: 'session', limit: 100 })).memories.find(
      (memory) => new Set(memory.sourceMessageIds.map((id) => channelOf.get(id))).size === 2,
    );
    if (!session) throw new Error('conversation extraction wrote no memory citing both channels');
    await mneme.createTopic({ id: 'merger', members: ['bob', 'dave'] });
    return session.id;
  }

  it('keeps it from a member added to that room who cannot read the other channel', async () => {
    await mneme.putChannel({ id: 'north', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'south', members: ['bob'] });
    const id = await movedIntoARoom('north', 'south');
    expect(await mneme.get(id)).toMatchObject({ scope: 'room', channelId: 'south' });

    await mneme.putChannel({ id: 'south', members: ['bob', 'carl'] });
    expect(await carlReads(id, { channelId: 'south' })).toEqual([]);
    expect(await carlReads(id, {})).toEqual([]);
    // Neither room's readers may read the other channel now: the speaker's own.
    expect(await mneme.get(id)).toMatchObject({ scope: 'personal', userId: 'bob' });
  });

  it('keeps it from a sender who joins that room by an administrators ingest', async () => {
    await mneme.putChannel({ id: 'north', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'south', members: ['bob'] });
    const id = await movedIntoARoom('north', 'south');
    expect(await mneme.get(id)).toMatchObject({ scope: 'room', channelId: 'south' });

    await mneme.ingest({ channelId: 'south', sender: 'carl', senderName: 'Carl', content: 'Hello all' });
    await mneme.whenIdle();
    expect(await carlReads(id, { channelId: 'south' })).toEqual([]);
  });

  it('keeps it from everyone once that room is made public', async () => {
    await mneme.putChannel({ id: 'north', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'south', members: ['bob'] });
    const id = await movedIntoARoom('north', 'south');

    await mneme.putChannel({ id: 'south', visibility: 'public' });
    expect(await carlReads(id, { channelId: 'south' })).toEqual([]);
  });

  it('never moves it into a public room, which anyone may read', async () => {
    // The lobby is public and only Bob has posted there; the vault is private.
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
    await mneme.putChannel({ id: 'vault', members: ['bob', 'ann'] });
    const id = await movedIntoARoom('lobby', 'vault');
    expect(await carlReads(id, { channelId: 'lobby' })).toEqual([]);
    expect(await mneme.get(id)).toMatchObject({ scope: 'room', channelId: 'vault' });
  });
});
