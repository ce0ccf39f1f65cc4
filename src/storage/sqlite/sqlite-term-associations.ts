import type Database from 'better-sqlite3';
import type { AssociatedWord, TermAssociation, TermAssociationStore } from '../maintenance-store.js';
import { readSqlite, writeSqlite } from './sqlite-database.js';

interface AssociationRow {
  owner: string;
  stem: string;
  memories: number;
  words: string;
}

/**
 * Recall's stored word associations in SQLite (migration 24, ADR 26 session 8): one row per owner key and
 * stem, its associated words as a JSON array of `[word, stem, share]`. A row goes with its owner key's last
 * memory (a trigger on `memory_word_owners`), so a purged user's words do not stay behind.
 */
export function createSqliteTermAssociations(database: Database.Database): TermAssociationStore {
  // Prepared on first use: a store opened at an older schema (tests) has no such table.
  const prepare = () => ({
    // CROSS JOIN keeps the order: each (owner key, stem) pair looked up by primary key. Joined the other
    // way round, the planner read every row of an owner key (17 ms for the global one at 100,000 memories).
    read: database.prepare<{ owners: string; stems: string }, AssociationRow>(
      `SELECT a.owner, a.stem, a.memories, a.words FROM json_each(@owners) o CROSS JOIN json_each(@stems) s
      CROSS JOIN term_associations a WHERE a.owner = o.value AND a.stem = s.value`,
    ),
    stored: database
      .prepare<[string, string], number>('SELECT memories FROM term_associations WHERE owner = ? AND stem = ?')
      .pluck(),
    write: database.prepare<[string, string, number, string]>(
      `INSERT INTO term_associations (owner, stem, memories, words) VALUES (?, ?, ?, ?)
      ON CONFLICT (owner, stem) DO UPDATE SET memories = excluded.memories, words = excluded.words`,
    ),
  });
  let prepared: ReturnType<typeof prepare> | null = null;
  const statements = () => {
    prepared ??= prepare();
    return prepared;
  };
  return {
    async read(owners, stems) {
      if (owners.length === 0 || stems.length === 0) return [];
      return readSqlite('reading word associations', () =>
        statements()
          .read.all({ owners: JSON.stringify(owners), stems: JSON.stringify(stems) })
          .map(
            (row): TermAssociation => ({
              owner: row.owner,
              stem: row.stem,
              memories: row.memories,
              words: (JSON.parse(row.words) as Array<[string, string, number]>).map(
                ([word, stem, share]): AssociatedWord => ({ word, stem, share }),
              ),
            }),
          ),
      );
    },
    async storedCounts(owner, stems) {
      return readSqlite('reading word associations', () =>
        stems.map((stem) => statements().stored.get(owner, stem) ?? 0),
      );
    },
    async write(associations) {
      if (associations.length === 0) return;
      writeSqlite(
        database,
        'storing word associations',
        () => {
          for (const { owner, stem, memories, words } of associations) {
            statements().write.run(
              owner,
              stem,
              memories,
              JSON.stringify(words.map(({ word, stem: wordStem, share }) => [word, wordStem, share])),
            );
          }
        },
        { deferred: true },
      );
    },
  };
}
