import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './sqlite-database.js';
import { createSqliteOwnerWords } from './sqlite-owner-words.js';
import { createSqliteVisibleRanking } from './sqlite-visible-ranking.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');

describe('SQLite visible ranking', () => {
  it('searches again after its first search ran in a transaction that was rolled back', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('a kestrel over the field');
      insert.run('a kestrel, another kestrel');
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const search = () =>
        ranking.search({ rare: ['kestrel'], common: [], owners: ['global'], limit: 10, includeFaded: false });
      // A batch (extraction's, ADR 19) searches inside its transaction, then fails: rolled back.
      database.exec('BEGIN IMMEDIATE');
      const inside = search();
      database.exec('ROLLBACK');
      expect(inside.map((hit) => hit.id)).toEqual([2, 1]);
      expect(search()).toEqual(inside);
    } finally {
      database.close();
    }
  });
});
