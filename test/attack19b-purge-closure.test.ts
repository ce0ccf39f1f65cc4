import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportedMemory } from '../src/storage/transfer-store.js';
import {
  closeEngineStores,
  type EngineStore,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * A purge deletes every memory built on one it deletes, at any depth (session 19; SQLite takes the closure in
 * JavaScript since 9ec203a, PostgreSQL in a recursive statement). An import sets `source_ids` that point forward, so
 * memories may be built on each other in a cycle; chains may be deep. Held on every store: kept as a guard.
 */
const AT = Date.parse('2026-03-02T08:00:00Z');

function memory(content: string, userId: string | null): ImportedMemory {
  return {
    content,
    category: 'fact',
    sector: 'semantic',
    scope: 'room',
    owner: 'room:hall',
    userId,
    channelId: 'hall',
    projectId: null,
    topicId: null,
    source: 'dream',
    importance: 0.5,
    strength: 1,
    salience: 0.5,
    accessCount: 0,
    lastAccessedAt: null,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    validFrom: AT,
    archivedAt: null,
    fadedAt: null,
    createdAt: AT,
    updatedAt: AT,
    decayedAt: null,
    searchContext: null,
    searchContextMessageId: null,
    chunkMessageId: null,
    chunkIndex: null,
  };
}

describe.each(serverEngineStores)('a purge of memories built on each other, on %s', (store: EngineStore) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it('deletes a cycle and a deep chain on the users memory and keeps what is built on others', {
    timeout: 60_000,
  }, async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store });
    try {
      const depth = 300;
      const session = await storage.transfer.beginImport();
      const [bobs, x, y, anns, onAnns, onBoth, self, ...chain] = await session.insertMemories([
        memory('Bob keeps the spare key under the mat', 'bob'),
        memory('Insight X', null),
        memory('Insight Y', null),
        memory('Ann waters the plants on Fridays', 'ann'),
        memory('Insight on Ann', null),
        memory('Insight on the insight on Ann', null),
        memory('Insight on itself', null),
        ...Array.from({ length: depth }, (_, index) => memory(`Chain link ${index}`, null)),
      ]);
      const id = (value: number | undefined) => value ?? 0;
      await session.setSourceIds([
        [id(x), [id(y)]],
        [id(y), [id(x), id(bobs)]],
        [id(onAnns), [id(anns)]],
        [id(onBoth), [id(onAnns), id(self)]],
        [id(self), [id(self)]],
        ...chain.map((link, index) => [link, [index === 0 ? id(bobs) : id(chain[index - 1])]] as const),
      ]);
      await session.commit();

      const report = await mneme.purgeUser('bob');

      expect(report.memories).toBe(3 + depth);
      const left = (
        await storage.memories.get([id(bobs), id(x), id(y), id(anns), id(onAnns), id(onBoth), id(self), ...chain])
      )
        .map((found) => found.content)
        .sort();
      expect(left).toEqual([
        'Ann waters the plants on Fridays',
        'Insight on Ann',
        'Insight on itself',
        'Insight on the insight on Ann',
      ]);
    } finally {
      await mneme.close();
    }
  });
});
