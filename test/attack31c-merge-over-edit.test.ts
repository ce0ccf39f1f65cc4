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
 * Consolidation reads a cluster of near-duplicates, asks the merger for one text (a chat model: seconds), then
 * writes the merged memory and archives the originals. An original Bob edited meanwhile (he took the spare key's
 * hiding place out of it) was archived "merged into" a memory written from its text before his edit: his edit lost,
 * the hiding place back in what he recalls, under a new id.
 */

const start = '2024-06-01T00:00:00.000Z';
const bobsOwn = { scope: 'personal', userId: 'bob', category: 'fact' } as const;

/** The offline merger, with `during` run once while it merges (as a chat model's call takes its time). */
function slowMerger(): { merger: MemoryMerger; during: (write: () => Promise<unknown>) => void } {
  const offline = createOfflineMemoryMerger();
  let pending: (() => Promise<unknown>) | null = null;
  return {
    merger: {
      id: offline.id,
      async merge(input, options) {
        const write = pending;
        pending = null;
        if (write) await write();
        return offline.merge(input, options);
      },
    },
    during: (write) => {
      pending = write;
    },
  };
}

describe.each(engineStores)('a consolidation beside Bob editing one of its originals, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-merge-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  async function open(name: string) {
    const slow = slowMerger();
    const maintainer = await openMaintenanceEngine({ store, path: join(folder, name), start, merger: slow.merger });
    // SQLite: Bob's service is another engine on the file; PostgreSQL: a request of the same engine.
    const service: MaintenanceEngine =
      store === 'sqlite' ? await openMaintenanceEngine({ store, path: join(folder, name), start }) : maintainer;
    const first = await maintainer.mneme.remember({
      content: 'Bob keeps the spare key under the blue flower pot',
      ...bobsOwn,
    });
    const second = await maintainer.mneme.remember({
      content: 'Bob keeps the spare key under the blue flower pot by the door',
      ...bobsOwn,
    });
    const close = async () => {
      if (service !== maintainer) await service.mneme.close();
      await maintainer.mneme.close();
    };
    return { slow, maintainer, service, first: first.id, second: second.id, close };
  }

  it('merges the two when nothing changes them meanwhile', async () => {
    const opened = await open('quiet.db');
    try {
      const report = await opened.maintainer.mneme.maintain({ tasks: ['consolidate'] });
      expect(report.consolidate?.merged).toBe(2);
    } finally {
      await opened.close();
    }
  });

  it('keeps the text Bob wrote while the merger was merging', async () => {
    const opened = await open('edited.db');
    try {
      const bob = opened.service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
      opened.slow.during(() => bob.update({ id: opened.second, content: 'Bob moved the spare key somewhere else' }));
      await opened.maintainer.mneme.maintain({ tasks: ['consolidate'] });

      const [edited] = await opened.maintainer.storage.memories.get([opened.second]);
      expect(edited?.content).toBe('Bob moved the spare key somewhere else');
      expect(edited?.archivedAt).toBeNull();
      const active = await opened.maintainer.mneme.list({ userId: 'bob', limit: 10 });
      expect(active.memories.map((memory) => memory.content)).not.toContain(
        'Bob keeps the spare key under the blue flower pot by the door',
      );
    } finally {
      await opened.close();
    }
  });
});
