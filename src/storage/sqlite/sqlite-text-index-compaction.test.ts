import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../global-memory.fixture.js';
import { TEXT_INDEX_SEGMENTS } from './sqlite-maintenance-store.js';
import { createSqliteStorage } from './sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-compaction-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const at = Date.parse('2024-06-01T10:00:00.000Z');
const words = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'heron'];

/** The segments of the file's full-text index, read by a second connection. */
function segments(path: string): number {
  const raw = new Database(path, { readonly: true });
  try {
    return raw.prepare('SELECT count(DISTINCT segid) FROM memories_fts_idx').pluck().get() as number;
  } finally {
    raw.close();
  }
}

describe('compacting the full-text index before consolidation searches it', () => {
  it('merges an index written a memory at a time into one segment, step by step, and searches find the same memories with the same scores', async () => {
    const path = join(folder, 'compaction.db');
    const storage = createSqliteStorage({ path });
    try {
      // One transaction a memory: FTS5 writes a segment each and merges them a few at a time.
      for (let index = 0; index < 300; index++) {
        const text = `${words[index % 8]} ${words[(index * 3) % 8]} note ${index}`;
        await storage.memories.insert([globalMemory(text)], { at, actor: null });
      }
      expect(segments(path)).toBeGreaterThan(TEXT_INDEX_SEGMENTS);
      const search = () => storage.memories.searchText({ terms: ['amber', 'delta', 'note'], owners: null, limit: 50 });
      const before = await search();

      let steps = 0;
      while (await storage.maintenance.compactTextIndex()) steps++;

      expect(steps).toBeGreaterThanOrEqual(1);
      expect(segments(path)).toBe(1);
      expect(await search()).toEqual(before);
      expect(await storage.maintenance.compactTextIndex()).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('leaves an index of a few segments alone', async () => {
    const path = join(folder, 'few.db');
    const storage = createSqliteStorage({ path });
    try {
      await storage.memories.insert([globalMemory('amber birch'), globalMemory('cedar delta')], { at, actor: null });
      const before = segments(path);
      expect(before).toBeLessThanOrEqual(TEXT_INDEX_SEGMENTS);
      expect(await storage.maintenance.compactTextIndex()).toBe(false);
      expect(segments(path)).toBe(before);
    } finally {
      await storage.close();
    }
  });
});
