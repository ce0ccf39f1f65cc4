import type Database from 'better-sqlite3';

/**
 * The record of the memories whose rows recall holds in memory changed (migration 25, ADR 27): the triggers on
 * `memories` add an entry for each change of a memory's id, owner, state or length, the vector lists one for each
 * list row they write (null: any may have changed). Every connection to the file writes it in the writing
 * transaction, so a connection that finds another's commit (`PRAGMA data_version` moved) asks which memories it
 * changed instead of reading its copies whole again.
 */
export interface SqliteRecallChanges {
  /**
   * The number of the newest entry (0: none yet; null: the file has no record, a schema before migration 25). Read it
   * in the transaction whose state a copy holds.
   */
  latest(): number | null;
  /** Records, in the caller's write transaction and after the write, that memory `memoryId` changed (null: any). */
  record(memoryId: number | null): void;
  /**
   * The memories changed by the entries after `after`, at most `limit` entries, and the newest entry's number; null
   * when they cannot be told: an entry that says any may have changed, more than `limit` entries, entries after
   * `after` no longer kept, or the triggers that record them gone (a schema change by hand). Read it in the transaction of the search that uses the answer.
   */
  since(after: number, limit: number): { ids: number[]; latest: number } | null;
}

/** Migration 25's triggers that record the memories' changes: without all of them the record cannot be trusted. */
const TRIGGERS = ['recall_changes_memory_insert', 'recall_changes_memory_delete', 'recall_changes_memory_update'];

export function createSqliteRecallChanges(database: Database.Database): SqliteRecallChanges {
  let statements: ReturnType<typeof prepare> | null = null;
  function prepare() {
    return {
      latest: database.prepare<[], number | null>('SELECT max(seq) FROM recall_changes').pluck(),
      record: database.prepare<[number | null]>('INSERT INTO recall_changes (memory_id) VALUES (?)'),
      since: database
        .prepare<[number, number], [number, number | null]>(
          'SELECT seq, memory_id FROM recall_changes WHERE seq > ? ORDER BY seq LIMIT ?',
        )
        .raw(),
      triggers: database
        .prepare<[], number>(
          `SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (${TRIGGERS.map((name) => `'${name}'`).join(', ')})`,
        )
        .pluck(),
    };
  }
  /** The statements; null while the file has no record (a connection opened before its migration, tests). */
  const sql = () => {
    try {
      statements ??= prepare();
    } catch {
      return null;
    }
    return statements;
  };
  return {
    latest() {
      const statement = sql()?.latest;
      return statement ? (statement.get() ?? 0) : null;
    },
    record(memoryId) {
      sql()?.record.run(memoryId);
    },
    since(after, limit) {
      const statements = sql();
      if (!statements || statements.triggers.get() !== TRIGGERS.length) return null;
      // A whole number: SQLite refuses any other LIMIT, and a share of a copy's size is seldom one (attack18c).
      const most = Math.floor(limit);
      const rows = statements.since.all(after, most + 1);
      if (rows.length > most) return null;
      // Numbers follow each other without a gap: a first entry past the next one means those between were pruned.
      if (rows.length > 0 && rows[0]?.[0] !== after + 1) return null;
      const ids = new Set<number>();
      for (const [, memoryId] of rows) {
        if (memoryId === null) return null;
        ids.add(memoryId);
      }
      return { ids: [...ids], latest: rows.at(-1)?.[0] ?? after };
    },
  };
}
