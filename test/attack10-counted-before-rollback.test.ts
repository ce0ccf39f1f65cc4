import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';

// Attack (session 10, wt-attack10): `countedBefore` keeps the counts of the last `counts` call inside a transaction
// too, and tells them still good while `total_changes()` and `data_version` have not moved. A ROLLBACK moves
// neither: the counts of a rolled-back write are then given to the next search with `postingsAtMost` that was
// not preceded by its own count (session 9's attack found the same in the `last` cache; its fix keeps only counts
// read outside a transaction). Latent: extraction, the only caller, always counts just before its search.
const at = Date.parse('2026-01-01T00:00:00Z');

describe('attack10: the counts given to a search after a rolled-back transaction', () => {
  it('are not the counts read inside the transaction the rollback undid', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('a kestrel over the field');
      const words = createSqliteOwnerWords(database);
      database.exec('BEGIN IMMEDIATE');
      insert.run('a heron and a kestrel by the pond');
      expect(words.counts(['kestrel', 'heron'], ['global']).counts).toEqual([2, 1]);
      database.exec('ROLLBACK');
      const given = words.countedBefore(['kestrel', 'heron'], ['global']);
      expect(given === null ? null : given.counts).not.toEqual([2, 1]);
    } finally {
      database.close();
    }
  });
});
