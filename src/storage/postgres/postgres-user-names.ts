import { nameKey } from '../../core/name-key.js';
import type { User } from '../directory-store.js';
import type { PostgresQueryable } from './postgres-database.js';

/** Databases whose `users` table has `name_key` (step 9): once seen, it stays. */
const keyedDatabases = new WeakSet<object>();

/**
 * Whether `users.name_key` exists. False only on a database of a schema before step 9 (opened with `migrateTo`, in
 * tests of migrations): a name is then written alone, which step 9 keys when the database is opened again, and only
 * ids are looked up.
 */
async function isKeyed(database: object, q: PostgresQueryable): Promise<boolean> {
  if (keyedDatabases.has(database)) return true;
  const { rows } = await q.query<{ keyed: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'users' AND column_name = 'name_key') AS keyed`,
  );
  if (rows[0]?.keyed !== true) return false;
  keyedDatabases.add(database);
  return true;
}

/**
 * Creates a user or sets their display name, with the key the name reads as (`users.name_key`, ADR 40), through
 * `q` (the database or one of its transactions).
 */
export async function putPostgresUserName(
  database: object,
  q: PostgresQueryable,
  user: User,
  at: number,
): Promise<void> {
  if (!(await isKeyed(database, q))) {
    await q.query(
      `INSERT INTO users (id, display_name, created_at, updated_at) VALUES ($1, $2, $3, $3)
       ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, updated_at = excluded.updated_at`,
      [user.id, user.displayName, at],
    );
    return;
  }
  await q.query(
    `INSERT INTO users (id, display_name, name_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, name_key = excluded.name_key,
       updated_at = excluded.updated_at`,
    [user.id, user.displayName, nameKey(user.displayName ?? user.id), at],
  );
}

/** `DirectoryStore.hasNamesake` on PostgreSQL. */
export async function hasPostgresNamesake(
  database: PostgresQueryable,
  userId: string,
  key: string,
  spellings: readonly string[],
): Promise<boolean> {
  const byKey = (await isKeyed(database, database))
    ? 'EXISTS (SELECT 1 FROM users WHERE name_key = $1 AND id <> $2)'
    : '($1::text IS NULL AND $2::text IS NULL)';
  const { rows } = await database.query<{ found: boolean }>(
    `SELECT ${byKey}
      OR EXISTS (SELECT 1 FROM unnest($3::text[]) AS spelling (id) WHERE spelling.id <> $2 AND (
        EXISTS (SELECT 1 FROM users WHERE users.id = spelling.id)
        OR EXISTS (SELECT 1 FROM messages WHERE sender_id = spelling.id)
        OR EXISTS (SELECT 1 FROM members WHERE user_id = spelling.id)
        OR EXISTS (SELECT 1 FROM api_keys WHERE user_id = spelling.id))) AS found`,
    [key, userId, [...spellings]],
  );
  return rows[0]?.found === true;
}
