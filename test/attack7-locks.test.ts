import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';

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
  // Finding: a storage whose renewal could not run for a lease's length (event loop or scheduler queue busy
  // with one long step, a paused process) loses the lease without knowing: another process is granted the
  // same maintenance lock while the first still runs the task, and the first's failed renewal is ignored.
  it.fails('does not grant a lock to a second storage while the first still holds it (no lost lease unnoticed)', async () => {
    const path = join(folder, 'lost.db');
    const first = createSqliteStorage({ path, lockTtlMs: 300 });
    const second = createSqliteStorage({ path, lockTtlMs: 300 });
    try {
      const release = await first.tryLock('maintenance:link');
      expect(release).not.toBeNull();
      stall(900);
      // The first has not released: a second holder means the task runs twice at once.
      const stolen = await second.tryLock('maintenance:link');
      expect(stolen).toBeNull();
    } finally {
      await first.close();
      await second.close();
    }
  });

  // Finding: `take` checks `held` before awaiting the claim and records the lock after it, so two calls of one
  // storage that overlap (two engines over one storage, or any direct caller) are both granted; and a release
  // deletes whatever entry `held` has under the name, so the first holder's release frees the second's lock and
  // a later release of the second frees a third's.
  it.fails('does not grant one lock twice to two overlapping calls of the same storage', async () => {
    const path = join(folder, 'overlap.db');
    const storage = createSqliteStorage({ path });
    try {
      const [first, second] = await Promise.all([
        storage.tryLock('maintenance:consolidate'),
        storage.tryLock('maintenance:consolidate'),
      ]);
      expect([first, second].filter((release) => release !== null)).toHaveLength(1);
    } finally {
      await storage.close();
    }
  });

  it.fails('frees only its own hold: a stale release does not free the lock another call holds now', async () => {
    const path = join(folder, 'stale-release.db');
    const storage = createSqliteStorage({ path });
    const other = createSqliteStorage({ path });
    try {
      const first = await storage.tryLock('maintenance:link');
      expect(first).not.toBeNull();
      await first?.();
      const second = await storage.tryLock('maintenance:link');
      expect(second).not.toBeNull();
      // The first holder releases again (a retry, a finally run twice): the second still holds the lock.
      await first?.();
      expect(await other.tryLock('maintenance:link')).toBeNull();
    } finally {
      await storage.close();
      await other.close();
    }
  });
});
