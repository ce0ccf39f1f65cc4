import { nameKey } from '../../core/name-key.js';
import { isReservedId } from '../../core/reserved-ids.js';
import { plainName, sameNameInAnotherCase, withLeftName } from '../../core/speaker-label.js';
import type { User } from '../directory-store.js';
import type { PostgresQueryable } from './postgres-database.js';
import type { PgMemoryRow } from './postgres-memory-rows.js';
import { labelPostgresName, labelPostgresNamesakes, labelPostgresWritten } from './postgres-speaker-labels.js';

/** The columns of `users` seen on each database: once seen, a column stays. */
const seenColumns = new WeakMap<object, Set<string>>();

/** Whether `users` has `column`: false only on a database of a schema before the step that made it (tests of migrations). */
async function hasUsersColumn(database: object, q: PostgresQueryable, column: string): Promise<boolean> {
  if (seenColumns.get(database)?.has(column)) return true;
  const { rows } = await q.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'users' AND column_name = $1) AS found`,
    [column],
  );
  if (rows[0]?.found !== true) return false;
  seenColumns.set(database, (seenColumns.get(database) ?? new Set()).add(column));
  return true;
}

/**
 * Whether `users.id_key` exists (step 10): rows are written without keys on a schema before it, which step 10
 * computes when the database is opened again, and no namesake is found.
 */
function isKeyed(database: object, q: PostgresQueryable): Promise<boolean> {
  return hasUsersColumn(database, q, 'id_key');
}

/** Whether `users.left_name` exists (step 13): the names a user left, for the insert of a memory made before. */
function hasLeftNames(database: object, q: PostgresQueryable): Promise<boolean> {
  return hasUsersColumn(database, q, 'left_name');
}

/**
 * Creates a user or sets their display name, with the keys the name and the id read as (`users.name_key`,
 * `users.id_key`; ADR 40), through `q`, a transaction: the memories of the users the name (or a new user's id) now
 * reads like, and those that call the user by a name they left, are labelled in it (ADR 44).
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
  const key = nameKey(user.displayName ?? user.id);
  const idKey = nameKey(user.id);
  const { rows } = await q.query<{ display_name: string | null; name_key: string | null }>(
    'SELECT display_name, name_key FROM users WHERE id = $1 FOR UPDATE',
    [user.id],
  );
  const before = rows[0];
  await q.query(
    `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
     ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, name_key = excluded.name_key,
       updated_at = excluded.updated_at`,
    [user.id, user.displayName, key, idKey, at],
  );
  // A new user reads as their name and their id; a renamed one as their new name.
  if (before === undefined) await labelPostgresNamesakes(q, user.id, [key, idKey], at);
  else if (before.name_key !== key) await labelPostgresNamesakes(q, user.id, [key], at);
  // A name the user leaves is free for anyone to take: the memories that call them by it are labelled now. The
  // same name in another case is not left (ADR 44, session 31).
  const left = before?.display_name ?? null;
  const kept = left !== null && user.displayName !== null && sameNameInAnotherCase(left, user.displayName);
  const plain = kept ? null : plainName(left, user.id);
  if (plain !== null && nameKey(plain) !== idKey) {
    await labelPostgresName(q, user.id, plain, at, true);
    // The names a user left, with when (step 13; the last 8 since attack 31d): the insert of a memory made before
    // labels them (ADR 44, session 31).
    if (await hasLeftNames(database, q)) {
      const { rows: left } = await q.query<{ left_name: string | null; left_at: string | null }>(
        'SELECT left_name, left_at FROM users WHERE id = $1',
        [user.id],
      );
      const stored = left[0]?.left_name ?? null;
      const leftAt = left[0]?.left_at ?? null;
      const names = withLeftName(stored, leftAt === null ? null : Number(leftAt), plain, at);
      await q.query('UPDATE users SET left_name = $1, left_at = $2 WHERE id = $3', [names, at, user.id]);
    }
  }
}

/**
 * Creates a row without a name for each id that has none (a sender, a member, the user of a key: every id a user
 * is known by has a row, so its key is there to be found; ADR 40), created at `at` (or, for an id given with its
 * own time, the earliest of them), through `q`, the transaction that writes what names the ids. mneme's own actors
 * (ADR 38) are no users and get none. In the order of the ids, so that two transactions knowing the same ids wait
 * for each other rather than deadlock. A new id may read like another user's name: the memories that call that user
 * by it are labelled in `q` (ADR 44).
 */
export async function knowPostgresUsers(
  database: object,
  q: PostgresQueryable,
  ids: Iterable<string | readonly [id: string, at: number]>,
  at = 0,
): Promise<void> {
  const first = new Map<string, number>();
  for (const entry of ids) {
    const [id, seen] = typeof entry === 'string' ? [entry, at] : entry;
    if (!isReservedId(id)) first.set(id, Math.min(seen, first.get(id) ?? seen));
  }
  if (first.size === 0) return;
  const known = [...first.keys()].sort();
  const times = known.map((id) => first.get(id) ?? at);
  if (!(await isKeyed(database, q))) {
    await q.query(
      `INSERT INTO users (id, display_name, created_at, updated_at)
       SELECT known.id, NULL, known.at, known.at FROM unnest($1::text[], $2::bigint[]) AS known (id, at)
       ON CONFLICT (id) DO NOTHING`,
      [known, times],
    );
    return;
  }
  const { rows } = await q.query<{ id: string; id_key: string }>(
    `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at)
     SELECT known.id, NULL, known.key, known.key, known.at, known.at
     FROM unnest($1::text[], $2::text[], $3::bigint[]) AS known (id, key, at)
     ON CONFLICT (id) DO NOTHING RETURNING id, id_key`,
    [known, known.map(nameKey), times],
  );
  // A new id may read like another user's name: the memories that call them by it are labelled (ADR 44).
  for (const row of rows.sort((a, b) => (a.id < b.id ? -1 : 1))) {
    await labelPostgresNamesakes(q, row.id, [row.id_key], at);
  }
}

/**
 * A memory just written through `q`, its write's transaction, with its speakers labelled where a namesake arrived
 * since its text was made (ADR 44); as it is on a database of a schema before step 10.
 */
export async function labelWrittenPostgresMemory(
  database: object,
  q: PostgresQueryable,
  row: PgMemoryRow,
  at: number,
): Promise<PgMemoryRow> {
  return (await isKeyed(database, q)) ? labelPostgresWritten(q, row, at, await hasLeftNames(database, q)) : row;
}

/** `DirectoryStore.hasNamesake` on PostgreSQL: two indexed lookups, another user's name key or id key. */
export async function hasPostgresNamesake(database: PostgresQueryable, userId: string, key: string): Promise<boolean> {
  if (!(await isKeyed(database, database))) return false;
  const { rows } = await database.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM users WHERE name_key = $1 AND id <> $2)
      OR EXISTS (SELECT 1 FROM users WHERE id_key = $1 AND id <> $2) AS found`,
    [key, userId],
  );
  return rows[0]?.found === true;
}
