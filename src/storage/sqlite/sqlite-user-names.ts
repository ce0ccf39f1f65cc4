import type Database from 'better-sqlite3';
import { nameKey } from '../../core/name-key.js';
import { isReservedId } from '../../core/reserved-ids.js';
import type { User } from '../directory-store.js';

/**
 * A user's display name and id with the keys they read as (`users.name_key`, `users.id_key`; ADR 40), written and
 * looked up. Every id a user is known by (a sender, a member, the user of a key) has a `users` row, so its key is
 * there to be found: `know` writes it with the row that names the id.
 */
export interface SqliteUserNames {
  /** Creates the user or sets their display name. */
  put(user: User, at: number): void;
  /** Creates a row without a name for each id that has none; mneme's own actors (ADR 38) are no users and get none. */
  know(ids: Iterable<string>, at: number): void;
  /** `DirectoryStore.hasNamesake`. */
  hasNamesake(userId: string, key: string): boolean;
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
      }
    | undefined;
  const prepare = () => {
    const keyed =
      database.prepare("SELECT 1 FROM pragma_table_info('users') WHERE name = 'id_key'").get() !== undefined;
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
        };
    return statements;
  };
  return {
    put(user, at) {
      const key = nameKey(user.displayName ?? user.id);
      (statements ?? prepare()).put.run({ id: user.id, name: user.displayName, key, idKey: nameKey(user.id), at });
    },
    know(ids, at) {
      const { know } = statements ?? prepare();
      for (const id of new Set(ids)) {
        if (!isReservedId(id)) know.run({ id, idKey: nameKey(id), at });
      }
    },
    hasNamesake(userId, key) {
      return (statements ?? prepare()).namesake?.get({ key, userId })?.found === 1;
    },
  };
}
