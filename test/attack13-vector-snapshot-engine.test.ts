import { afterEach, describe, expect, it } from 'vitest';
import { visibleOwners } from '../src/core/scope.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Attack (session 13, wt-attack13): the lists' codes in memory now live through this connection's own writes (the
// written vectors' rows read again and searched beside them, their old copies left out). Through the engine, on a
// store whose recall reads the lists and holds their codes in memory: a memory Ann writes must be found by her at
// once and never by Bo, a forgotten, edited or purged one never by anyone; checked at the storage's vector leg too,
// which recall's own owner check does not cover.
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe("attack13: another user's writes and forgets between recalls that hold the lists' codes in memory", () => {
  it("gives Ann her new memory at once, Bo never, and nobody a forgotten, edited or purged one's old vector", {
    timeout: 180_000,
  }, async () => {
    const model = createFakeEmbeddingModel();
    const engine = await openMaintenanceEngine({ embedder: model, vectorListMinVectors: 300 });
    engines.push(engine);
    const { mneme, storage } = engine;
    const topics = ['garden tomatoes basil', 'cello quartet sunday', 'lisbon trip may', 'greyhound pixel sofa'];
    for (let index = 0; index < 400; index++) {
      await mneme.remember({ content: `${topics[index % topics.length]} note ${index % 13} item${index}` });
    }
    for (let index = 0; index < 40; index++) {
      await mneme.remember({ content: `bo locker row ${index} gym`, scope: 'personal', userId: 'bo' });
      await mneme.remember({ content: `ann diary page ${index} tea`, scope: 'personal', userId: 'ann' });
    }
    while (await storage.maintenance.indexStep()) {}
    const ann = visibleOwners({ userId: 'ann' });
    const bo = visibleOwners({ userId: 'bo' });
    const vectorHits = async (text: string, owners: readonly string[] | null, limit = 50) => {
      const [vector] = await model.embed([text], 'query');
      return (
        await storage.memories.searchVector({ vector: vector as Float32Array, model: model.modelId, owners, limit })
      ).map((hit) => hit.id);
    };
    // Enough searches without a write for the codes to be read into memory (32), for both viewers.
    for (let index = 0; index < 40; index++) {
      await vectorHits(topics[index % topics.length] ?? '', index % 2 === 0 ? ann : bo, 10);
    }
    const recalled = async (query: string, userId: string) =>
      (await mneme.recall({ query, viewer: { userId }, topK: 10 })).hits.map((hit) => hit.memory.id);
    // Over HTTP with each user's real API key: the search's hits, as the face returns them.
    const errors: unknown[] = [];
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
    const keys = {
      ann: (await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' })).key,
      bo: (await mneme.apiKeys.create({ label: 'bo-app', userId: 'bo' })).key,
    };
    const searched = async (query: string, user: 'ann' | 'bo') => {
      const response = await app.request('/api/memories/search', {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[user]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query, topK: 20 }),
      });
      expect(response.status).toBe(200);
      const { hits } = (await response.json()) as { hits: Array<{ memory: { id: number } }> };
      return hits.map((hit) => hit.memory.id);
    };
    const written: number[] = [];
    for (let round = 0; round < 12; round++) {
      const secret = `ann secret zebra ${round} locker 44${round} elm`;
      const memory = await mneme.remember({ content: secret, scope: 'personal', userId: 'ann' });
      written.push(memory.id);
      expect((await vectorHits(secret, ann, 5))[0]).toBe(memory.id);
      expect(await recalled(secret, 'ann')).toContain(memory.id);
      expect(await vectorHits(secret, bo)).not.toContain(memory.id);
      expect(await recalled(secret, 'bo')).not.toContain(memory.id);
      expect(await searched(secret, 'ann')).toContain(memory.id);
      expect(await searched(secret, 'bo')).not.toContain(memory.id);
      if (round % 3 === 1) {
        // Forgotten: its vector removed, found by nobody.
        await mneme.forget(memory.id);
        expect(await vectorHits(secret, ann)).not.toContain(memory.id);
        expect(await vectorHits(secret, null)).not.toContain(memory.id);
        expect(await recalled(secret, 'ann')).not.toContain(memory.id);
      } else if (round % 3 === 2) {
        // Edited: its old words' vector gone, its new one found at once.
        const edited = `ann edited quince ${round} harbour`;
        await mneme.update({ id: memory.id, content: edited });
        expect((await vectorHits(edited, ann, 5))[0]).toBe(memory.id);
        expect(await vectorHits(edited, bo)).not.toContain(memory.id);
      }
    }
    await mneme.purgeUser('ann');
    for (let round = 0; round < 12; round++) {
      const found = await vectorHits(`ann secret zebra ${round} locker 44${round} elm`, null);
      expect(found.filter((id) => written.includes(id))).toEqual([]);
    }
    expect(await vectorHits('bo locker row 3 gym', bo, 5)).toHaveLength(5);
    expect((await searched('ann secret zebra locker elm', 'bo')).filter((id) => written.includes(id))).toEqual([]);
    expect(errors).toEqual([]);
  });
});
