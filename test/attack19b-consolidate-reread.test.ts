import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  consolidateOffline,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Consolidation's pass over new memories reads their texts (`mergeableTextsAfter`) and a whole row only for a memory
 * whose candidates it searches (911bacd). A memory pinned after its text was read and before its row is read is merged
 * with nothing: it is judged by its row. Held on both stores, with and without the near-duplicate index.
 */
const modes = ['never', 'always'] as const;

describe.each(engineStores)('a memory pinned while consolidation reads the new ones, on %s', (store: EngineStore) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it.each(modes)('is merged with nothing, the near-duplicate index %s', { timeout: 60_000 }, async (mode) => {
    for (const pinning of [false, true]) {
      const engine = await openMaintenanceEngine({ store });
      const { mneme, storage } = engine;
      try {
        const first = await mneme.remember({
          content: 'The release train leaves every Tuesday at nine in the morning',
        });
        const second = await mneme.remember({ content: 'The release train leaves every Tuesday at nine each morning' });
        const read = storage.maintenance.mergeableTextsAfter.bind(storage.maintenance);
        storage.maintenance.mergeableTextsAfter = async (afterId, limit) => {
          const page = await read(afterId, limit);
          if (pinning && page.length > 0) await mneme.update({ id: first.id, pinned: true });
          return page;
        };

        const report = await consolidateOffline(engine, { nearDuplicateIndex: mode });

        expect(report.checked).toBe(2);
        const [kept, other] = await storage.memories.get([first.id, second.id]);
        if (pinning) {
          expect(report.merged).toBe(0);
          expect([kept?.pinned, kept?.archivedAt, other?.archivedAt]).toEqual([true, null, null]);
        } else {
          expect(report.merged).toBe(2);
          expect([kept?.archivedAt, other?.archivedAt]).not.toContain(null);
        }
      } finally {
        await mneme.close();
      }
    }
  });
});
