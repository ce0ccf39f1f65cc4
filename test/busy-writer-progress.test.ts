import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-busy-writer-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const BUSY_TIMEOUT_MS = 200;

/**
 * Another connection writing back to back, as another process's import and its extraction batches do: it commits,
 * then takes the write lock again at once, in the same turn, so a waiter's retries (timers) never land between its
 * transactions. It holds the lock for `holdMs` (three busy timeouts of the waiter: past the wait of a call that does
 * not count progress, well within the limit of one that does), committing a row every turn when `commits` is true
 * (progress), and lets go after that.
 */
function writeBackToBack(path: string, { holdMs, commits }: { holdMs: number; commits: boolean }): Promise<void> {
  const other = new Database(path);
  other.exec('CREATE TABLE IF NOT EXISTS other_writes (at INTEGER)');
  other.exec('BEGIN IMMEDIATE');
  const until = performance.now() + holdMs;
  return new Promise((resolve) => {
    const turn = () => {
      if (commits) {
        other.prepare('INSERT INTO other_writes (at) VALUES (?)').run(Date.now());
        other.exec('COMMIT');
      }
      if (performance.now() >= until) {
        if (other.inTransaction) other.exec('COMMIT');
        other.close();
        resolve();
        return;
      }
      if (commits) other.exec('BEGIN IMMEDIATE');
      setTimeout(turn, 10);
    };
    setTimeout(turn, 10);
  });
}

/**
 * The faults suite's two importers of one file: on a loaded machine one exited STORE_BUSY ("appending messages: the
 * database is busy", or opening: "cannot open the database ...: the database is busy"). The other process held the
 * write lock in back-to-back transactions (its import, then extraction batches of up to 2 s each), each commit
 * followed at once by the next BEGIN, and a waiter's retries every 1 to 100 ms seldom landed in the gap; after the
 * busy timeout (5 s) it gave up, though the holder was making progress all along. A call now waits on while another
 * connection keeps committing (SQLite's data_version), and still gives up on a lock held without a commit.
 */
describe('a store call that meets the write lock of another connection', () => {
  it('waits on while the other connection keeps committing, and is done once it lets go', async () => {
    const path = join(folder, 'progress.db');
    const storage = await createSqliteStorage({ path, busyTimeoutMs: BUSY_TIMEOUT_MS });
    try {
      const other = writeBackToBack(path, { holdMs: 3 * BUSY_TIMEOUT_MS, commits: true });
      const written = storage.directory.putUser({ id: 'ann', displayName: 'Ann' }, 1);
      await expect(written).resolves.toEqual({ id: 'ann', displayName: 'Ann' });
      await other;
    } finally {
      await storage.close();
    }
  });

  it('still fails STORE_BUSY when the other connection holds the lock without committing', async () => {
    const path = join(folder, 'stuck.db');
    const storage = await createSqliteStorage({ path, busyTimeoutMs: BUSY_TIMEOUT_MS });
    try {
      const other = writeBackToBack(path, { holdMs: 3 * BUSY_TIMEOUT_MS, commits: false });
      await expect(storage.directory.putUser({ id: 'ann', displayName: 'Ann' }, 1)).rejects.toMatchObject({
        code: 'STORE_BUSY',
      });
      await other;
    } finally {
      await storage.close();
    }
  });
});
