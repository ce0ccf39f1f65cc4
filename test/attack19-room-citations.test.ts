import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import type { NewMemory } from '../src/storage/memory-store.js';
import {
  closeEngineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * Wt-attack19 (ADR 5, session 18): an audience change of a room (a member added, a sender's first message) reads only
 * the room's memories that cite another channel or are built on memories (7e0f931), and each memory's channels come
 * from one recursive statement over `source_ids` (dceed74). Attacked with room memories that cite the room's own
 * channel and a private one, that cite only another channel's message, and insights built on insights (three deep)
 * whose first sources cite the private channel; read by Carl's and Ann's keys over the HTTP routes.
 */
describe.each(serverEngineStores)('the memories of a room that cite another channel, on %s', (store) => {
  let engine: MaintenanceEngine;
  const keys: Record<string, string> = {};
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());
  afterEach(async () => {
    await engine.mneme.close();
  });

  /** The memories' ids Carl's (or Ann's) key finds through search, get and list with this viewer. */
  async function reads(user: string, ids: readonly number[], viewer: Record<string, string>): Promise<number[]> {
    const app = createHttpApp({ mneme: engine.mneme, apiKeys: engine.mneme.apiKeys, logError: () => {} });
    const call = async (method: string, path: string, body?: object) => {
      const response = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${keys[user]}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      return { status: response.status, text };
    };
    const seen = new Set<number>();
    const search = await call('POST', '/api/memories/search', {
      query: 'wombat vault combination',
      topK: 50,
      viewer: { ...viewer, userId: user },
    });
    expect(search.status, search.text).toBe(200);
    for (const hit of (JSON.parse(search.text) as { hits: Array<{ memory: { id: number } }> }).hits) {
      seen.add(hit.memory.id);
    }
    const listed = await call('GET', `/api/memories?${new URLSearchParams({ ...viewer, limit: '200' })}`);
    expect(listed.status, listed.text).toBe(200);
    for (const memory of (JSON.parse(listed.text) as { memories: Array<{ id: number }> }).memories) {
      seen.add(memory.id);
    }
    for (const id of ids) {
      const got = await call('GET', `/api/memories/${id}?${new URLSearchParams({ ...viewer, userId: user })}`);
      if (got.status === 200) seen.add(id);
    }
    return ids.filter((id) => seen.has(id));
  }

  /** Hall and vault, Bob and Ann in both; Bob's words in each; the ids of his message in hall and in vault. */
  async function world(): Promise<{ hall: number; vault: number }> {
    engine = await openMaintenanceEngine({ store });
    const { mneme } = engine;
    await mneme.apiKeys.create({ label: 'ops' });
    for (const user of ['ann', 'carl']) keys[user] = (await mneme.apiKeys.create({ label: user, userId: user })).key;
    await mneme.putChannel({ id: 'hall', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'vault', members: ['bob', 'ann'] });
    const said = async (channelId: string, content: string) =>
      (await mneme.ingest({ channelId, sender: 'bob', senderName: 'Bob', content })).messages[0]?.id ?? 0;
    return {
      hall: await said('hall', 'The wombat lunch is on Friday in the hall'),
      vault: await said('vault', 'The vault combination is wombat-nine-four-seven'),
    };
  }

  /** A room memory as an extraction, a move, a merge or a dream leaves it. */
  function roomMemory(channelId: string, content: string, cites: number[], builtOn: number[] = []): NewMemory {
    return {
      content,
      category: builtOn.length > 0 ? 'pattern' : 'fact',
      sector: 'semantic',
      scope: 'room',
      owner: `room:${channelId}`,
      userId: builtOn.length > 0 ? null : 'bob',
      channelId,
      projectId: null,
      topicId: null,
      source: builtOn.length > 0 ? 'dream' : 'extraction',
      importance: 0.5,
      pinned: false,
      sourceMessageIds: cites,
      sourceIds: builtOn,
      embedding: null,
    };
  }

  async function insert(memory: NewMemory): Promise<number> {
    const [stored] = await engine.storage.memories.insert([memory], { at: engine.clock.now(), actor: 'test' });
    if (!stored) throw new Error('nothing stored');
    return stored.id;
  }

  it('keeps from a sender who joins the room what cites the private channel, itself or three insights deep', async () => {
    const said = await world();
    const own = await insert(roomMemory('hall', 'Bob: wombat lunch on Friday', [said.hall]));
    const both = await insert(
      roomMemory('hall', 'Bob: wombat lunch, vault combination wombat-nine', [said.hall, said.vault]),
    );
    const other = await insert(roomMemory('hall', 'Bob: the vault combination is wombat-nine-four', [said.vault]));
    const secret = await insert(roomMemory('vault', 'Bob: vault combination wombat-nine-four-seven', [said.vault]));
    // An insight on the vault's memory and the hall's, moved into the hall (whose readers read the vault), and two
    // insights each on the one before.
    const first = await insert(roomMemory('hall', 'Pattern: wombat lunch and vault combination', [], [own, secret]));
    const second = await insert(roomMemory('hall', 'Pattern of patterns: the wombat vault combination', [], [first]));
    const third = await insert(roomMemory('hall', 'Pattern, third: wombat vault combination again', [], [second]));
    const quoting = [both, other, first, second, third];

    // Carl's first message in the hall, through an administrator's ingest: he joins it.
    await engine.mneme.ingest({ channelId: 'hall', sender: 'carl', senderName: 'Carl', content: 'Hello all' });
    expect(await reads('carl', [own, ...quoting], { channelId: 'hall' })).toEqual([own]);
    for (const id of quoting) expect(await engine.mneme.get(id)).toMatchObject({ scope: 'room', channelId: 'vault' });
    expect(await reads('ann', [own, ...quoting, secret], { channelId: 'vault' })).toEqual([...quoting, secret]);
  });

  it('moves an insight of the room three deep on a private channel when a reader leaves that channel', async () => {
    const said = await world();
    const secret = await insert(roomMemory('vault', 'Bob: vault combination wombat-nine-four-seven', [said.vault]));
    const first = await insert(roomMemory('hall', 'Pattern: the wombat vault combination', [], [secret]));
    const second = await insert(roomMemory('hall', 'Pattern of patterns: wombat vault combination', [], [first]));
    const third = await insert(roomMemory('hall', 'Pattern, third: wombat vault combination again', [], [second]));

    await engine.mneme.putChannel({ id: 'vault', members: ['bob'] });
    expect(await reads('ann', [first, second, third], { channelId: 'hall' })).toEqual([]);
    for (const id of [first, second, third]) {
      expect(await engine.mneme.get(id)).toMatchObject({ scope: 'room', channelId: 'vault' });
    }
  });
});
