import { nameKey } from '../../core/name-key.js';
import { MAINTENANCE_ACTOR } from '../../core/reserved-ids.js';
import { ASCII_FOLDED, beyondAscii, labelledText, labelOf, leftNamesIn, plainName } from '../../core/speaker-label.js';
import { VECTORS_CLEARED } from '../vector-backfill-store.js';
import type { PostgresQueryable } from './postgres-database.js';
import { memoryColumns, memoryColumnsOf, type PgMemoryRow, snapshotOf } from './postgres-memory-rows.js';

/**
 * Labels the memories of every other named user whose name reads as one of `keys` (a user just known or named; ADR
 * 44), through `q`, the transaction that makes the user known or names them. One user after another in the byte order
 * of their ids, as SQLite's store, whatever the database's collation (each is a version of a memory naming two: ADR
 * 51); so are the users of the other look-ups here.
 */
export async function labelPostgresNamesakes(
  q: PostgresQueryable,
  userId: string,
  keys: Iterable<string>,
  at: number,
): Promise<void> {
  const unique = [...new Set(keys)];
  if (unique.length === 0) return;
  const { rows } = await q.query<{ id: string; display_name: string }>(
    `SELECT id, display_name FROM users
     WHERE name_key = ANY($1::text[]) AND id <> $2 AND display_name IS NOT NULL ORDER BY id COLLATE "C"`,
    [unique, userId],
  );
  for (const user of rows) {
    const name = plainName(user.display_name, user.id);
    if (name !== null) await labelPostgresName(q, user.id, name, at);
  }
}

/**
 * Labels the memories that call user `userId` by `name` (their name, or one they left; ADR 44): those of which they are
 * the user (a fact's speaker, the sender of an exchange's message), that cite a message they sent (an exchange's reply,
 * an episode's window) or whose search context is one. Only those whose text can hold the name are read and locked:
 * the text index finds its words (any case), or the text holds it as spelled (ASCII case folded, long s and Kelvin sign
 * as "s" and "k"; a name of stop words alone, "Will", or a mention the parser reads as part of an address,
 * "bob@example.com"). A name with a letter outside ASCII is looked for in every memory that names the user: the label
 * reads it in any case as Unicode folds it ("ΝΊΚΟΣ" for "Νίκος"), the text index and `lower` of the C locale do not.
 * A name `left` is not labelled in a memory another of whose speakers goes by it now: the mention is theirs (attack
 * 31d). The text index follows the
 * content (a generated column); the vector is kept until `reembed` (or `serve`'s maintenance) gives the new text one.
 */
export async function labelPostgresName(
  q: PostgresQueryable,
  userId: string,
  name: string,
  at: number,
  left = false,
): Promise<void> {
  const { rows } = await q.query<PgMemoryRow>(
    `WITH sent AS (SELECT coalesce(array_agg(id), '{}') AS ids FROM messages WHERE sender_id = $1),
       words AS (SELECT plainto_tsquery('english', $2) AS query)
     SELECT ${memoryColumns} FROM memories, words WHERE (user_id = $1
        OR source_message_ids && (SELECT ids FROM sent)
        OR search_context_message_id IN (SELECT id FROM messages WHERE sender_id = $1))
       AND ($3::boolean OR CASE WHEN numnode(words.query) > 0 THEN fts @@ words.query ELSE false END
        OR strpos(lower(translate(content, $4, $5)), lower($2)) > 0
        OR strpos(lower(translate(coalesce(search_context, ''), $4, $5)), lower($2)) > 0)
       AND NOT ($6::boolean AND EXISTS (SELECT 1 FROM users WHERE users.id <> $1
         AND (users.name_key = $7 OR users.id_key = $7)
         AND (users.id = memories.user_id
           OR users.id IN (SELECT sender_id FROM messages WHERE id = ANY(memories.source_message_ids))
           OR users.id = (SELECT sender_id FROM messages WHERE id = memories.search_context_message_id))))
     ORDER BY id FOR UPDATE OF memories`,
    [userId, name, beyondAscii(name), ASCII_FOLDED.from, ASCII_FOLDED.to, left, nameKey(name)],
  );
  await relabel(q, rows, [[userId, name]], at);
}

/**
 * Labels, through `q`, the memories of every named user another user can be taken for: those written before ADR 44
 * (step 12) or imported from a file that held them unlabelled.
 */
export async function labelEveryPostgresNamesake(q: PostgresQueryable, at: number): Promise<void> {
  const { rows } = await q.query<{ id: string; display_name: string }>(
    `SELECT users.id, users.display_name FROM users WHERE users.display_name IS NOT NULL
       AND (EXISTS (SELECT 1 FROM users AS other WHERE other.name_key = users.name_key AND other.id <> users.id)
         OR EXISTS (SELECT 1 FROM users AS other WHERE other.id_key = users.name_key AND other.id <> users.id))
     ORDER BY users.id COLLATE "C"`,
  );
  for (const user of rows) {
    const name = plainName(user.display_name, user.id);
    if (name !== null) await labelPostgresName(q, user.id, name, at);
  }
}

/**
 * Memory `row` just written, through `q`, its write's transaction, with its speakers labelled where another user can
 * now be taken for their name: its text was made before the transaction, and a namesake who arrived in between found
 * no memory to label (ADR 44).
 */
