import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { Storage } from '../src/storage/storage.js';
import { createFakeEmbeddingModel } from '../src/testing.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * wt-attack22: chat commands over HTTP with real user keys, on SQLite and PGlite. Bob's key tries to make a `/forget`
 * archive memories Bob cannot see (Ann's personal ones, those of a room Bob is not in, one moved out of Bob's sight
 * between the match and the append), to make a `/remember` write into Ann's scope, and to learn from a reply how many
 * memories match in places Bob cannot see. Then a purge lands while a post of the purged user is on its way.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

/** What a post answers: the command's result (a problem's fields on a refusal). */
interface Posted {
  command: { reply: string; remembered: Memory | null; forgotten: Memory[] };
}

interface HttpWorld extends MaintenanceEngine {
  keys: { admin: string; ann: string; bob: string };
  send(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Posted }>;
  memories: { annPersonal: Memory; annRoom: Memory; annGeneral: Memory; bobPersonal: Memory; bobGeneral: Memory };
}

async function openWorld(store: EngineStore): Promise<HttpWorld> {
  const engine = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
  const { mneme } = engine;
  const keys = {
    admin: (await mneme.apiKeys.create({ label: 'ops' })).key,
    ann: (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key,
    bob: (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
  };
  await mneme.putChannel({ id: 'general', visibility: 'public', members: ['ann', 'bob'] });
  await mneme.putChannel({ id: 'ann-room', visibility: 'private', members: ['ann'] });
  await mneme.putChannel({ id: 'bob-desk', visibility: 'private', members: ['bob'] });
  await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
  await mneme.setDisplayName({ userId: 'bob', displayName: 'Bob' });
  const remember = (content: string, userId: string, channelId?: string) =>
    mneme.remember({
      content,
      userId,
      ...(channelId === undefined ? { scope: 'personal' as const } : { scope: 'room' as const, channelId }),
    });
  const memories = {
    annPersonal: await remember('Ann keeps the vault key in the blue box', 'ann'),
    annRoom: await remember('Ann hides the vault key under the ann-room desk', 'ann', 'ann-room'),
    annGeneral: await remember('Ann says the vault key is with the porter', 'ann', 'general'),
    bobPersonal: await remember('Bob keeps the vault key in his coat', 'bob'),
    bobGeneral: await remember('Bob says the vault key is in the general drawer', 'bob', 'general'),
  };
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const send: HttpWorld['send'] = async (key, method, path, body) => {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, json: (text ? JSON.parse(text) : null) as Posted };
  };
  return { ...engine, keys, send, memories };
}

async function everything(storage: Storage) {
  const page = await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 });
  return page.memories;
}

