import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../global-memory.fixture.js';
import type { NewMemory } from '../memory-store.js';
import { openSqliteDatabase, writeSqlite } from './sqlite-database.js';
import { createSqliteMemoryWordCounts } from './sqlite-memory-word-counts.js';
import { createSqliteMemoryWrites } from './sqlite-memory-writes.js';
import { createSqliteOwnerWords } from './sqlite-owner-words.js';
import { createSqliteStorage } from './sqlite-storage.js';
import { createSqliteVectorIndex } from './sqlite-vector-index.js';
import { wordCountDifferences } from './sqlite-word-counts.fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-word-counts-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const at = Date.parse('2024-06-15T12:00:00.000Z');
const context = { at, actor: 'test' };

/** The stems and length the full-text index's tokenizer gives a text (two columns, as the index has). */
function indexed(content: string, searchContext: string | null): { stems: string[]; tokens: number } {
  const database = new Database(':memory:');
  try {
    database.exec(`CREATE VIRTUAL TABLE words USING fts5(
        content, search_context, tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE VIRTUAL TABLE terms USING fts5vocab(words, 'instance');`);
    database.prepare('INSERT INTO words (content, search_context) VALUES (?, ?)').run(content, searchContext);
    const rows = database.prepare<[], { term: string }>('SELECT term FROM terms').all();
    return { stems: [...new Set(rows.map((row) => row.term))].sort(), tokens: rows.length };
  } finally {
    database.close();
  }
}

