import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * wt-attack12: the full-text leg's zero-count early return (ADR 25, 2026-12-02, session 12) seen from the HTTP service
 * with two users' real API keys, for words the stemmer in code and the index's porter tokenizer stem apart ("yy"):
 * each key finds its user's memories that hold the word, never another user's.
 */
const folder = mkdtempSync('/tmp/wt-attack12-http-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe('attack12: the zero-count early return through HTTP with two keys', () => {
  it("finds each user's memories of a word with 'yy', and never the other user's", async () => {
    const path = join(folder, 'yy.db');
    const writer = await openMaintenanceEngine({ path });
    const server = await openMaintenanceEngine({ path });
    engines.push(writer, server);
    await writer.mneme.putChannel({ id: 'r1', members: ['ann', 'bob'] });
    const id = async (input: Parameters<typeof writer.mneme.remember>[0]) => (await writer.mneme.remember(input)).id;
    const ann = await id({ content: 'ann met Sayyed about the budget', scope: 'personal', userId: 'ann' });
    const bob = await id({ content: 'bob told Sayyed the vault code', scope: 'personal', userId: 'bob' });
    const room = await id({ content: 'the room plans a dinner with sayyed', scope: 'room', channelId: 'r1' });
    const keys = {
      ann: (await writer.mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key,
      bob: (await writer.mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
    };
    const app = createHttpApp({ mneme: server.mneme, apiKeys: server.mneme.apiKeys, logError: () => {} });
    async function ask(user: 'ann' | 'bob', query: string): Promise<number[]> {
      server.clock.advance(1000);
      const response = await app.request('/api/memories/search', {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[user]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query, topK: 50 }),
      });
      const text = await response.text();
      expect(response.status, text).toBe(200);
      return (JSON.parse(text) as { hits: Array<{ memory: { id: number } }> }).hits
        .map((hit) => hit.memory.id)
        .sort((left, right) => left - right);
    }
    for (const query of ['sayyed', 'Sayyed?', 'who is sayyed']) {
      // (The room's memory is a room viewer's: a search without the channel does not ask for it.)
      expect(await ask('ann', query), query).toEqual([ann]);
      expect(await ask('bob', query), query).toEqual([bob]);
      expect(room).toBeGreaterThan(bob);
    }
  });
});
