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

describe("the counts a search is given from its caller's count (ADR 19, session 10)", () => {
  it('answers the counts just read for some of the same terms and owners, once, and nothing after a write', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string, string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('a kestrel over the field', 'global');
      insert.run('a kestrel and a heron', 'global');
      insert.run('a heron in the room', 'room:r1');
      const words = createSqliteOwnerWords(database);
      const owners = ['global', 'room:r1'];
      database.exec('BEGIN IMMEDIATE');
      const counted = words.counts(['kestrel', 'heron', 'field'], owners);
      expect(counted).toEqual({ memories: 3, tokens: 15, counts: [2, 2, 1] });
      // Some of the terms, in another order: the same numbers as reading them again.
      expect(words.countedBefore(['heron', 'kestrel'], owners)).toEqual(words.counts(['heron', 'kestrel'], owners));
      // Taken once.
      expect(words.countedBefore(['heron', 'kestrel'], owners)).toEqual({ memories: 3, tokens: 15, counts: [2, 2] });
      expect(words.countedBefore(['heron', 'kestrel'], owners)).toBeNull();
      // Another owner list, or a term the last count did not read: none.
      words.counts(['kestrel', 'heron'], owners);
      expect(words.countedBefore(['heron'], ['global'])).toBeNull();
      words.counts(['kestrel', 'heron'], owners);
      expect(words.countedBefore(['heron', 'field'], owners)).toBeNull();
      // A memory written since the count: none, and the search reads the counts again.
      words.counts(['kestrel', 'heron'], owners);
      insert.run('a heron again', 'global');
      expect(words.countedBefore(['heron'], owners)).toBeNull();
      expect(words.counts(['heron'], owners).counts).toEqual([3]);
      // Counted after a write in the transaction, then rolled back (which moves neither mark): none outside it
      // (attack 10).
      words.counts(['kestrel', 'heron'], owners);
      database.exec('ROLLBACK');
      expect(words.countedBefore(['kestrel', 'heron'], owners)).toBeNull();
    } finally {
      database.close();
    }
  });
});
