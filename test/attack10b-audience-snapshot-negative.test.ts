import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';
import { createSqliteVisibleRanking } from '../src/storage/sqlite/sqlite-visible-ranking.js';

/**
 * wt-attack10b: the audience snapshot packs an entry as `id * 2^22 + tokens * 2 + faded` and checks only the
 * highest length; a negative length (a row written by hand, a damaged file: no path of mneme writes one) borrows
 * from the id, so the entry decoded as the memory below it, searchable and active (seen failing: ben's forgotten
 * memory 2 found by ben); a negative shortest length now keeps the SQL join.
 */
const folder = mkdtempSync('/tmp/wt-attack10b-negative-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const at = Date.parse('2024-06-15T12:00:00.000Z');

describe('attack10b: a negative length under the audience snapshot', () => {
  it('does not bring back the forgotten memory below it', () => {
    const database = openSqliteDatabase({ path: join(folder, 'negative.db') });
    try {
      const insert = database.prepare<[string, string, string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'personal', ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('ana heard a plover at dawn', 'ana', 'user:ana');
      const forgotten = Number(insert.run('ben forgot the plover', 'ben', 'user:ben').lastInsertRowid);
      const above = Number(insert.run('ana saw a plover', 'ana', 'user:ana').lastInsertRowid);
      insert.run('ana counted plovers on the shore', 'ana', 'user:ana');
      database.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(forgotten);
      database.prepare('UPDATE memories SET tokens = -1 WHERE id = ?').run(above);
      const held = createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter: 0 });
      const join_ = createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter: -1 });
      for (const owners of [['user:ben'], ['user:ana']]) {
        const search = { rare: ['plover'], common: [], owners, limit: 10, includeFaded: false };
        const hits = held.search(search).map((hit) => hit.id);
        expect(hits, owners[0]).not.toContain(forgotten);
        expect(hits).toEqual(join_.search(search).map((hit) => hit.id));
      }
    } finally {
      database.close();
    }
  });
});
