import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import type { Storage } from '../src/storage/storage.js';
import { createFakeEmbeddingModel } from '../src/testing.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * wt-attack22: malformed chat commands over HTTP with a user key, on SQLite and PGlite. Each must be a clear 4xx with
 * nothing written, or a 202 whose command is refused with a reply, its message stored and no memory: never a 500, never
 * a memory half-written.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

async function commandMemories(storage: Storage) {
  const page = await storage.memories.list({ owners: null, archived: 'include', limit: 500, offset: 0 });
  return page.memories.filter((memory) => memory.source === 'command');
}

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  async function open() {
    const engine = await openMaintenanceEngine({ store, embedder: createFakeEmbeddingModel() });
    const { mneme } = engine;
    const key = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
    await mneme.putChannel({ id: 'kitchen', members: ['ann'] });
    const errors: unknown[] = [];
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
    const send = async (path: string, body: unknown) => {
      const response = await app.request(path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, json: JSON.parse(text) };
    };
    const say = (content: string, extra: Record<string, unknown> = {}) =>
      send('/api/messages', { channelId: 'kitchen', sender: 'ann', content, ...extra });
    const messages = async () => (await mneme.turns({ channelId: 'kitchen', count: 50 })).length;
    return { ...engine, send, say, messages, errors };
  }

  it('refuses with a reply, storing the message and no memory, a /remember too long or empty', async () => {
    const world = await open();
    try {
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        [`/remember ${'x'.repeat(10_001)}`, {}, /^Not remembered: content is longer than 10000 characters$/],
        // Within the limit as written, past it once "I" is the sender's 200-character name.
        [`/remember ${'I '.repeat(4_000)}`, { senderName: 'A'.repeat(200) }, /^Not remembered: content is longer/],
        ['/remember', {}, /^Usage: \/remember/],
        ['/remember  \t \u3000 ', {}, /^Usage: \/remember/],
      ];
      for (const [index, [content, extra, reply]] of cases.entries()) {
        const response = await world.say(content, extra);
        expect(response.status, content.slice(0, 40)).toBe(202);
        expect(response.json.command).toMatchObject({ remembered: null, forgotten: [] });
        expect(response.json.command.reply).toMatch(reply);
        expect(await world.messages()).toBe(index + 1);
      }
      expect(await commandMemories(world.storage)).toEqual([]);
      expect(world.errors).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });

  it('answers 4xx and writes nothing for an ill-formed or oversized command, alone or in a batch', async () => {
    const world = await open();
    try {
      const bad = [
        await world.say('/remember I like \ud800 tea'),
        await world.say(`/forget ${'a'.repeat(32_000)}`),
        await world.send('/api/messages/batch', {
          messages: [
            { channelId: 'kitchen', sender: 'ann', content: '/remember I like green tea', externalId: 'b1' },
            { channelId: 'kitchen', sender: 'ann', content: '/forget \udfff', externalId: 'b2' },
          ],
        }),
        await world.send('/api/messages/batch', {
          messages: Array.from({ length: 1_001 }, (_, index) => ({
            channelId: 'kitchen',
            sender: 'ann',
            content: `/remember I own mug ${index}`,
          })),
        }),
      ];
      for (const response of bad) {
        expect(response.status, JSON.stringify(response.json).slice(0, 200)).toBeGreaterThanOrEqual(400);
        expect(response.status).toBeLessThan(500);
      }
      expect(await world.messages()).toBe(0);
      expect(await commandMemories(world.storage)).toEqual([]);
      expect(world.errors).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });

  it('refuses a NUL in a /remember with 422 naming the content and nothing written, on every store', async () => {
    const world = await open();
    try {
      const response = await world.say('/remember I like \u0000 tea');
      // SQLite stored it until ADR 43, where PostgreSQL refused it: the same on every store now.
      expect(response.status).toBe(422);
      expect(response.json.code).toBe('INVALID_INPUT');
      expect(response.json.detail).toMatch(/^invalid request body: content: text must not hold the NUL character/);
      expect(await world.messages()).toBe(0);
      expect(await commandMemories(world.storage)).toEqual([]);
      expect(world.errors).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });

  it('takes every character of a /forget pattern but the stars literally, and refuses one of stars and spaces only', async () => {
    const world = await open();
    try {
      const strange = 'Ann pays $5.00 (cash) [not card] ^_^ a|b \\ c? {2} +1';
      await world.say(`/remember ${strange}`);
      await world.say('/remember I like plain tea');
      for (const pattern of [`${'*'.repeat(31_000)}`, ' * * *  ', '**']) {
        const response = await world.say(`/forget ${pattern}`);
        expect(response.status).toBe(202);
        expect(response.json.command.reply).toMatch(/^Usage: \/forget/);
      }
      for (const pattern of ['.+', 'pays.?cash', '(cash|card)', '[a-z]+', '\\d', 'a|z', '$5\\.00']) {
        const response = await world.say(`/forget ${pattern}`);
        expect(response.json.command.forgotten, pattern).toEqual([]);
      }
      const many = await world.say(`/forget ${'a*'.repeat(15_000)}`);
      expect(many.status).toBe(202);
      const literal = await world.say('/forget $5.00 (cash) [not card] ^_^ a|b \\ c? {2} +1');
      expect(literal.json.command.reply).toBe(
        'Forgot 1 memory matching "$5.00 (cash) [not card] ^_^ a|b \\ c? {2} +1".',
      );
      const left = (await commandMemories(world.storage)).filter((memory) => memory.archivedAt === null);
      expect(left.map((memory) => memory.content)).toEqual(['Ann likes plain tea']);
      expect(world.errors).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });
});
