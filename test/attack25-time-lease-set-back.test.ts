import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack25-set-back-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const opened: Storage[] = [];
afterEach(async () => {
  for (const storage of opened.splice(0)) await storage.close().catch(() => {});
  vi.useRealTimers();
});
const HOUR = 60 * 60_000;

/**
 * Attack 25 (time): the SQLite leases (a channel's extraction, a maintenance task's lock) expire by the machine's
 * clock (ADR 6). A process that took one while the clock ran an hour fast and then died (or was killed) left a lease
 * expiring an hour ahead of the right time: once NTP set the clock back, no other process could extract that channel
 * (or run that task) for the hour. A live holder renews its lease one length ahead at every third of it, so a lease
 * more than two lengths ahead was written by a clock that ran fast, and is taken over.
 */
describe('a SQLite lease taken while the clock ran an hour fast, its holder dead', () => {
  it('is taken by another process once the clock is set back, not an hour later', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-06-01T10:00:00.000Z') + HOUR });
    const path = join(folder, 'lease.db');
    const dead = createSqliteStorage({ path });
    opened.push(dead);
    const lease = { channelId: 'ops', task: 'extraction', ttlMs: 30_000 };
    expect(await dead.extraction.claim({ ...lease, owner: 'dead' })).toBe(true);
    // The holder dies without releasing; NTP sets the clock right.
    vi.setSystemTime(Date.parse('2026-06-01T10:00:00.000Z'));
    const other = createSqliteStorage({ path });
    opened.push(other);
    expect(await other.extraction.claim({ ...lease, owner: 'other' })).toBe(true);
  });

  it('is kept from another process while its holder renews it at the right time', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-06-01T10:00:00.000Z') });
    const path = join(folder, 'live.db');
    const holder = createSqliteStorage({ path });
    const other = createSqliteStorage({ path });
    opened.push(holder, other);
    const lease = { channelId: 'ops', task: 'extraction', ttlMs: 30_000 };
    expect(await holder.extraction.claim({ ...lease, owner: 'holder' })).toBe(true);
    vi.setSystemTime(Date.now() + 10_000);
    expect(await holder.extraction.claim({ ...lease, owner: 'holder' })).toBe(true);
    expect(await other.extraction.claim({ ...lease, owner: 'other' })).toBe(false);
  });

  it('frees a maintenance task its dead holder took while the clock ran fast', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-06-01T10:00:00.000Z') + HOUR });
    const path = join(folder, 'task.db');
    const dead = createSqliteStorage({ path });
    opened.push(dead);
    expect(await dead.tryLock('maintenance:decay')).not.toBeNull();
    vi.setSystemTime(Date.parse('2026-06-01T10:00:00.000Z'));
    const other = createSqliteStorage({ path });
    opened.push(other);
    expect(await other.tryLock('maintenance:decay')).not.toBeNull();
  });
});
