import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import { createFakeEmbeddingModel } from '../src/testing.js';
import {
  closeEngineStores,
  daysAfter,
  type EngineStore,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Session 32, helper C: what a memory shows besides its text. Bob and Eve both read the team room; Bob's recalls
 * touched its memories (access count, last access, reinforcement), and every face showed Eve those counts and times,
 * and ranked and scored her recalls by them: when and how often Bob's recalls found a memory of the room. An
 * administrator's restore brought back a memory the audience check archived (its readers may not read one of the
 * channels it came from), to those readers. And decay's report counted a memory whose put to rest was refused (Bob
 * recalled it between decay's read and its write) as decayed. Real keys over a real HTTP server on loopback, on SQLite
 * and PGlite.
 */
const start = '2024-06-01T00:00:00.000Z';

beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

/** A JSON answer, read field by field by the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: the answers of many routes, each asserted field by field
type Json = any;

interface World extends MaintenanceEngine {
  server: RunningHttpServer;
  keys: { admin: string; bob: string; eve: string; carl: string };
  send(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }>;
  close(): Promise<void>;
}

async function openWorld(store: EngineStore, policy: Parameters<typeof openMaintenanceEngine>[0] = {}): Promise<World> {
  const engine = await openMaintenanceEngine({ store, start, embedder: createFakeEmbeddingModel(), ...policy });
  const { mneme } = engine;
  const keys = {
    admin: (await mneme.apiKeys.create({ label: 'ops' })).key,
    bob: (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
    eve: (await mneme.apiKeys.create({ label: 'eve', userId: 'eve' })).key,
    carl: (await mneme.apiKeys.create({ label: 'carl', userId: 'carl' })).key,
  };
  const server = await startHttpServer({ mneme, port: 0, logError: (error) => console.error(error) });
  const send: World['send'] = async (key, method, path, body) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : null };
  };
  return {
    ...engine,
    server,
    keys,
    send,
    async close() {
      await server.close();
      await mneme.close();
    },
  };
}

/** Everything Eve's key reads about the team room, without touching anything (so reading twice is comparable). */
async function whatEveSees(world: World, ids: readonly number[]) {
  const { send, keys } = world;
  const seen: Record<string, unknown> = {};
  for (const id of ids) seen[`get ${id}`] = (await send(keys.eve, 'GET', `/api/memories/${id}?channelId=team`)).json;
  seen.list = (await send(keys.eve, 'GET', '/api/memories?channelId=team')).json;
  for (const mode of ['hybrid', 'recent-first']) {
    seen[`search ${mode}`] = (
      await send(keys.eve, 'POST', '/api/memories/search', {
        query: 'team offsite',
        viewer: { channelId: 'team' },
        mode,
        explain: true,
        inspect: true,
      })
    ).json;
  }
  seen.context = (
    await send(keys.eve, 'POST', '/api/context', {
      query: 'team offsite',
      viewer: { channelId: 'team' },
      inspect: true,
    })
  ).json;
  return seen;
}

/**
 * A memory of no user built from north's and south's messages (as a host's summariser writes one), which the audience
 * check archives when both channels are made private with different members: no room's readers read both.
 */
async function archivedSummary(world: World): Promise<number> {
  const { mneme, send, keys, storage } = world;
  await mneme.putChannel({ id: 'north', visibility: 'public', members: ['bob', 'eve'] });
  await mneme.putChannel({ id: 'south', visibility: 'public', members: ['bob', 'carl'] });
  const [north] = (await mneme.ingest({ channelId: 'north', sender: 'bob', content: 'The north gate code is 1234' }))
    .messages;
  const [south] = (await mneme.ingest({ channelId: 'south', sender: 'bob', content: 'The south vault code is 9876' }))
    .messages;
  if (!north || !south) throw new Error('no message appended');
  // A memory of no user built from both channels, as a host's summariser writes one.
  const [both] = await storage.memories.insert(
    [
      globalMemory('Gate 1234 and vault 9876 open the quokka compound', {
        source: 'episode',
        sourceMessageIds: [north.id, south.id],
      }),
    ],
    { at: Date.parse(start), actor: null },
  );
  if (!both) throw new Error('no memory inserted');
  expect((await send(keys.admin, 'PUT', '/api/channels/north', { visibility: 'private' })).status).toBe(200);
  expect((await send(keys.admin, 'PUT', '/api/channels/south', { visibility: 'private' })).status).toBe(200);
  const archived = (await send(keys.admin, 'GET', `/api/memories/${both.id}`)).json;
  expect(archived).toMatchObject({ scope: 'room', channelId: 'north' });
  expect(archived.archivedAt).not.toBeNull();
  return both.id;
}

