import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../global-memory.fixture.js';
import { createSqliteStorage } from './sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-citations-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const context = { at: Date.parse('2024-06-15T12:00:00.000Z'), actor: 'test' };

/** The citation rows, and what a recount from every memory's `source_message_ids` gives. */
function citations(raw: Database.Database) {
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
}

describe('the messages a memory cites (memory_source_messages, written by its trigger)', () => {
  it('keeps the citation rows equal to a recount for inserts with and without words, a rolled-back batch and edits', async () => {
    const path = join(folder, 'citations.db');
    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      // With words (counted by the insert) and without a word (counted by the trigger), cited twice.
      const [kestrel, empty] = await storage.memories.insert(
        [
          globalMemory('a kestrel over the dune', { sourceMessageIds: [3, 5, 3] }),
          globalMemory('!!!', { sourceMessageIds: [5] }),
          globalMemory('a heron by the pond', { sourceMessageIds: [] }),
        ],
        context,
      );
      const afterInsert = citations(raw);
      expect(afterInsert.rows).toEqual(afterInsert.recount);
      expect(afterInsert.rows).toHaveLength(3);
      // A batch failing at its last memory writes none of its rows.
      await expect(
        storage.memories.insert(
          [
            globalMemory('a heron in the rolled back batch', { sourceMessageIds: [7] }),
            globalMemory('in a missing topic', { scope: 'session', owner: 'session:nope', topicId: 'nope' }),
          ],
          context,
        ),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(citations(raw).rows).toEqual(afterInsert.rows);
      // Edits of the list go through the update trigger, as before.
      await storage.memories.update(kestrel?.id ?? 0, { sourceMessageIds: [3, 9] }, context);
      await storage.memories.update(empty?.id ?? 0, { sourceMessageIds: [] }, context);
      const afterEdits = citations(raw);
      expect(afterEdits.rows).toEqual(afterEdits.recount);
      expect(afterEdits.rows).toEqual([
        { message_id: 3, memory_id: kestrel?.id },
        { message_id: 9, memory_id: kestrel?.id },
      ]);
    } finally {
      raw.close();
      await storage.close();
    }
  });
});