const activeIds = async (storage: Storage) =>
  (await everything(storage))
    .filter((memory) => memory.archivedAt === null)
    .map((memory) => memory.id)
    .sort((a, b) => a - b);

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  it('archives only what Bob sees, and the reply counts only that, for every pattern Bob tries', async () => {
    const world = await openWorld(store);
    const { memories } = world;
    try {
      for (const content of [
        '/forget ann*',
        '/forget *porter*',
        '/forget blue box',
        '/forget .*',
        '/forget (vault|key)+',
        '/forget [a-z]',
        '/forget \\',
        '/forget $^',
      ]) {
        const response = await world.send(world.keys.bob, 'POST', '/api/messages', {
          channelId: 'general',
          sender: 'bob',
          content,
        });
        expect(response.status, content).toBe(202);
        expect(response.json.command.forgotten, content).toEqual([]);
        expect(response.json.command.reply, content).toMatch(/^Nothing to forget/);
      }
      const forgot = await world.send(world.keys.bob, 'POST', '/api/messages', {
        channelId: 'general',
        sender: 'bob',
        content: '/forget vault key',
      });
      expect(forgot.status).toBe(202);
      // Bob's own two: Ann's personal, Ann's room's and Ann's memory of the room both write in stay.
      expect(forgot.json.command.reply).toBe('Forgot 2 memories matching "vault key".');
      expect(forgot.json.command.forgotten.map((memory: Memory) => memory.id).sort()).toEqual(
        [memories.bobPersonal.id, memories.bobGeneral.id].sort(),
      );
      const active = await activeIds(world.storage);
      for (const memory of [memories.annPersonal, memories.annRoom, memories.annGeneral]) {
        expect(active).toContain(memory.id);
      }
    } finally {
      await world.mneme.close();
    }
  });

  it('refuses a /remember or /forget sent as Ann, or into a room Bob is not in, writing nothing of the batch', async () => {
    const world = await openWorld(store);
    try {
      const before = await activeIds(world.storage);
      const turns = async () =>
        (await world.mneme.turns({ channelId: 'general', count: 50 })).length +
        (await world.mneme.turns({ channelId: 'ann-room', count: 50 })).length;
      const messagesBefore = await turns();
      for (const messages of [
        [{ channelId: 'general', sender: 'ann', content: '/remember I owe Bob a hundred pounds' }],
        [{ channelId: 'ann-room', sender: 'bob', content: '/forget vault' }],
        [
          { channelId: 'general', sender: 'bob', content: '/remember I like tea', externalId: 'b1' },
          { channelId: 'general', sender: 'ann', content: '/forget vault', externalId: 'b2' },
        ],
      ]) {
        const response = await world.send(world.keys.bob, 'POST', '/api/messages/batch', { messages });
        expect(response.status, JSON.stringify(messages)).toBe(403);
      }
      expect(await activeIds(world.storage)).toEqual(before);
      expect(await turns()).toBe(messagesBefore);
      // Bob's /remember is Bob's own memory, whatever the text says.
      const own = await world.send(world.keys.bob, 'POST', '/api/messages', {
        channelId: 'general',
        sender: 'bob',
        content: '/remember Ann owes me a hundred pounds',
      });
      expect(own.status).toBe(202);
      expect(own.json.command.remembered).toMatchObject({ scope: 'personal', userId: 'bob' });
    } finally {
      await world.mneme.close();
    }
  });

  it('leaves alone a memory Bob matched that moves out of his sight before the append', async () => {
    const world = await openWorld(store);
    const { storage, memories } = world;
    try {
      // Bob's memory of the general room moves to Ann's room (an administrator, an audience change) after Bob's
      // /forget was prepared, just before the append (which finds the matches since session 22).
      const append = storage.messages.append.bind(storage.messages);
      let moved = false;
      storage.messages.append = async (messages, options) => {
        if (!moved && messages.some((message) => message.command && 'forget' in message.command)) {
          moved = true;
          await storage.memories.moveTo(
            memories.bobGeneral.id,
            { scope: 'room', channelId: 'ann-room' },
            { at: Date.parse('2024-06-01T00:00:00Z'), actor: 'admin', reason: 'moved' },
          );
        }
        return append(messages, options);
      };
      const forgot = await world.send(world.keys.bob, 'POST', '/api/messages', {
        channelId: 'general',
        sender: 'bob',
        content: '/forget general drawer',
      });
      expect(moved).toBe(true);
      expect(forgot.status).toBe(202);
      expect(forgot.json.command.forgotten).toEqual([]);
      expect(forgot.json.command.reply).toMatch(/^Nothing to forget/);
      const [after] = await storage.memories.get([memories.bobGeneral.id]);
      expect(after).toMatchObject({ archivedAt: null, scope: 'room', channelId: 'ann-room' });
    } finally {
      await world.mneme.close();
    }
  });

  /*
   * FAULT (wt-attack22): ADR 30 refuses an append whose commands were prepared before a purge ran, and says the purged
   * sender cannot post again because "a purged user's key no longer authenticates". A post already past its key and
   * membership checks when the purge lands is not refused: the engine reads the purge count after those checks, when
   * the purge is already counted, so the append goes in after the purge. Bob's message and the memory his /remember
   * wrote ("Bob's safe code is 4417") are stored after the purge answered 200, and a purge is the one call that
   * promises nothing of the user stays. (A plain message slips through the same way; the command's memory is new.)
   */
  it('keeps nothing of Bob once his purge answered, when the purge lands while his /remember is on its way', async () => {
    const world = await openWorld(store);
    const { storage, mneme } = world;
    try {
      // The purge (another process, the administrator) commits right after Bob's post passed its membership check.
      const isMember = storage.memberships.isMember.bind(storage.memberships);
      let purged: Promise<unknown> | null = null;
      storage.memberships.isMember = async (kind, id, userId) => {
        const member = await isMember(kind, id, userId);
        if (purged === null && userId === 'bob' && kind === 'channel' && id === 'general') {
          purged = mneme.purgeUser('bob');
          await purged;
        }
        return member;
      };
      const posted = await world.send(world.keys.bob, 'POST', '/api/messages', {
        channelId: 'general',
        sender: 'bob',
        content: '/remember my safe code is 4417',
      });
      expect(purged).not.toBeNull();
      // The purge answered; Bob's key no longer authenticates.
      expect((await world.send(world.keys.bob, 'GET', '/api/channels')).status).toBe(401);
      const left = (await everything(storage)).filter((memory) => memory.userId === 'bob');
      const said = (await mneme.turns({ channelId: 'general', count: 50 })).filter(
        (message) => message.senderId === 'bob',
      );
      // Refused (any 4xx, or a 503 saying to send it again) or not, nothing of Bob may be stored once the purge is done.
      expect
        .soft(said.length, `Bob's messages stored after his purge (the post was answered ${posted.status})`)
        .toBe(0);
      expect(left.map((memory) => memory.content)).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });
});
