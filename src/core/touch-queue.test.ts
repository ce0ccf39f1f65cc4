import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { holdWriteLock } from '../../test/write-lock.js';
import { createMneme } from '../config/create-mneme.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import { createTouchQueue } from './touch-queue.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-touches-'));
let files = 0;
const newFile = () => join(folder, `touches-${files++}.db`);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const at = Date.parse('2024-06-15T12:00:00.000Z');

/** Access count and last access of memory `id`, read on a connection of its own. */
function accessOf(path: string, id: number) {
  const reader = new Database(path, { readonly: true });
  try {
    return reader
      .prepare<[number], { accessCount: number; lastAccessed: number | null }>(
        'SELECT access_count AS accessCount, last_accessed AS lastAccessed FROM memories WHERE id = ?',
      )
      .get(id);
  } finally {
    reader.close();
  }
}

async function storeWithMemories(count: number) {
  const path = newFile();
  const mneme = await createMneme({ path });
  const ids: number[] = [];
  for (let index = 0; index < count; index++) ids.push((await mneme.remember({ content: `memory ${index}` })).id);
  await mneme.close();
  return { path, ids, storage: createSqliteStorage({ path }) };
}

describe('the touch queue', () => {
  it('keeps the retrievals a locked database refuses and writes them in retrieval order once it takes writes', async () => {
    const { path, ids, storage } = await storeWithMemories(1);
    const [id = 0] = ids;
    const warnings: string[] = [];
    const touches = createTouchQueue({ store: storage.memories, logger: { warn: (text) => warnings.push(text) } });
    const lock = holdWriteLock(path);
    await touches.record([{ id, strength: 2 }], at);
    await touches.record([{ id, strength: 3 }], at + 1000);
    expect(touches.status()).toEqual({ queued: 2, dropped: 0 });
    expect(accessOf(path, id)).toEqual({ accessCount: 0, lastAccessed: null });
    expect(warnings).toEqual([expect.stringMatching(/retrievals could not be recorded \(.*busy.*\); they are kept/)]);

    lock.release();
    expect(await touches.flush()).toBe(true);
    expect(touches.status()).toEqual({ queued: 0, dropped: 0 });
    expect(accessOf(path, id)).toEqual({ accessCount: 2, lastAccessed: at + 1000 });
    const [memory] = await storage.memories.get([id]);
    expect(memory?.strength).toBe(3);
    await touches.close();
    await storage.close();
  });

  it('drops the retrievals past its capacity with one warning, and counts them once the database takes writes', async () => {
    const { path, ids, storage } = await storeWithMemories(3);
    const warnings: string[] = [];
    const touches = createTouchQueue({
      store: storage.memories,
      logger: { warn: (text) => warnings.push(text) },
      capacity: 2,
    });
    const lock = holdWriteLock(path);
    for (const [index, id] of ids.entries()) await touches.record([{ id }], at + index);
    await touches.record([{ id: ids[0] ?? 0 }], at + 10);
    expect(touches.status()).toEqual({ queued: 2, dropped: 2 });
    expect(warnings.slice(1)).toEqual([
      expect.stringMatching(/^2 memory retrievals wait to be recorded, the most kept/),
    ]);

    lock.release();
    expect(await touches.flush()).toBe(true);
    expect(warnings.at(-1)).toBe('2 memory retrievals not recorded while the database refused writes');
    expect(ids.map((id) => accessOf(path, id)?.accessCount)).toEqual([1, 1, 0]);
    await touches.close();
    await storage.close();
  });

  it('writes what it kept when it closes', async () => {
    const { path, ids, storage } = await storeWithMemories(1);
    const [id = 0] = ids;
    const touches = createTouchQueue({ store: storage.memories, logger: { warn: () => {} } });
    const lock = holdWriteLock(path);
    await touches.record([{ id }], at);
    lock.release();
    await touches.close();
    expect(accessOf(path, id)?.accessCount).toBe(1);
    await storage.close();
  });

  it('reports what it could not write before closing as lost', async () => {
    const { path, ids, storage } = await storeWithMemories(1);
    const [id = 0] = ids;
    const warnings: string[] = [];
    const touches = createTouchQueue({ store: storage.memories, logger: { warn: (text) => warnings.push(text) } });
    const lock = holdWriteLock(path);
    await touches.record([{ id }], at);
    await touches.close();
    lock.release();
    expect(warnings.at(-1)).toMatch(/^1 memory retrieval not recorded before closing: .*busy/);
    await touches.record([{ id }], at);
    expect(accessOf(path, id)?.accessCount).toBe(0);
    await storage.close();
  });
});
