import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { holdWriteLock } from '../../../test/write-lock.js';
import { ErrorCode } from '../../core/errors.js';
import { runInBackground } from '../../workers/background-work.js';
import type { NewMessage } from '../message-store.js';
import { createSqliteStorage } from './sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-scheduler-'));
let files = 0;
const newFile = () => join(folder, `scheduled-${files++}.db`);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const at = Date.parse('2024-06-15T12:00:00.000Z');

const message = (content: string): NewMessage => ({
  channelId: 'room',
  senderId: 'oz',
  role: 'user',
  content,
  topicId: null,
  createdAt: at,
});

/** Records the order in which things happened. */
function timeline() {
  const events: string[] = [];
  return { events, note: (event: string) => events.push(event) };
}

describe('the SQLite scheduler', () => {
  it('waits for a lock held by another connection on a timer: reads and timers go on, then the whole write commits', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path, busyTimeoutMs: 60_000 });
    await storage.messages.append([message('written before the lock')]);
    const lock = holdWriteLock(path);
    const { events, note } = timeline();
    const write = storage.messages
      .append([message('first of two'), message('second of two')])
      .then(() => note('write committed'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    note('timer fired');
    const read = await storage.messages.listAfter('room', 0, 10);
    note(`read ${read.map((stored) => stored.content).join(', ')}`);
    lock.release();
    await write;
    expect(events).toEqual(['timer fired', 'read written before the lock', 'write committed']);
    const stored = await storage.messages.listAfter('room', 0, 10);
    expect(stored.map((entry) => entry.content)).toEqual(['written before the lock', 'first of two', 'second of two']);
    await storage.close();
  });

  it('fails with STORE_BUSY once busyTimeoutMs has passed and the lock is still held', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path, busyTimeoutMs: 30 });
    const lock = holdWriteLock(path);
    try {
      await expect(storage.messages.append([message('never written')])).rejects.toMatchObject({
        code: ErrorCode.StoreBusy,
      });
    } finally {
      lock.release();
    }
    expect(await storage.messages.latestId('room')).toBe(0);
    await storage.close();
  });

  it('does not wait for the lock to record retrievals: the touch fails at once and its caller keeps it', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path, busyTimeoutMs: 60_000 });
    const lock = holdWriteLock(path);
    const { events, note } = timeline();
    const touch = storage.memories.touch([{ id: 1 }], at).then(
      () => note('touch written'),
      (error: { code: string }) => note(`touch refused ${error.code}`),
    );
    const timer = new Promise((resolve) => setTimeout(resolve, 200)).then(() => note('timer fired'));
    await Promise.race([touch, timer]);
    lock.release();
    await Promise.all([touch, timer]);
    expect(events).toEqual([`touch refused ${ErrorCode.StoreBusy}`, 'timer fired']);
    await storage.close();
  });

  it('ends every wait for the lock with STORE_BUSY when it closes', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path, busyTimeoutMs: 60_000 });
    const lock = holdWriteLock(path);
    const { events, note } = timeline();
    const write = storage.messages.append([message('never written')]).then(
      () => note('write committed'),
      (error: { code: string }) => note(`write failed ${error.code}`),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    await storage.close();
    await write;
    note('closed');
    lock.release();
    expect(events).toEqual([`write failed ${ErrorCode.StoreBusy}`, 'closed']);
  });

  it("stops a background call's wait for the lock with STORE_BUSY once its work's signal aborts", async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path, busyTimeoutMs: 60_000 });
    const lock = holdWriteLock(path);
    const { events, note } = timeline();
    const stop = new AbortController();
    const write = runInBackground(() => storage.messages.append([message('never written')]), stop.signal).then(
      () => note('write committed'),
      (error: { code: string }) => note(`write failed ${error.code}`),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await write;
    note('lock released');
    lock.release();
    expect(events).toEqual([`write failed ${ErrorCode.StoreBusy}`, 'lock released']);
    expect(await storage.messages.latestId('room')).toBe(0);
    await storage.close();
  });

  it('cuts background work into slices that let a timer in; the calls of a waiting caller run straight through', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    await storage.messages.append(Array.from({ length: 100 }, (_, index) => message(`message number ${index}`)));
    const readsUntilTimerFires = async () => {
      let timerFired = false;
      setTimeout(() => {
        timerFired = true;
      }, 0);
      const started = performance.now();
      while (!timerFired && performance.now() - started < 200) await storage.messages.listAfter('room', 0, 100);
      return timerFired;
    };
    expect(await runInBackground(readsUntilTimerFires)).toBe(true);
    expect(await readsUntilTimerFires()).toBe(false);
    await storage.close();
  });

  it('holds the connection for a batch of extraction steps: calls from outside wait for its commit, calls inside see its writes', async () => {
    const storage = createSqliteStorage({ path: newFile() });
    const [first, second] = await storage.messages.append([message('one'), message('two')]);
    const lease = { channelId: 'room', task: 'extraction', owner: 'me', ttlMs: 60_000 };
    expect(await storage.extraction.claim(lease)).toBe(true);
    const { events, note } = timeline();
    // A call of another request, chained outside the batch, set off once the batch has applied a step.
    let stepApplied = () => {};
    const outside = new Promise<void>((resolve) => {
      stepApplied = resolve;
    })
      .then(() => storage.maintenanceState.get('room', 'extraction'))
      .then((state) => note(`outside read watermark ${state?.watermark}`));
    await storage.extraction.batch(async () => {
      await storage.extraction.apply(lease, { from: 0, to: first?.id ?? 0, at });
      stepApplied();
      await new Promise((resolve) => setTimeout(resolve, 20));
      note(`inside read watermark ${(await storage.maintenanceState.get('room', 'extraction'))?.watermark}`);
      await storage.extraction.apply(lease, { from: first?.id ?? 0, to: second?.id ?? 0, at });
      note('batch done');
    });
    await outside;
    expect(events).toEqual([
      `inside read watermark ${first?.id}`,
      'batch done',
      `outside read watermark ${second?.id}`,
    ]);
    await storage.close();
  });

  it('rolls a whole batch of extraction steps back when its work throws', async () => {
    const storage = createSqliteStorage({ path: newFile() });
    const [first, second] = await storage.messages.append([message('one'), message('two')]);
    const lease = { channelId: 'room', task: 'extraction', owner: 'me', ttlMs: 60_000 };
    await storage.extraction.claim(lease);
    const failing = storage.extraction.batch(async () => {
      await storage.extraction.apply(lease, { from: 0, to: first?.id ?? 0, at });
      await storage.extraction.apply(lease, { from: first?.id ?? 0, to: second?.id ?? 0, at });
      throw new Error('the third step failed');
    });
    await expect(failing).rejects.toThrow('the third step failed');
    expect(await storage.maintenanceState.get('room', 'extraction')).toBeNull();
    expect(await storage.extraction.apply(lease, { from: 0, to: first?.id ?? 0, at })).not.toBeNull();
    expect((await storage.maintenanceState.get('room', 'extraction'))?.watermark).toBe(first?.id);
    await storage.close();
  });
});
