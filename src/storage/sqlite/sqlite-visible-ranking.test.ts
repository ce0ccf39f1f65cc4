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

  it('keeps the best of many found memories as a full sort by score then id would, ties to the lower id', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      // Memories of three lengths and three frequencies of the word, many alike (equal scores).
      const shapes = ['a kestrel', 'a kestrel over the long field', 'kestrel kestrel kestrel'];
      for (let index = 0; index < 120; index++) insert.run(`${shapes[(index * 7) % 3]} ${index % 2 ? 'dune' : ''}`);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const search = (limit: number) =>
        ranking.search({ rare: ['kestrel', 'dune'], common: [], owners: ['global'], limit, includeFaded: false });
      const all = search(1000);
      expect(all).toHaveLength(120);
      const sorted = [...all].sort((left, right) => right.score - left.score || left.id - right.id);
      expect(all).toEqual(sorted);
      for (const limit of [0, 1, 5, 7, 40, 119, 120]) expect(search(limit)).toEqual(sorted.slice(0, limit));
      expect(new Set(all.map((hit) => hit.score)).size).toBeLessThan(10);
    } finally {
      database.close();
    }
  });

  it('ranks a memory whose id or length does not fit a packed word row (id 2^32 or more, length 2^21 or more) by BM25 all the same', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[number | null, string]>(`INSERT INTO memories
          (id, content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, ?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run(null, 'a kestrel over the field');
      insert.run(null, 'kestrel kestrel');
      for (let index = 0; index < 4; index++) insert.run(null, 'a wren in the hedge');
      insert.run(2 ** 32 + 5, 'one kestrel and a small wren');
      // A length past 2^21 tokens (the column as a copy could hold it; content is at most 10,000 characters).
      database.prepare('UPDATE memories SET tokens = ? WHERE id = 2').run(2 ** 21 + 3);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const hits = ranking.search({
        rare: ['kestrel'],
        common: [],
        owners: ['global'],
        limit: 10,
        includeFaded: false,
      });
      // BM25 over the owner's 7 memories of 33 tokens (the word counts, which the UPDATE left alone).
      const average = 33 / 7;
      const idf = Math.log((7 - 3 + 0.5) / (3 + 0.5));
      const bm25 = (times: number, length: number) =>
        (idf * (times * 2.2)) / (times + 1.2 * (1 - 0.75 + (0.75 * length) / average));
      expect(hits.map((hit) => hit.id)).toEqual([1, 2 ** 32 + 5, 2]);
      expect(hits.map((hit) => hit.score)).toEqual([bm25(1, 5), bm25(1, 6), bm25(2, 2 ** 21 + 3)]);
    } finally {
      database.close();
    }
  });

  it('finds the same memories in the same order seeking each occurrence by id alone (seekById), and none of an owner not asked', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string, string, string | null, string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
      const owners = [
        ['personal', 'ana', 'user:ana'],
        ['personal', 'ben', 'user:ben'],
        ['room', null, 'room:deck'],
        ['global', null, 'global'],
      ] as const;
      const texts = ['a kestrel', 'kestrel and wren', 'wren wren kestrel over the dune', 'a dune', 'the long dune'];
      for (let index = 0; index < 80; index++) {
        const [scope, user, owner] = owners[(index * 3) % owners.length] as (typeof owners)[number];
        insert.run(`${texts[index % texts.length]} ${index % 7 === 0 ? 'kestrel' : ''}`, scope, user, owner);
      }
      insert.run('a kestrel ben keeps', 'personal', 'ben', 'user:ben');
      // Archived, faded (archived and faded: ADR 9) and active memories of every owner.
      database.exec(`UPDATE memories SET archived_at = ${at} WHERE id % 5 = 0;
        UPDATE memories SET archived_at = ${at}, faded_at = ${at} WHERE id % 11 = 0`);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const asked = [
        ['user:ana', 'room:deck', 'global'],
        ['user:ben', 'room:deck', 'global'],
        ['user:ana'],
        ['global'],
      ];
      for (const ownersAsked of asked) {
        for (const includeFaded of [false, true]) {
          for (const rare of [['kestrel'], ['kestrel', 'wren'], ['dune', 'wren', 'kestrel']]) {
            const search = (seekById: boolean) =>
              ranking.search({ rare, common: [], owners: ownersAsked, limit: 200, includeFaded, seekById });
            const bySeek = search(true);
            expect(bySeek).toEqual(search(false));
            expect(bySeek.length).toBeGreaterThan(0);
            const found = database
              .prepare<[string], { owner: string; archived: number | null; faded: number | null }>(
                `SELECT owner, archived_at AS archived, faded_at AS faded FROM memories
                  WHERE id IN (SELECT value FROM json_each(?))`,
              )
              .all(JSON.stringify(bySeek.map((hit) => hit.id)));
            for (const row of found) {
              expect(ownersAsked).toContain(row.owner);
              expect(row.archived === null || (includeFaded && row.faded !== null)).toBe(true);
            }
          }
        }
      }
    } finally {
      database.close();
    }
  });
});
