import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Attack (session 5, wt-attack5): a second user with a real key recalls, over HTTP, the very words of another
// user's personal memories once the store's recall reads the inverted lists (balanced, lists chosen among a
// shortlist; the owner filter inside each list's KNN; the exact re-rank's JSON statement after it). Twenty
// of Ann's memories are the nearest vectors to the query; none may come back to Bo, in hits or explanations.
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe("attack5: recall through the inverted lists and another user's closer vectors", () => {
  it("gives Bo's key none of Ann's memories, nor their words, on search and context", {
    timeout: 180_000,
  }, async () => {
    const engine = await openMaintenanceEngine({ embedder: createFakeEmbeddingModel(), vectorListMinVectors: 300 });
    engines.push(engine);
    const { mneme } = engine;
    const secret = 'my locker code at the Elm street gym is 4417 zebra';
    for (let index = 0; index < 20; index++) {
      await mneme.remember({
        content: `${secret} ${index === 0 ? '' : `copy ${index}`}`.trim(),
        scope: 'personal',
        userId: 'ann',
      });
    }
    const topics = [
      'garden tomatoes basil',
      'cello quartet sunday',
      'lisbon trip may',
      'greyhound pixel sofa',
      'gym membership fees',
    ];
    for (let index = 0; index < 400; index++) {
      await mneme.remember({ content: `${topics[index % topics.length]} note ${index % 13} item${index}` });
    }
    for (let index = 0; index < 5; index++) {
      await mneme.remember({ content: `Bo keeps a gym locker ${index}`, scope: 'personal', userId: 'bo' });
    }
    await mneme.maintain({ tasks: ['link'] });
    expect(await engine.storage.maintenance.indexStep()).toBe(false);

    const bo = await mneme.apiKeys.create({ label: 'bo-app', userId: 'bo' });
    const errors: unknown[] = [];
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
    const post = async (path: string, body: unknown) => {
      const response = await app.request(path, {
        method: 'POST',
        headers: { authorization: `Bearer ${bo.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, text: await response.text() };
    };
    for (const query of [secret, 'locker code 4417', 'zebra']) {
      for (const mode of ['hybrid', 'recent-first'] as const) {
        const search = await post('/api/memories/search', { query, topK: 20, explain: true, mode });
        expect(search.status).toBe(200);
        // The response echoes Bo's own query (`queries`); the hits and their explanations are what is Ann's.
        const { hits, vectorLeg } = JSON.parse(search.text) as {
          hits: Array<{ memory: { userId: string | null } }>;
          vectorLeg: string;
        };
        if (mode === 'hybrid') expect(vectorLeg).toBe('used');
        expect(JSON.stringify(hits)).not.toMatch(/4417|zebra|Elm street/i);
        expect(hits.filter((hit) => hit.memory.userId === 'ann')).toEqual([]);
      }
      const context = await post('/api/context', { query, topK: 20 });
      expect(context.status).toBe(200);
      const block = JSON.parse(context.text) as { text: string; hits: unknown[] };
      expect(JSON.stringify([block.text, block.hits])).not.toMatch(/4417|zebra|Elm street/i);
    }
    expect(errors).toEqual([]);
  });
});
