import type Database from 'better-sqlite3';
import { nameKey } from '../../core/name-key.js';
import type { User } from '../directory-store.js';

/** A user's display name with the key it reads as (`users.name_key`, ADR 40), written and looked up. */
export interface SqliteUserNames {
  /** Creates the user or sets their display name. */
  put(user: User, at: number): void;
  /** `DirectoryStore.hasNamesake`. */
  hasNamesake(userId: string, key: string, spellings: readonly string[]): boolean;
}

/**
 * The statements are chosen at first use: on a file of a schema before migration 29 (opened with `migrateTo`, in
 * tests of migrations) a name is written alone, which migration 29 keys when the file is opened again, and only ids
 * are looked up.
 */
export function createSqliteUserNames(database: Database.Database): SqliteUserNames {
  let statements:
    | { put: Database.Statement<[object]>; namesake: Database.Statement<[object], { found: 0 | 1 }> }
    | undefined;
  const prepare = () => {
    const keyed =
      database.prepare("SELECT 1 FROM pragma_table_info('users') WHERE name = 'name_key'").get() !== undefined;
    statements = {
      put: database.prepare(
        keyed
          ? `INSERT INTO users (id, display_name, name_key, created_at, updated_at) VALUES (@id, @name, @key, @at, @at)
            ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, name_key = excluded.name_key,
              updated_at = excluded.updated_at`
          : `INSERT INTO users (id, display_name, created_at, updated_at) VALUES (@id, @name, @at, @at)
            ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, updated_at = excluded.updated_at`,
      ),
      namesake: database.prepare(
        `SELECT ${keyed ? 'EXISTS (SELECT 1 FROM users WHERE name_key = @key AND id <> @userId)' : '0'}
          OR EXISTS (SELECT 1 FROM json_each(@spellings) AS spelling WHERE spelling.value <> @userId AND (
            EXISTS (SELECT 1 FROM users WHERE id = spelling.value)
            OR EXISTS (SELECT 1 FROM messages WHERE sender_id = spelling.value)
            OR EXISTS (SELECT 1 FROM members WHERE user_id = spelling.value)
            OR EXISTS (SELECT 1 FROM api_keys WHERE user_id = spelling.value))) AS found`,
      ),
    };
    return statements;
  };
  return {
    put(user, at) {
      const key = nameKey(user.displayName ?? user.id);
      (statements ?? prepare()).put.run({ id: user.id, name: user.displayName, key, at });
    },
    hasNamesake(userId, key, spellings) {
      const found = (statements ?? prepare()).namesake.get({ key, userId, spellings: JSON.stringify(spellings) });
      return found?.found === 1;
    },
  };
}
