import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import { resolvePolicy } from '../src/core/policy.js';
import { visibleOwners } from '../src/core/scope.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';
import { createExtractionQueue } from '../src/workers/extraction-queue.js';

/**
 * Wt-attack18, an angle that held: an audience change moves memories to another owner (`MemoryStore.moveTo`) on a
 * store whose searches hold state in memory (SQLite: the vector lists' codes with their owners, the full-text
 * leg's owner index, the word counts per owner), warmed by 40 searches of each leg first. The storage legs
 * themselves (which recall's own owner check does not cover) give a global fact of a channel made private to no
 * one outside it, and give it to its room at once; so do the routes of a real key.
 */
describe('memories moved by an audience change, on SQLite', () => {
  it('are found by the room they moved into and by no one who lost them, through every leg', {
    timeout: 180_000,
  }, async () => {
    const model = createFakeEmbeddingModel();
    // An engine as createMneme opens one (the offline extractor and the extraction worker), on a store that builds
    // its vector lists at 300 vectors and holds the full-text owner index in memory at once.
    const storage = createSqliteStorage({ path: ':memory:', vectorListMinVectors: 300, textSnapshotAfter: 0 });
    await storage.configureVectors({ model: model.modelId, dimensions: model.dimensions });
    const logger = { warn: () => {}, info: () => {} };
    const mneme = createEngine({
      storage,
      embedder: model,
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger,
      policy: resolvePolicy(),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor: createOfflineExtractor(),
      extractionScheduler: (work) => createExtractionQueue(work, { logger }),
    });
    try {
      const topics = ['garden tomatoes basil', 'cello quartet sunday', 'lisbon trip may', 'greyhound pixel sofa'];
      for (let index = 0; index < 400; index++) {
        await mneme.remember({ content: `${topics[index % topics.length]} note ${index % 13} item${index}` });
      }
      await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
      const secrets = [
        'The staging database password rotates at quokkamidnight',
        'The staging API token rotates at quokkanoon',
        'The staging VPN key rotates at quokkadawn',
      ];
      for (const content of secrets) {
        await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content });
      }
      await mneme.whenIdle();
      const facts = (await mneme.list({ scope: 'global', limit: 500 })).memories.filter((m) =>
        /quokka/.test(m.content),
      );
      expect(facts.length).toBeGreaterThanOrEqual(3);
      const ids = facts.map((fact) => fact.id);
      while (await storage.maintenance.indexStep()) {}

      const ann = visibleOwners({ userId: 'ann' });
      const room = visibleOwners({ userId: 'bob', channelId: 'lobby' });
      const vectorHits = async (text: string, owners: readonly string[]) => {
        const [vector] = await model.embed([text], 'query');
        const hits = await storage.memories.searchVector({
          vector: vector as Float32Array,
          model: model.modelId,
          owners,
          limit: 50,
        });
        return hits.map((hit) => hit.id);
      };
      const textHits = async (text: string, owners: readonly string[]) =>
        (await storage.memories.searchText({ terms: text.toLowerCase().split(' '), owners, limit: 50 })).map(
          (hit) => hit.id,
        );
      const counts = async (owners: readonly string[]) =>
        (await storage.memories.termCounts(['quokkamidnight', 'quokkanoon'], { owners })).counts;
      // Warm every leg for both audiences: the lists' codes, the owner index and the word counts are held in memory.
      for (let index = 0; index < 40; index++) {
        const owners = index % 2 === 0 ? ann : room;
        await vectorHits(secrets[index % secrets.length] ?? '', owners);
        await textHits('staging rotates quokkamidnight', owners);
        await counts(owners);
      }
      for (const secret of secrets) {
        expect(await vectorHits(secret, ann)).toEqual(expect.arrayContaining(ids));
      }

      await mneme.putChannel({ id: 'lobby', visibility: 'private' });
      for (const fact of facts) {
        expect(await mneme.get(fact.id)).toMatchObject({ scope: 'room', channelId: 'lobby' });
      }
      for (const secret of secrets) {
        const foundByAnn = [...(await vectorHits(secret, ann)), ...(await textHits(secret, ann))];
        expect(foundByAnn.filter((id) => ids.includes(id))).toEqual([]);
        const fact = facts.find((candidate) => candidate.content === secret);
        if (fact) {
          expect(await vectorHits(secret, room)).toContain(fact.id);
          expect(await textHits(secret, room)).toContain(fact.id);
        }
      }
      expect(await counts(ann)).toEqual([0, 0]);
      expect((await counts(room)).every((count) => count > 0)).toBe(true);

      const key = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      await mneme.apiKeys.create({ label: 'ops' });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      for (const secret of secrets) {
        for (const path of ['/api/memories/search', '/api/context']) {
          const response = await app.request(path, {
            method: 'POST',
            headers,
            body: JSON.stringify({ query: secret }),
          });
          expect(response.status).toBe(200);
          const { hits } = (await response.json()) as { hits: Array<{ memory: { id: number } }> };
          expect(hits.map((hit) => hit.memory.id).filter((id) => ids.includes(id))).toEqual([]);
        }
      }
    } finally {
      await mneme.close();
    }
  });
});
