import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './sqlite-database.js';
import { createSqliteOwnerWords } from './sqlite-owner-words.js';

const at = Date.parse('2026-01-01T00:00:00Z');

describe('the owner word counts remembered until a write (found by an attack, 2026-12-01)', () => {
  it('counts again after a transaction that wrote, read the counts and was rolled back', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('a kestrel over the field');
      const words = createSqliteOwnerWords(database);
      expect(words.counts(['heron'], ['global'])).toEqual({ memories: 1, tokens: 5, counts: [0] });
      // A batch (extraction's, ADR 19) writes, searches inside its transaction, then fails: rolled back.
      database.exec('BEGIN IMMEDIATE');
      insert.run('a heron by the pond');
      expect(words.counts(['heron'], ['global']).counts).toEqual([1]);
      database.exec('ROLLBACK');
      // Nothing holds "heron" now, and the store has one memory.
      expect(database.prepare("SELECT count(*) AS n FROM memories WHERE content LIKE '%heron%'").get()).toEqual({
        n: 0,
      });
      expect(words.counts(['heron'], ['global'])).toEqual({ memories: 1, tokens: 5, counts: [0] });
    } finally {
      database.close();
    }
  });
});