describe.each(engineStores)('on %s', (store) => {
  it('shows Eve nothing of when or how often Bob recalled the memories of a room they share, on every face', async () => {
    const world = await openWorld(store);
    const { mneme, send, keys, clock } = world;
    try {
      await mneme.putChannel({ id: 'team', visibility: 'private', members: ['bob', 'eve'] });
      const older = await mneme.remember({
        content: 'The team offsite is in Lisbon',
        scope: 'room',
        channelId: 'team',
      });
      clock.advance(60_000);
      const newer = await mneme.remember({
        content: 'The team offsite budget is 900 euros',
        scope: 'room',
        channelId: 'team',
      });
      const own = await mneme.remember({ content: 'My own offsite notes', scope: 'personal', userId: 'eve' });
      clock.set(daysAfter(start, 3));

      const before = await whatEveSees(world, [older.id, newer.id]);
      // Bob, three times, on the older one, at a time Eve must not learn.
      for (let time = 0; time < 3; time++) {
        const found = await send(keys.bob, 'POST', '/api/memories/search', {
          query: 'Lisbon',
          viewer: { channelId: 'team' },
          topK: 1,
        });
        expect(found.json.hits.map((hit: { memory: { id: number } }) => hit.memory.id)).toEqual([older.id]);
      }
      const bobsTime = new Date(clock.now()).toISOString();
      const after = await whatEveSees(world, [older.id, newer.id]);
      expect(JSON.stringify(after)).not.toContain(bobsTime);
      expect(after).toEqual(before);
      clock.advance(60_000);

      // The MCP face (tools and the memory resource) and her export say nothing of it either.
      const client = new Client({ name: 'attack32c', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${world.server.url}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${keys.eve}`, 'Mneme-Channel': 'team' } },
        }),
      );
      try {
        const resource = await client.readResource({ uri: `memory://${older.id}` });
        const recalled = await client.callTool({ name: 'recall', arguments: { query: 'Lisbon', topK: 1 } });
        const listed = await client.callTool({ name: 'list', arguments: {} });
        for (const answer of [resource, recalled, listed]) expect(JSON.stringify(answer)).not.toContain(bobsTime);
        expect(JSON.parse(String((resource.contents[0] as { text: string }).text))).toMatchObject({
          accessCount: 0,
          lastAccessedAt: null,
        });
      } finally {
        await client.close();
      }
      const eve = mneme.as({ kind: 'user', userId: 'eve', label: 'eve' });
      const lines: string[] = [];
      for await (const line of eve.exportData({ userId: 'eve' })) lines.push(line);
      const exported = lines.map((line) => JSON.parse(line)).find((record) => record.id === older.id);
      expect(exported).toMatchObject({ type: 'memory', accessCount: 0, lastAccessedAt: null });
      expect(lines.join('\n')).not.toContain(bobsTime);

      // Her own memory's retrievals are hers to see, and the administrator sees every one.
      await send(keys.eve, 'POST', '/api/memories/search', { query: 'own offsite notes', topK: 1 });
      expect((await send(keys.eve, 'GET', `/api/memories/${own.id}`)).json).toMatchObject({ accessCount: 1 });
      // Bob's three recalls and Eve's recall tool.
      expect((await send(keys.admin, 'GET', `/api/memories/${older.id}`)).json).toMatchObject({ accessCount: 4 });
    } finally {
      await world.close();
    }
  });

  it('shows Bob nothing of Eve recalling his room memory when he edits it or forgets it with a chat command', async () => {
    const world = await openWorld(store);
    const { mneme, send, keys, clock } = world;
    try {
      await mneme.putChannel({ id: 'team', visibility: 'private', members: ['bob', 'eve'] });
      const written = await send(keys.bob, 'POST', '/api/memories', {
        content: 'The team offsite is in Lisbon',
        scope: 'room',
        channelId: 'team',
      });
      expect(written.status).toBe(201);
      clock.set(daysAfter(start, 2));
      for (let time = 0; time < 2; time++) {
        await send(keys.eve, 'POST', '/api/memories/search', { query: 'Lisbon', viewer: { channelId: 'team' } });
      }
      const evesTime = new Date(clock.now()).toISOString();
      clock.advance(60_000);
      const edited = await send(keys.bob, 'PATCH', `/api/memories/${written.json.id}?channelId=team`, {
        importance: 0.9,
      });
      expect(edited.status).toBe(200);
      expect(edited.json).toMatchObject({ accessCount: 0, lastAccessedAt: null });
      const forgot = await send(keys.bob, 'POST', '/api/messages', {
        channelId: 'team',
        sender: 'bob',
        content: '/forget Lisbon',
      });
      expect(forgot.json.command.forgotten).toHaveLength(1);
      expect(forgot.json.command.forgotten[0]).toMatchObject({ accessCount: 0, lastAccessedAt: null });
      expect(JSON.stringify([edited.json, forgot.json])).not.toContain(evesTime);
    } finally {
      await world.close();
    }
  });

  it('refuses to restore a memory the audience check archived, so its readers never see where it came from', async () => {
    const world = await openWorld(store);
    const { mneme, send, keys } = world;
    try {
      const id = await archivedSummary(world);
      const restore = await send(keys.admin, 'POST', `/api/memories/${id}/restore`, {});
      expect(restore.status).toBe(409);
      expect(restore.json.detail).toContain('came from channel south');
      expect((await send(keys.admin, 'GET', `/api/memories/${id}`)).json.archivedAt).not.toBeNull();
      // A memory forgotten by hand is restored as before.
      const forgotten = await mneme.remember({ content: 'The north gate sticks', scope: 'room', channelId: 'north' });
      await mneme.forget(forgotten.id);
      expect((await send(keys.admin, 'POST', `/api/memories/${forgotten.id}/restore`, {})).status).toBe(200);
    } finally {
      await world.close();
    }
  });

  it('shows a member of the room no memory the audience check archived there, by id, history, sources, links or list', async () => {
    const world = await openWorld(store);
    const { send, keys } = world;
    try {
      const id = await archivedSummary(world);
      expect((await send(keys.eve, 'GET', `/api/memories/${id}?channelId=north`)).status).toBe(404);
      const found = await send(keys.eve, 'POST', '/api/memories/search', {
        query: 'quokka compound vault',
        viewer: { channelId: 'north' },
      });
      expect(JSON.stringify(found.json)).not.toContain('9876');
      // Nor any other read of hers: the archived memory stays the administrator's alone.
      for (const path of [
        `/api/memories/${id}/history?channelId=north`,
        `/api/memories/${id}/sources?channelId=north`,
        `/api/memories/${id}/links?channelId=north`,
      ]) {
        expect((await send(keys.eve, 'GET', path)).status, path).toBe(404);
      }
      const listed = await send(keys.eve, 'GET', '/api/memories?channelId=north&archived=include');
      expect(JSON.stringify(listed.json)).not.toContain('9876');
    } finally {
      await world.close();
    }
  });

  it('does not count as decayed a memory whose put to rest Bob refused by recalling it meanwhile', async () => {
    const world = await openWorld(store, { policy: { decay: 'ebbinghaus' } });
    const { mneme, send, keys, storage, clock } = world;
    try {
      const bob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob' });
      const memory = await bob.remember({ content: 'My locker code is 4471' });
      clock.set(daysAfter(start, 60));
      // Bob recalls it after decay read it as below its line, before decay puts it to rest.
      const due = storage.maintenance.dueForDecay.bind(storage.maintenance);
      let recalled = false;
      storage.maintenance.dueForDecay = async (rule, until, after, limit) => {
        const page = await due(rule, until, after, limit);
        if (!recalled && page.length > 0) {
          recalled = true;
          const found = await send(keys.bob, 'POST', '/api/memories/search', { query: 'locker code', topK: 1 });
          expect(found.status).toBe(200);
        }
        return page;
      };
      const run = await send(keys.admin, 'POST', '/api/maintenance/run', { tasks: ['decay'] });
      expect(recalled).toBe(true);
      expect(run.status).toBe(200);
      expect(run.json.decay).toMatchObject({ checked: 1, decayed: 0, archived: 0 });
      expect((await send(keys.bob, 'GET', `/api/memories/${memory.id}`)).json.archivedAt).toBeNull();
    } finally {
      await world.close();
    }
  });
});
