import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryMerger } from '../src/core/ports/memory-merger.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import {
  closeEngineStores,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * A merge is refused when Bob edits an original while the merger writes (attack 31c), and the run said the cluster
 * would be tried next run. But the consolidation watermark moved past both originals all the same, and the full-text
 * pass only starts from memories above it: two near-duplicates refused once were never merged, whatever Bob did.
 */

const start = '2024-06-01T00:00:00.000Z';
const bobsOwn = { scope: 'personal', userId: 'bob', category: 'fact' } as const;

describe.each(engineStores)('a merge refused over an edit, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31e-merge-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  it('is merged by the next run from what Bob left', async () => {
    const offline = createOfflineMemoryMerger();
    let during: (() => Promise<unknown>) | null = null;
    const merger: MemoryMerger = {
      id: offline.id,
      async merge(input, options) {
        const write = during;
        during = null;
        if (write) await write();
        return offline.merge(input, options);
      },
    };
    const path = join(folder, 'retried.db');
    const maintainer = await openMaintenanceEngine({ store, path, start, merger });
    // SQLite: Bob's service is another engine on the file; PostgreSQL: a request of the same engine.
    const service: MaintenanceEngine =
      store === 'sqlite' ? await openMaintenanceEngine({ store, path, start }) : maintainer;
    try {
      const first = await maintainer.mneme.remember({
        content: 'Bob keeps the spare key under the blue pot',
        ...bobsOwn,
      });
      const second = await maintainer.mneme.remember({
        content: 'Bob keeps the spare key under the blue pot by the door',
        ...bobsOwn,
      });
      const bob = service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
      during = () => bob.update({ id: second.id, importance: 0.9 });
      const refused = await maintainer.mneme.maintain({ tasks: ['consolidate'] });
      expect(refused.consolidate?.merged).toBe(0);

      const next = await maintainer.mneme.maintain({ tasks: ['consolidate'] });
      expect(next.consolidate?.merged).toBe(2);
      const originals = await maintainer.storage.memories.get([first.id, second.id]);
      expect(originals.map((memory) => memory.archivedAt !== null)).toEqual([true, true]);
      const active = await maintainer.mneme.list({ userId: 'bob', limit: 10 });
      expect(active.memories.map((memory) => memory.importance)).toEqual([0.9]);

      // Done once: a third run finds nothing left to merge.
      const third = await maintainer.mneme.maintain({ tasks: ['consolidate'] });
      expect(third.consolidate?.merged).toBe(0);
    } finally {
      if (service !== maintainer) await service.mneme.close();
      await maintainer.mneme.close();
    }
  });
});
