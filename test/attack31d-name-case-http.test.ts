import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Attack 31d, as users read it: Eve's fact calls her by her name in another case ("ΝΊΚΟΣ", "🙂CHLOË"); Bob names
 * himself as she is named with his own key. Eve's memory, listed with her key, must say it is hers, not read as his.
 */

const pairs = [
  { eve: 'eve', bob: 'bob', name: 'Νίκος', said: 'ΝΊΚΟΣ approved the wire', labelled: 'Νίκος (eve) approved the wire' },
  {
    eve: 'mallory',
    bob: 'carol',
    name: 'Chloë',
    said: 'Ask 🙂CHLOË about the wire',
    labelled: 'Ask 🙂Chloë (mallory) about the wire',
  },
];

describe.each([':memory:', 'pglite:memory:'])('on %s', (path) => {
  it('lists to each user their fact labelled when another user takes their name in another case', {
    timeout: 60_000,
  }, async () => {
    const mneme = await createMneme({
      path,
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      embedder: createFakeEmbeddingModel(),
      logger: { warn: () => {}, info: () => {} },
    });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const as = async (userId: string) => ({
        authorization: `Bearer ${(await mneme.apiKeys.create({ label: userId, userId })).key}`,
        'content-type': 'application/json',
      });
      const seen: string[] = [];
      for (const { eve, bob, name, said } of pairs) {
        await mneme.setDisplayName({ userId: eve, displayName: name });
        await mneme.remember({ content: said, userId: eve });
        const named = await app.request(`/api/users/${bob}`, {
          method: 'PUT',
          headers: await as(bob),
          body: JSON.stringify({ displayName: name }),
        });
        expect(named.status).toBe(200);
        const listed = await app.request('/api/memories?limit=10', { headers: await as(eve) });
        expect(listed.status).toBe(200);
        const { memories } = (await listed.json()) as { memories: { content: string }[] };
        seen.push(...memories.map((memory) => memory.content));
      }
      expect(seen).toEqual(pairs.map((pair) => pair.labelled));
    } finally {
      await mneme.close();
    }
  });
});
