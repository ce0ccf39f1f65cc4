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

  it('keeps the channel of each cited message beside the citation, filled by migration 27, and checks a room memory citing another channel or one not yet known', async () => {
    const path = join(folder, 'channels.db');
    const message = { senderId: 'ann', role: 'user' as const, topicId: null, replyTo: null, createdAt: context.at };
    const room = (content: string, overrides: Parameters<typeof globalMemory>[1] = {}) =>
      globalMemory(content, { scope: 'room', owner: 'room:x', channelId: 'x', ...overrides });
    // Written by the release before migration 27: a memory of room x citing its own channel, one citing channel y
    // (moved there by an audience change), one built on memories.
    const old = createSqliteStorage({ path, migrateTo: 26 });
    const [inX, inY] = await old.messages.append([
      { ...message, channelId: 'x', content: 'the vault code is 4471' },
      { ...message, channelId: 'y', content: 'the walrus vault is downstairs' },
    ]);
    const [own, cross] = await old.memories.insert(
      [
        room('the vault code is 4471', { sourceMessageIds: [inX?.id ?? 0] }),
        room('the walrus vault is downstairs', { sourceMessageIds: [inY?.id ?? 0] }),
      ],
      context,
    );
    const [built] = await old.memories.insert(
      [room('vaults are kept below ground', { sourceIds: [own?.id ?? 0, cross?.id ?? 0] })],
      context,
    );
    await old.close();

    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      const channels = () =>
        raw.prepare('SELECT message_id, memory_id, channel_id FROM memory_source_messages ORDER BY memory_id').all();
      expect(channels()).toEqual([
        { message_id: inX?.id, memory_id: own?.id, channel_id: 'x' },
        { message_id: inY?.id, memory_id: cross?.id, channel_id: 'y' },
      ]);
      const checked = async () =>
        (await storage.memories.citedChannels({ owner: 'room:x' })).map(({ memory, channelIds }) => [
          memory.id,
          channelIds,
        ]);
      expect(await checked()).toEqual([
        [cross?.id, ['y']],
        [built?.id, ['x', 'y']],
      ]);

      // A memory citing a message that is not there yet (an import writing memories first): its channel is not
      // known when the memory is written, and the room check looks at it.
      const next = (inY?.id ?? 0) + 1;
      const [early] = await storage.memories.insert(
        [room('the vault opens at nine', { sourceMessageIds: [next] })],
        context,
      );
      const [later] = await storage.messages.append([{ ...message, channelId: 'y', content: 'it opens at nine' }]);
      expect(later?.id).toBe(next);
      const [fresh] = await storage.memories.insert(
        [room('the vault code changed', { sourceMessageIds: [inX?.id ?? 0, next] })],
        context,
      );
      expect(channels().slice(2)).toEqual([
        { message_id: next, memory_id: early?.id, channel_id: null },
        { message_id: inX?.id, memory_id: fresh?.id, channel_id: 'x' },
        { message_id: next, memory_id: fresh?.id, channel_id: 'y' },
      ]);
      expect(await checked()).toEqual([
        [cross?.id, ['y']],
        [built?.id, ['x', 'y']],
        [early?.id, ['y']],
        [fresh?.id, ['x', 'y']],
      ]);
    } finally {
      raw.close();
      await storage.close();
    }
  });
});