export async function labelPostgresWritten(
  q: PostgresQueryable,
  row: PgMemoryRow,
  at: number,
  leftNames: boolean,
): Promise<PgMemoryRow> {
  const of = [row.user_id, row.source_message_ids, row.search_context_message_id];
  const { rows } = await q.query<{ id: string; display_name: string }>(
    `${SPEAKERS}
     SELECT users.id, users.display_name FROM speakers JOIN users ON users.id = speakers.id
     WHERE users.display_name IS NOT NULL
       AND (EXISTS (SELECT 1 FROM users AS other WHERE other.name_key = users.name_key AND other.id <> users.id)
         OR EXISTS (SELECT 1 FROM users AS other WHERE other.id_key = users.name_key AND other.id <> users.id))
     ORDER BY users.id COLLATE "C"`,
    of,
  );
  const named = rows.flatMap((user): [string, string][] => {
    const name = plainName(user.display_name, user.id);
    return name === null ? [] : [[user.id, name]];
  });
  // A name a speaker left after the memory's messages were sent (step 13): its text may have been made before.
  if (leftNames) {
    const { rows: leaving } = await q.query<{
      id: string;
      display_name: string | null;
      left_name: string;
      left_at: string;
    }>(
      `${SPEAKERS}
       SELECT users.id, users.display_name, users.left_name, users.left_at
       FROM speakers JOIN users ON users.id = speakers.id
       WHERE users.left_name IS NOT NULL AND users.left_at >= $4::bigint ORDER BY users.id COLLATE "C"`,
      [...of, row.valid_from],
    );
    if (leaving.length > 0) {
      const { rows: speakers } = await q.query<{ id: string; name_key: string; id_key: string }>(
        `${SPEAKERS}
         SELECT users.id, users.name_key, users.id_key FROM speakers JOIN users ON users.id = speakers.id`,
        of,
      );
      named.push(...leftNamesIn(leaving, Number(row.valid_from), speakers));
    }
  }
  if (named.length === 0) return row;
  const [after] = await relabel(q, [row], named, at);
  return after ?? row;
}

/**
 * Writes each of `rows` with each of `named` (a user's id and the name to label) labelled, as a version, in two
 * statements whatever their number; the rows after, in the order given (unchanged ones as they were).
 */
async function relabel(
  q: PostgresQueryable,
  rows: readonly PgMemoryRow[],
  named: readonly (readonly [string, string])[],
  at: number,
): Promise<PgMemoryRow[]> {
  const changed = rows.flatMap((row) => {
    const text = labelledText(
      { content: row.content, searchContext: row.search_context, source: row.source, userId: row.user_id },
      named,
    );
    return text === null ? [] : [{ row, ...text }];
  });
  if (changed.length === 0) return [...rows];
  const { rows: written } = await q.query<PgMemoryRow>(
    `UPDATE memories SET content = labelled.content, search_context = labelled.search_context, embedding_model = NULL,
       updated_at = $4
     FROM unnest($1::bigint[], $2::text[], $3::text[]) AS labelled (id, content, search_context)
     WHERE memories.id = labelled.id RETURNING ${memoryColumnsOf('memories')}`,
    [
      changed.map(({ row }) => row.id),
      changed.map(({ content }) => content),
      changed.map(({ searchContext }) => searchContext),
      at,
    ],
  );
  const after = new Map(written.map((row) => [Number(row.id), row]));
  const versions = changed.flatMap(({ row, content }) => {
    const now = after.get(Number(row.id));
    if (!now) return [];
    const changes = content === row.content ? {} : { content: { from: row.content, to: content } };
    return [{ id: row.id, changes: JSON.stringify(changes), snapshot: JSON.stringify(snapshotOf(now)) }];
  });
  const labelled = named.map(([userId, name]) => labelOf(name, userId)).join(', ');
  await q.query(
    `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
     SELECT labelled.id, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = labelled.id),
       'update', $4, $5, labelled.changes, labelled.snapshot, $6
     FROM unnest($1::bigint[], $2::text[], $3::text[]) AS labelled (id, changes, snapshot)`,
    [
      versions.map((version) => version.id),
      versions.map((version) => version.changes),
      versions.map((version) => version.snapshot),
      MAINTENANCE_ACTOR,
      `another user can be taken for the name: labelled ${labelled} (ADR 44)`,
      at,
    ],
  );
  // The vectors are the old texts': a background re-embedding that sees the count move gives the new texts theirs.
  if (written.length > 0) {
    await q.query(
      `INSERT INTO service_state (name, value) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET value = service_state.value + $2`,
      [VECTORS_CLEARED, written.length],
    );
  }
  return rows.map((row) => after.get(Number(row.id)) ?? row);
}

/** The speakers of a memory (`$1` its user, `$2` the messages it cites, `$3` its search context's message). */
const SPEAKERS = `WITH speakers (id) AS (
  SELECT $1::text WHERE $1::text IS NOT NULL
  UNION SELECT sender_id FROM messages WHERE id = ANY($2::bigint[])
  UNION SELECT sender_id FROM messages WHERE id = $3::bigint)`;
