import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MnemePolicy } from '../src/core/policy.js';
import {
  closeEngineStores,
  daysAfter,
  type EngineStore,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Decay reads the memories due (a page of 500), computes each one's step from the columns it read, then writes what
 * the steps ask for: a new importance, or the memory put to rest. Bob's own writes in another process (mneme serve
 * beside `mneme maintain` on one file) between that read and that write were overruled: a memory he pinned was put
 * to rest all the same, one he had just recalled too, and an importance he had just set was replaced by the step
 * down computed from the importance before his edit. Acknowledged writes lost to a stale read.
 */

const start = '2024-06-01T00:00:00.000Z';

interface Pair {
  maintainer: MaintenanceEngine;
  service: MaintenanceEngine;
  memory: number;
}

/**
 * SQLite: two engines on one file (the service and `mneme maintain`). PostgreSQL: one engine, the scheduler of
 * `mneme serve` and a request of the same process (a second engine would be another empty schema).
 */
async function openPair(store: EngineStore, path: string, decay: MnemePolicy['decay']): Promise<Pair> {
  const maintainer = await openMaintenanceEngine({ store, path, start, policy: { decay } });
  const service =
    store === 'sqlite' ? await openMaintenanceEngine({ store, path, start, policy: { decay } }) : maintainer;
  const bob = service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
  const memory = (await bob.remember({ content: 'My locker code is 4471', importance: 0.8 })).id;
  return { maintainer, service, memory };
}

/** Runs `write` (the service's) once, right after the maintainer's decay has read its first page of due memories. */
function afterDueRead(pair: Pair, write: () => Promise<unknown>): void {
  const maintenance = pair.maintainer.storage.maintenance;
  const due = maintenance.dueForDecay.bind(maintenance);
  let done = false;
  maintenance.dueForDecay = async (rule, until, after, limit) => {
    const page = await due(rule, until, after, limit);
    if (!done && page.length > 0) {
      done = true;
      await write();
    }
    return page;
  };
}

async function closePair(pair: Pair): Promise<void> {
  if (pair.service !== pair.maintainer) await pair.service.mneme.close();
  await pair.maintainer.mneme.close();
}

const asBob = (pair: Pair) => pair.service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });

describe.each(engineStores)('decay beside Bob writing his memory in another process, on %s', (store) => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-decay-'));
  beforeAll(() => prepareEngineStore(store), 60_000);
  afterAll(async () => {
    await closeEngineStores();
    rmSync(folder, { recursive: true, force: true });
  });

  it('puts an old memory to rest when nothing touches it between the read and the write', async () => {
    const pair = await openPair(store, join(folder, 'quiet.db'), 'ebbinghaus');
    try {
      const later = daysAfter(start, 60);
      await pair.maintainer.mneme.maintain({ tasks: ['decay'], now: later });
      const [memory] = await pair.maintainer.storage.memories.get([pair.memory]);
      expect(memory?.fadedAt).not.toBeNull();
    } finally {
      await closePair(pair);
    }
  });

  it('does not put to rest a memory Bob pinned after decay read it', async () => {
    const pair = await openPair(store, join(folder, 'pinned.db'), 'ebbinghaus');
    try {
      const later = daysAfter(start, 60);
      pair.service.clock.set(later);
      afterDueRead(pair, () => asBob(pair).update({ id: pair.memory, pinned: true }));
      const report = await pair.maintainer.mneme.maintain({ tasks: ['decay'], now: later });
      expect(report.decay?.archived).toBe(0);
      const [memory] = await pair.maintainer.storage.memories.get([pair.memory]);
      expect([memory?.pinned, memory?.archivedAt]).toEqual([true, null]);
    } finally {
      await closePair(pair);
    }
  });

  it('does not put to rest a memory Bob recalled after decay read it', async () => {
    const pair = await openPair(store, join(folder, 'recalled.db'), 'ebbinghaus');
    try {
      const later = daysAfter(start, 60);
      pair.service.clock.set(later);
      afterDueRead(pair, async () => {
        const found = await asBob(pair).recall({ query: 'locker code' });
        expect(found.hits.map((hit) => hit.memory.id)).toEqual([pair.memory]);
      });
      await pair.maintainer.mneme.maintain({ tasks: ['decay'], now: later });
      const [memory] = await pair.maintainer.storage.memories.get([pair.memory]);
      expect(memory?.archivedAt).toBeNull();
      expect(memory?.lastAccessedAt).toBe(new Date(later).toISOString());
    } finally {
      await closePair(pair);
    }
  });

  it('keeps the importance Bob set after decay read the memory', async () => {
    const pair = await openPair(store, join(folder, 'importance.db'), 'importance-steps');
    try {
      const later = daysAfter(start, 8);
      pair.service.clock.set(later);
      afterDueRead(pair, () => asBob(pair).update({ id: pair.memory, importance: 1 }));
      await pair.maintainer.mneme.maintain({ tasks: ['decay'], now: later });
      const [memory] = await pair.maintainer.storage.memories.get([pair.memory]);
      expect(memory?.importance).toBe(1);
      const versions = await pair.maintainer.mneme.history({ id: pair.memory });
      expect(versions.at(-1)?.actor).toBe('bob app');
    } finally {
      await closePair(pair);
    }
  });
});
