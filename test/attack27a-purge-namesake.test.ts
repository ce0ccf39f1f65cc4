import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

/**
 * Wt-attack27a, identifiers: a purge deleted every `maintenance_state` row keyed by the purged user's id (or
 * `user:<id>`), whatever the row was. Channel ids and user ids share no namespace, so a channel named like the user
 * (Bob's channel `eve`) lost its extraction watermark when Eve purged herself, and the next extraction read the
 * channel from its first message again: a memory Bob had forgotten came back. Topic rows (`topic:<id>`) share their
 * keys with channels named so, and a topic's purge reached the channel `topic:<id>` the same way.
 */
describe.each([':memory:', 'pglite:memory:'])('on %s', (path) => {
  async function openWorld() {
    const mneme = await createMneme({
      path,
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
    });
    const keys = {
      bob: (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key,
      eve: (await mneme.apiKeys.create({ label: 'eve app', userId: 'eve' })).key,
    };
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
    const send = async (key: string, method: string, path: string, body?: unknown) => {
      const response = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    /** Bob's active memories, personal and of channel `channelId`, that say `words`. */
    const bobSees = async (channelId: string, words: string) => {
      const found = new Map<number, Memory>();
      for (const query of ['', `&channelId=${encodeURIComponent(channelId)}`]) {
        const listed = await send(keys.bob, 'GET', `/api/memories?limit=200${query}`);
        expect(listed.status).toBe(200);
        for (const memory of listed.json.memories as Memory[]) {
          if (memory.content.includes(words)) found.set(memory.id, memory);
        }
      }
      return [...found.values()];
    };
    /** Bob says `content` in `channelId`, it is extracted (a fact, the turn), and Bob forgets what it gave. */
    const sayAndForget = async (channelId: string, content: string, words: string) => {
      const posted = await send(keys.bob, 'POST', '/api/messages', { channelId, sender: 'bob', content });
      expect(posted.status).toBe(202);
      await mneme.whenIdle();
      const found = await bobSees(channelId, words);
      expect(found.filter((memory) => memory.category !== 'exchange').length, content).toBeGreaterThan(0);
      for (const memory of found) {
        const forgot = await send(
          keys.bob,
          'DELETE',
          `/api/memories/${memory.id}?channelId=${encodeURIComponent(channelId)}`,
        );
        expect(forgot.status).toBe(200);
      }
      expect(await bobSees(channelId, words)).toEqual([]);
    };
    return { mneme, keys, send, bobSees, sayAndForget };
  }

  it('keeps the extraction watermark of a channel named like a user who purges herself', {
    timeout: 60_000,
  }, async () => {
    const world = await openWorld();
    try {
      await world.mneme.putChannel({ id: 'eve', visibility: 'private', members: ['bob'] });
      await world.mneme.putChannel({ id: 'user:eve', visibility: 'private', members: ['bob'] });
      await world.sayAndForget('eve', 'I live in Paris near the canal', 'Paris');
      await world.sayAndForget('user:eve', 'I prefer green tea in the morning', 'green tea');

      const purged = await world.send(world.keys.eve, 'DELETE', '/api/users/eve/data');
      expect(purged.status).toBe(200);
      await world.mneme.whenIdle();

      expect(await world.bobSees('eve', 'Paris')).toEqual([]);
      expect(await world.bobSees('user:eve', 'green tea')).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });

  it('keeps the extraction watermark of a channel named like a topic that a purge deletes', {
    timeout: 60_000,
  }, async () => {
    const world = await openWorld();
    try {
      await world.mneme.createTopic({ id: 'retro', members: ['eve'] });
      await world.mneme.putChannel({ id: 'eve-desk', visibility: 'private', members: ['eve'] });
      const said = await world.send(world.keys.eve, 'POST', '/api/messages', {
        channelId: 'eve-desk',
        sender: 'eve',
        topicId: 'retro',
        content: 'I think the retro went fine',
      });
      expect(said.status).toBe(202);
      await world.mneme.putChannel({ id: 'topic:retro', visibility: 'private', members: ['bob'] });
      await world.sayAndForget('topic:retro', 'I live in Lisbon by the river', 'Lisbon');

      const purged = await world.send(world.keys.eve, 'DELETE', '/api/users/eve/data');
      expect(purged.status).toBe(200);
      await world.mneme.whenIdle();

      expect(await world.bobSees('topic:retro', 'Lisbon')).toEqual([]);
    } finally {
      await world.mneme.close();
    }
  });
});
