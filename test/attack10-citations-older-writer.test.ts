import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';

// Attack (session 10, wt-attack10): migration 24 lets the citations trigger (`memory_source_messages_insert`) run
// only for an insert without a length (tokens 0) and has the store's insert write the rows itself. A process of
// the release before (schema 23) that still has the file open when a newer process migrates it to 24 inserts
// rows WITH a length (it has done so since migration 22) and leaves the citations to the trigger: its memories
// get no citation rows. `citing()` (extraction's "a memory already citing the message is left alone, so a re-run
// writes nothing twice", the inspector's memories of a message) then misses them. A store opened with
// `migrateTo: 23` writes exactly as that release did (checked against the build of 7e33298: same rows).
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack10-citations-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const context = { at: Date.parse('2024-06-15T12:00:00.000Z'), actor: 'test' };

function citations(path: string) {
  const raw = new Database(path);
  try {
    const rows = raw
      .prepare('SELECT message_id, memory_id FROM memory_source_messages ORDER BY message_id, memory_id')
      .all();
    const recount = raw
      .prepare(
        `SELECT DISTINCT source.value AS message_id, memories.id AS memory_id
        FROM memories, json_each(memories.source_message_ids) AS source WHERE source.type = 'integer'
        ORDER BY message_id, memory_id`,
      )
      .all();
    return { rows, recount };
  } finally {
    raw.close();
  }
}

describe('attack10: the citation rows of a memory written by a process of the release before migration 24', () => {
  it('are written for a memory the older process inserts after a newer one migrated the file it has open', async () => {
    const path = join(folder, 'older-writer.db');
    const older = createSqliteStorage({ path, migrateTo: 23 });
    let newer: ReturnType<typeof createSqliteStorage> | null = null;
    try {
      const [before] = await older.memories.insert(
        [globalMemory('a kestrel over the dune', { sourceMessageIds: [1] })],
        context,
      );
      newer = createSqliteStorage({ path });
      const [after] = await older.memories.insert(
        [globalMemory('a heron written by the older process', { sourceMessageIds: [2] })],
        context,
      );
      const [own] = await newer.memories.insert(
        [globalMemory('an osprey written by the newer process', { sourceMessageIds: [3] })],
        context,
      );
      const stored = citations(path);
      expect(stored.rows).toEqual(stored.recount);
      for (const [message, memory] of [
        [1, before],
        [2, after],
        [3, own],
      ] as const) {
        expect((await newer.extraction.citing(message, ['global'])).map((cited) => cited.id)).toEqual([memory?.id]);
      }
    } finally {
      await older.close();
      await newer?.close();
    }
  });
});