describe('a memory insert that counts its own words (migration 22)', () => {
  it('splits and stems a text as the full-text index does, for plain ASCII text and any other', () => {
    let state = 7;
    const random = () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
    const alphabet = 'aAbBeEiIoOsStTyYzZ019 -_\'.,;:!?()[]{}"/\\@#$%^&*+=<>|~`\t\n';
    const texts = [
      'Oz moved to Bergen in 2024; the stand-up is at 9:30.',
      "Oz's team ships e-mail drafts: running, runs, ran, runner's",
      'ies eed sses IES yyed nayyed happyyying: the edges of the stemmer',
      'caresses ponies ties caress cats feed agreed plastered motoring sing conflated troubled sized hopping',
      `${'x'.repeat(64)} ${'y'.repeat(65)} tail`,
      'Café Größe naïve résumé Ærøskøbing',
      'emoji 🎉 and 日本語 text',
      '!!! ... ---',
      '',
      ...Array.from({ length: 300 }, () =>
        Array.from(
          { length: 1 + Math.floor(random() * 60) },
          () => alphabet[Math.floor(random() * alphabet.length)],
        ).join(''),
      ),
    ];
    const counts = createSqliteMemoryWordCounts(new Database(':memory:'));
    const differing = texts.flatMap((text, index) => {
      const searchContext = index % 3 === 0 ? null : (texts[(index + 1) % texts.length] ?? null);
      const ours = counts.wordsOf(text, searchContext);
      const theirs = indexed(text, searchContext);
      const same =
        ours.tokens === theirs.tokens && JSON.stringify([...ours.stems].sort()) === JSON.stringify(theirs.stems);
      return same ? [] : [{ text, searchContext, ours, theirs }];
    });
    expect(differing).toEqual([]);
  });

  it('keeps the word counts equal to a recount after batches, a rolled-back batch and every other kind of write', async () => {
    const path = join(folder, 'writes.db');
    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      const personal = (content: string, userId: string, overrides: Partial<NewMemory> = {}) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId, ...overrides });
      const [kestrel, cafe, , , empty] = await storage.memories.insert(
        [
          personal('Ann edits kestrels, kestrel after kestrel', 'ann'),
          personal('Ann keeps a café kestrel', 'ann'),
          globalMemory('the kestrel of the dune', { searchContext: 'Bob: which bird?' }),
          globalMemory('日本語 and a heron'),
          globalMemory('!!!'),
        ],
        context,
      );
      await storage.memories.insert([personal('Bob edited the kestrel', 'bob')], context);
      expect(wordCountDifferences(raw)).toEqual([]);
      // A batch that fails at its last memory (a topic that does not exist) writes nothing, counts neither.
      const before = raw.prepare('SELECT owner, memories, tokens FROM memory_word_owners ORDER BY owner').all();
      await expect(
        storage.memories.insert(
          [
            personal('Cat counts herons twice', 'cat'),
            globalMemory('a heron in the rolled back batch'),
            globalMemory('in a missing topic', { scope: 'session', owner: 'session:nope', topicId: 'nope' }),
          ],
          context,
        ),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(raw.prepare('SELECT owner, memories, tokens FROM memory_word_owners ORDER BY owner').all()).toEqual(
        before,
      );
      expect(wordCountDifferences(raw)).toEqual([]);
      // Then edits, a forget, a restore and a purge, through their triggers.
      await storage.memories.update(kestrel?.id ?? 0, { content: 'Ann edits herons now' }, context);
      await storage.memories.update(empty?.id ?? 0, { content: 'no longer empty' }, context);
      await storage.memories.archive([cafe?.id ?? 0], context);
      await storage.memories.restore(cafe?.id ?? 0, null, context);
      expect(wordCountDifferences(raw)).toEqual([]);
      await storage.memories.purgeUser('ann');
      await storage.memories.insert([personal('Dee counts kestrels', 'dee')], context);
      expect(wordCountDifferences(raw)).toEqual([]);
      expect(raw.prepare('SELECT count(*) AS words FROM memory_words').get()).toMatchObject({
        words: expect.any(Number),
      });
    } finally {
      raw.close();
      await storage.close();
    }
  });

  it('counts an owner key in after its row was rolled back, deleted at zero memories or its number taken by another owner key', async () => {
    const path = join(folder, 'owner-numbers.db');
    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      const personal = (content: string, userId: string, overrides: Partial<NewMemory> = {}) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId, ...overrides });
      const counted = () =>
        raw.prepare('SELECT id, owner, memories, tokens FROM memory_word_owners ORDER BY owner').all();
      // Cat's row is made, then rolled back with the batch: the number the insert remembered holds nothing.
      await expect(
        storage.memories.insert(
          [
            personal('Cat counts herons', 'cat'),
            globalMemory('in a missing topic', { scope: 'session', owner: 'session:nope', topicId: 'nope' }),
          ],
          context,
        ),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await storage.memories.insert([personal('Cat counts herons', 'cat')], context);
      await storage.memories.insert([personal('Cat counts kestrels too', 'cat')], context);
      expect(wordCountDifferences(raw)).toEqual([]);
      expect(counted()).toMatchObject([{ owner: 'user:cat', memories: 2, tokens: 7 }]);
      // Cat's memories purged: the row goes at zero memories; Dee's row may take its number; Cat again.
      await storage.memories.purgeUser('cat');
      expect(counted()).toEqual([]);
      await storage.memories.insert([personal('Dee counts wrens', 'dee')], context);
      await storage.memories.insert([personal('Cat is back with herons', 'cat')], context);
      await storage.memories.insert([personal('Dee counts more wrens', 'dee')], context);
      expect(wordCountDifferences(raw)).toEqual([]);
      expect(counted()).toMatchObject([
        { owner: 'user:cat', memories: 1, tokens: 5 },
        { owner: 'user:dee', memories: 2, tokens: 7 },
      ]);
    } finally {
      raw.close();
      await storage.close();
    }
  });

  it("has a memory's words counted inside the transaction that inserts it, for a search in that transaction", () => {
    const database = openSqliteDatabase({ path: join(folder, 'in-transaction.db') });
    try {
      const writes = createSqliteMemoryWrites(database, createSqliteVectorIndex(database));
      const words = createSqliteOwnerWords(database);
      writes.insert(globalMemory('a kestrel over the dune'), context);
      writeSqlite(database, 'inserting', () => {
        writes.insert(globalMemory('kestrels and herons'), context);
        writes.insert(globalMemory('Ann: a heron, a heron'), context);
        expect(words.counts(['kestrel', 'heron', 'dune'], ['global'])).toEqual({
          memories: 3,
          tokens: 5 + 3 + 5,
          counts: [2, 2, 1],
        });
        expect(wordCountDifferences(database)).toEqual([]);
      });
    } finally {
      database.close();
    }
  });

  it('leaves the counts of an insert that gives no length to the trigger, as every write before migration 22', () => {
    const database = openSqliteDatabase({ path: join(folder, 'raw-insert.db') });
    try {
      database
        .prepare(`INSERT INTO memories (content, category, sector, scope, owner, source, importance, valid_from,
            created_at, updated_at)
          VALUES (?, 'fact', 'semantic', 'global', 'global', 'manual', 0.5, ${at}, ${at}, ${at})`)
        .run('an insert of another path: kestrels');
      expect(database.prepare('SELECT tokens FROM memories').pluck().get()).toBe(6);
      expect(wordCountDifferences(database)).toEqual([]);
    } finally {
      database.close();
    }
  });
});
