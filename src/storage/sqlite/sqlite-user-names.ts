import type Database from 'better-sqlite3';
import { nameKey } from '../../core/name-key.js';
import { isReservedId } from '../../core/reserved-ids.js';
import { plainName, sameNameInAnotherCase, withLeftName } from '../../core/speaker-label.js';
import type { User } from '../directory-store.js';
import type { MemoryRow } from './sqlite-memory-rows.js';
import { createSqliteSpeakerLabels } from './sqlite-speaker-labels.js';

/**
 * A user's display name and id with the keys they read as (`users.name_key`, `users.id_key`; ADR 40), written and
 * looked up. Every id a user is known by (a sender, a member, the user of a key) has a `users` row, so its key is
 * there to be found: `know` writes it with the row that names the id. A user made known or named this way may be
 * another's namesake: the memories that call the other by the name they share are labelled in the same transaction
 * (ADR 44), so both run inside the caller's transaction.
 */
export interface SqliteUserNames {
  /**
   * Creates the user or sets their display name; labels the memories of the users the name (or a new user's id)
   * now reads like, and those that call the user by a name they left (ADR 44).
   */
  put(user: User, at: number): void;
  /**
   * Creates a row without a name for each id that has none, and labels the memories of the users whose name a new id
   * reads like (ADR 44); mneme's own actors (ADR 38) are no users and get none.
   */
  know(ids: Iterable<string>, at: number): void;
  /** `DirectoryStore.hasNamesake`. */
  hasNamesake(userId: string, key: string): boolean;
  /** A memory just written, with its speakers labelled where a namesake arrived since its text was made (ADR 44). */
  labelWritten(row: MemoryRow, at: number): MemoryRow;
}

/**
 * The statements are chosen at first use: on a file of a schema before migration 30 (opened with `migrateTo`, in
 * tests of migrations) rows are written without keys, which migration 30 computes when the file is opened again,
 * and no namesake is found.
 */
export function createSqliteUserNames(database: Database.Database): SqliteUserNames {
  let statements:
    | {
        put: Database.Statement<[object]>;
        know: Database.Statement<[object]>;
        namesake: Database.Statement<[object], { found: 0 | 1 }> | null;
        named: Database.Statement<[string], { display_name: string | null; name_key: string | null }> | null;
        leave: Database.Statement<[string, number, string]> | null;
        leftBefore: Database.Statement<[string], { left_name: string | null; left_at: number | null }> | null;
      }
    | undefined;
  const prepare = () => {
    const has = (column: string) =>
      database.prepare("SELECT 1 FROM pragma_table_info('users') WHERE name = ?").get(column) !== undefined;
    const keyed = has('id_key');
    // The names a user left, with when (migration 33; the last 8 since attack 31d): the insert of a memory made
    // before labels them (ADR 44, session 31).
    const leaving = has('left_name');
    const leave = leaving
      ? database.prepare<[string, number, string]>('UPDATE users SET left_name = ?, left_at = ? WHERE id = ?')
      : null;
    const leftBefore = leaving
      ? database.prepare<[string], { left_name: string | null; left_at: number | null }>(
          'SELECT left_name, left_at FROM users WHERE id = ?',
        )
      : null;
    statements = keyed
      ? {
          put: database.prepare(
            `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at)
            VALUES (@id, @name, @key, @idKey, @at, @at)
            ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, name_key = excluded.name_key,
              updated_at = excluded.updated_at`,
          ),
          know: database.prepare(
            `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at)
            VALUES (@id, NULL, @idKey, @idKey, @at, @at) ON CONFLICT (id) DO NOTHING`,
          ),
          // Two indexed lookups: a name that reads like another user's name, or like another user's id.
          namesake: database.prepare(
            `SELECT EXISTS (SELECT 1 FROM users WHERE name_key = @key AND id <> @userId)
              OR EXISTS (SELECT 1 FROM users WHERE id_key = @key AND id <> @userId) AS found`,
          ),
          named: database.prepare('SELECT display_name, name_key FROM users WHERE id = ?'),
          leave,
          leftBefore,
        }
      : {
          put: database.prepare(
            `INSERT INTO users (id, display_name, created_at, updated_at) VALUES (@id, @name, @at, @at)
            ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, updated_at = excluded.updated_at`,
          ),
          know: database.prepare(
            `INSERT INTO users (id, display_name, created_at, updated_at) VALUES (@id, NULL, @at, @at)
            ON CONFLICT (id) DO NOTHING`,
          ),
          namesake: null,
          named: null,
          leave: null,
          leftBefore: null,
        };
    return statements;
  };
  const labels = createSqliteSpeakerLabels(database);
  return {
    put(user, at) {
      const { put, named, leave, leftBefore } = statements ?? prepare();
      const key = nameKey(user.displayName ?? user.id);
      const idKey = nameKey(user.id);
      const before = named?.get(user.id);
      put.run({ id: user.id, name: user.displayName, key, idKey, at });
      if (named === null) return;
      // A new user reads as their name and their id; a renamed one as their new name.
      if (before === undefined) labels.labelNamesakes(user.id, [key, idKey], at);
      else if (before.name_key !== key) labels.labelNamesakes(user.id, [key], at);
      // A name the user leaves is free for anyone to take: the memories that call them by it are labelled now. The
      // same name in another case is not left (ADR 44, session 31).
      const left = before?.display_name ?? null;
      const kept = left !== null && user.displayName !== null && sameNameInAnotherCase(left, user.displayName);
      const plain = kept ? null : plainName(left, user.id);
      if (plain !== null && nameKey(plain) !== idKey) {
        labels.label(user.id, plain, at, true);
        const before = leftBefore?.get(user.id);
        leave?.run(withLeftName(before?.left_name ?? null, before?.left_at ?? null, plain, at), at, user.id);
      }
    },
    know(ids, at) {
      const { know, named } = statements ?? prepare();
      for (const id of new Set(ids)) {
        if (isReservedId(id)) continue;
        const idKey = nameKey(id);
        if (know.run({ id, idKey, at }).changes > 0 && named !== null) labels.labelNamesakes(id, [idKey], at);
      }
    },
    labelWritten(row, at) {
      return (statements ?? prepare()).named === null ? row : labels.labelWritten(row, at);
    },
    hasNamesake(userId, key) {
      return (statements ?? prepare()).namesake?.get({ key, userId })?.found === 1;
    },
  };
}
