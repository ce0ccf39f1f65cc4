import { describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';
import { createSqliteVisibleRanking } from '../src/storage/sqlite/sqlite-visible-ranking.js';

// Attack (session 6, wt-attack6) on 30338c1: a term of one word now reads its frequency from the index's
// `instance` vocabulary; a term the ranking cannot stem to one word still goes through `MATCH` and `bm25()`.
// A term with a NUL is sent down the `MATCH` path (`ftsQuery` drops the NUL), so the two paths can be compared
// on the same term with the same counts: they must give the same hits and the same scores.
const at = Date.parse('2024-06-15T12:00:00.000Z');

const contents: Array<[content: string, context: string | null, owner: string, state?: 'faded' | 'archived']> = [
  ['A kestrel hovers; kestrels hover over the field, kestrel after kestrel', null, 'user:ann'],
  ['The café near the station serves naïve coffee', 'CAFÉ owner said: not and or near', 'user:ann'],
  ['Straße und Über: the street over the bridge', null, 'user:bob'],
  ['near near near NEAR and AND not NOT or OR', null, 'user:bob'],
  ['the ﬁsh market opens at six; fish fish', 'kestrel', 'global'],
  ['İstanbul ıstanbul istanbul', null, 'user:ann'],
  [`${'x'.repeat(70)} ${'x'.repeat(70)} supercalifragilistic`, null, 'user:ann'],
  ['2024 2024 release 42 kestrel', null, 'user:ann', 'faded'],
  ['kestrel archived away', null, 'user:ann', 'archived'],
  ['emoji 🦅 kestrel 🦅 e-mail e-mail email', "don’t don't", 'user:ann'],
];

const terms = [
  'kestrel',
  'kestrels',
  'Kestrel',
  'KESTREL',
  'café',
  'CAFÉ',
  'cafe',
  'naïve',
  'near',
  'NEAR',
  'and',
  'not',
  'or',
  '"kestrel"',
  'kestrel*',
  '*',
  '^kestrel',
  'kestrel:',
  'content:kestrel',
  'straße',
  'über',
  'fish',
  'ﬁsh',
  'istanbul',
  'İstanbul',
  'x'.repeat(70),
  'supercalifragilistic',
  '2024',
  '42',
  'email',
  'e-mail',
  'don’t',
  '🦅',
];

describe('attack6: a word from the instance vocabulary, or from MATCH and bm25()', () => {
  it('ranks every odd term the same both ways, after updates and deletes left markers in the index', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string, string | null, string, number | null, number | null]>(
        `INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at, archived_at, faded_at)
        VALUES (?, ?, 'fact', 'semantic', 'global', NULL, ?, 'manual', 0.5, ${at}, ${at}, ${at}, ?, ?)`,
      );
      for (const [content, context, owner, state] of contents) {
        insert.run(content, context, owner, state ? at : null, state === 'faded' ? at : null);
      }
      // Delete markers and rewritten rows in the index (no optimize): what the instance vocabulary must skip.
      const gone = insert.run('kestrel kestrel kestrel to be deleted', null, 'user:ann', null, null).lastInsertRowid;
      database.prepare('DELETE FROM memories WHERE id = ?').run(gone);
      database.prepare("UPDATE memories SET content = 'a kestrel, rewritten; kestrel' WHERE id = 8").run();
      const words = createSqliteOwnerWords(database);
      const ranking = createSqliteVisibleRanking(database, words);
      const owners = ['user:ann', 'user:bob', 'global'];
      const differences: unknown[] = [];
      for (const includeFaded of [false, true]) {
        for (const term of terms) {
          const visible = words.counts([term], owners);
          const search = (rare: string) =>
            ranking.search({ rare: [rare], common: [], owners, limit: 50, includeFaded, visible });
          const byWord = search(term);
          const byMatch = search(`${term}\u0000`);
          const rounded = (hits: Array<{ id: number; score: number }>) =>
            hits.map((hit) => ({ id: hit.id, score: Math.round(hit.score * 1e9) / 1e9 }));
          if (JSON.stringify(rounded(byWord)) !== JSON.stringify(rounded(byMatch))) {
            differences.push({ term, includeFaded, byWord, byMatch });
          }
        }
      }
      expect(differences).toEqual([]);
      // Both paths ran: the word's occurrences came from the instance vocabulary, and found something.
      const instances = database
        .prepare<[], number>("SELECT count(*) FROM temp.memories_fts_instances WHERE term = 'kestrel'")
        .pluck()
        .get();
      expect(instances).toBeGreaterThan(5);
      expect(ranking.search({ rare: ['kestrel'], common: [], owners, limit: 50, includeFaded: false })).toHaveLength(3);
    } finally {
      database.close();
    }
  });
});

describe("attack6: another owner's memories and a viewer's full-text scores", () => {
  it("gives a viewer the same scores whatever another owner's memories hold, both paths (a phrase's bm25() included)", () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string, string]>(
        `INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, ?, 'manual', 0.5, ${at}, ${at}, ${at})`,
      );
      insert.run('send the e-mail about the kestrel', 'user:ann');
      insert.run('e-mail e-mail e-mail: three kestrel kestrel kestrel notes', 'user:ann');
      insert.run('a long note that mentions the e-mail once among many other words of no interest', 'user:ann');
      const words = createSqliteOwnerWords(database);
      const ranking = createSqliteVisibleRanking(database, words);
      const scores = () =>
        ['e-mail', 'kestrel', 'kestrel\u0000'].map((term) =>
          ranking.search({ rare: [term], common: [], owners: ['user:ann'], limit: 10, includeFaded: false }),
        );
      const alone = scores();
      // Bob's memories make both words common in the whole index (bm25()'s weight clamps to 1e-6) and
      // change its average length.
      for (let index = 0; index < 40; index++) {
        insert.run(`${'e-mail kestrel '.repeat(1 + (index % 7))} bob's word ${'filler '.repeat(index)}`, 'user:bob');
      }
      expect(scores()).toEqual(alone);
      expect(alone[0]).toHaveLength(3);
    } finally {
      database.close();
    }
  });
});
