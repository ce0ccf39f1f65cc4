import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { HeldLock, Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-locks-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Keeps the event loop busy (a long synchronous step of the holder: no timer, so no renewal, runs). */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

describe('attack7: SQLite named locks when the holder is alive but its renewal is late', () => {
  // Finding 1: a storage whose renewal could not run for a lease's length (a long synchronous step, a paused
  // process) lost the lease without knowing. A lease must expire for a killed holder's lock to be freed, so the
  // second storage is granted it; what the fix guarantees is that the first learns it (`confirm`), and that a
  // task stops before moving its watermark (maintain's fence, below).
  it('tells a holder that paused past its lease that another storage took the lock', async () => {
    const path = join(folder, 'lost.db');
    const first = createSqliteStorage({ path, lockTtlMs: 300 });
    const second = createSqliteStorage({ path, lockTtlMs: 300 });
    try {
      const lock = await first.tryLock('maintenance:link');
      expect(lock).not.toBeNull();
      expect(await lock?.confirm()).toBe(true);
      stall(900);
      const taken = await second.tryLock('maintenance:link');
      expect(taken).not.toBeNull();
      expect(await lock?.confirm()).toBe(false);
      // The first's release leaves the second's lease alone.
      await lock?.release();
      expect(await taken?.confirm()).toBe(true);
      expect(await first.tryLock('maintenance:link')).toBeNull();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('keeps a holder that paused past its lease when nobody took the lock meanwhile', async () => {
    const path = join(folder, 'paused.db');
    const first = createSqliteStorage({ path, lockTtlMs: 300 });
    const second = createSqliteStorage({ path, lockTtlMs: 300 });
    try {
      const lock = await first.tryLock('maintenance:link');
      stall(900);
      expect(await lock?.confirm()).toBe(true);
      expect(await second.tryLock('maintenance:link')).toBeNull();
    } finally {
      await first.close();
      await second.close();
    }
  });

  // Finding 2: two overlapping calls of one storage were both granted, and a stale release freed another hold.
  it('does not grant one lock twice to two overlapping calls of the same storage', async () => {
    const path = join(folder, 'overlap.db');
    const storage = createSqliteStorage({ path });
    try {
      const [first, second] = await Promise.all([
        storage.tryLock('maintenance:consolidate'),
        storage.tryLock('maintenance:consolidate'),
      ]);
      expect([first, second].filter((lock) => lock !== null)).toHaveLength(1);
    } finally {
      await storage.close();
    }
  });

  it('frees only its own hold: a stale release does not free the lock another call holds now', async () => {
    const path = join(folder, 'stale-release.db');
    const storage = createSqliteStorage({ path });
    const other = createSqliteStorage({ path });
    try {
      const first = await storage.tryLock('maintenance:link');
      expect(first).not.toBeNull();
      await first?.release();
      const second = await storage.tryLock('maintenance:link');
      expect(second).not.toBeNull();
      // The first holder releases again (a retry, a finally run twice): the second still holds the lock.
      await first?.release();
      expect(await other.tryLock('maintenance:link')).toBeNull();
      expect(await storage.tryLock('maintenance:link')).toBeNull();
    } finally {
      await storage.close();
      await other.close();
    }
  });
});

describe('attack7: maintain stops a task whose lock another process took while it paused', () => {
  it('fails the task before it moves its watermark, and runs it again once the lock is free', async () => {
    const path = join(folder, 'fence.db');
    const opened = createSqliteStorage({ path, lockTtlMs: 300 });
    const other = createSqliteStorage({ path, lockTtlMs: 300 });
    let taken: HeldLock | null = null;
    let pauseOnce = true;
    const state = opened.maintenanceState;
    // Consolidation reads its watermark first: there this process "pauses" past its lease, and the other takes the task.
    const storage: Storage = {
      ...opened,
      maintenanceState: {
        ...state,
        async get(channelId: string, task: string) {
          if (task === 'consolidate' && pauseOnce) {
            pauseOnce = false;
            stall(900);
            taken = await other.tryLock('maintenance:consolidate');
          }
          return state.get(channelId, task);
        },
      },
    };
    const mneme = createEngine({
      storage,
      embedder: null,
      clock: createFixedClock('2024-06-01T09:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({}),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
    });
    try {
      for (let i = 0; i < 3; i++) await mneme.remember({ content: `the heron ${i} stalks frogs along the canal` });
      await expect(mneme.maintain({ tasks: ['consolidate'] })).rejects.toThrow(/lost its lock/);
      expect(taken).not.toBeNull();
      expect(await other.maintenanceState.get('', 'consolidate')).toBeNull();
      await (taken as HeldLock | null)?.release();
      const report = await mneme.maintain({ tasks: ['consolidate'] });
      expect(report.consolidate?.skipped).toBeNull();
      expect(await other.maintenanceState.get('', 'consolidate')).not.toBeNull();
    } finally {
      await mneme.close();
      await other.close();
    }
  });
});
