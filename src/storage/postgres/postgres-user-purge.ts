import { MnemeError } from '../../core/errors.js';
import { CHANNEL_TASKS, TOPIC_TASKS } from '../../core/ingest/extraction-task.js';
import { isEngineActor } from '../../core/reserved-ids.js';
import type { PurgeReport } from '../../core/types.js';
import { type PostgresDatabase, type PostgresQueryable, toMnemeErrorPg, writePg } from './postgres-database.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/**
 * Deletes everything about one user inside the caller's transaction, as `purgeSqliteUser` does:
 * their messages and the replies to them, their memories and the memories built from those
 * (episodes, merges, insights), with vectors, versions and links, and their memberships; a turn's
 * search context quoting their messages is cleared; their API keys are deleted (so revoked), and every
 * stored idempotent response is erased (it may quote them; its key stays). The deleted rows' bytes stay in the table
 * files until `erasePostgresUser`'s rewrite.
 */
/** The tables a purge deletes text from (the vectors' rows hold their owner key): rewritten with their indexes. */
const TEXT_TABLES = [
  'messages',
  'memories',
  'memory_vectors',
  'memory_versions',
  'memory_words',
  'memory_word_owners',
  'memory_links',
  'users',
  'members',
  'api_keys',
  'idempotency_keys',
  'topics',
  'channels',
  'maintenance_state',
];

/**
 * Purges one user (see `purgePostgresUser`, one transaction) so that their text goes from the
 * database's files too, not only their rows: a deleted row stays in its table's pages (and its words
 * in the GIN indexes, whose keys a plain `VACUUM` never removes) until the space is reused, so the
 * tables the purge deleted text from are rewritten with their indexes (`VACUUM FULL`, which takes
 * each table's exclusive lock in turn: reads and writes of every process wait for it, for a time that
 * grows with the table; the vectors' HNSW index is rebuilt, minutes on a large store). What
 * PostgreSQL cannot promise, the README says: its write-ahead log, backups and replicas keep the text until they
 * are recycled, and a file a rewrite replaced is unlinked, not overwritten.
 */
export async function erasePostgresUser(
  database: PostgresDatabase,
  vectors: PostgresVectorIndex,
  userId: string,
): Promise<PurgeReport> {
  const report = await writePg(database, `purging user ${userId}`, (q) => purgePostgresUser(q, vectors, userId));
  try {
    await database.query(`VACUUM (FULL) ${TEXT_TABLES.join(', ')}`);
    // The planner's statistics (pg_statistic, which PGlite's own ANALYZE and a server's autovacuum
    // write) may hold the user's words among a column's common values. A superuser (PGlite's is one)
    // drops those tables' statistics (ANALYZE keeps the old ones of a table left empty), analyzes them
    // again without the user's rows, and rewrites pg_statistic so the old rows leave its file too.
    // Another user cannot: the statistics are analyzed again, the old rows stay until the server
    // vacuums pg_statistic (ADR 12).
    const { rows } = await database.query<{ superuser: boolean }>(
      'SELECT rolsuper AS superuser FROM pg_catalog.pg_roles WHERE rolname = current_user',
    );
    const superuser = rows[0]?.superuser === true;
    if (superuser) {
      await database.query('DELETE FROM pg_catalog.pg_statistic WHERE starelid = ANY($1::regclass[])', [TEXT_TABLES]);
    }
    await database.query(`ANALYZE ${TEXT_TABLES.join(', ')}`);
    if (superuser) await database.query('VACUUM (FULL) pg_catalog.pg_statistic');
  } catch (error) {
    const cause = toMnemeErrorPg(error, 'rewriting the tables');
    throw new MnemeError(
      cause.code,
      `user ${userId} was purged, but erasing the deleted bytes from the tables did not finish (${cause.message}); purge again to finish it`,
      { cause: error },
    );
  }
  return report;
}

export async function purgePostgresUser(
  q: PostgresQueryable,
  vectors: PostgresVectorIndex,
  userId: string,
): Promise<PurgeReport> {
  const ids = async (sql: string, parameters: unknown[]) =>
    (await q.query<{ id: number }>(sql, parameters)).rows.map((row) => row.id);
  const count = async (sql: string, parameters: unknown[]) =>
    (await q.query<{ count: number }>(sql, parameters)).rows[0]?.count ?? 0;
  const spoken = (
    await q.query<{ channels: string[] | null; topics: string[] | null }>(
      `SELECT array_agg(DISTINCT channel_id) AS channels,
         array_agg(DISTINCT topic_id) FILTER (WHERE topic_id IS NOT NULL) AS topics
       FROM messages WHERE sender_id = $1 AND role <> 'assistant'`,
      [userId],
    )
  ).rows[0];
  const channels = spoken?.channels ?? [];
  const topics = spoken?.topics ?? [];
  // What the user said (any role but `assistant`) and the replies to it: an assistant reply is sent under an id
  // (`assistant` unless the caller names another) that a person may hold too, and is not theirs (attack27a).
  const messageIds = await ids(
    `SELECT id FROM messages WHERE (sender_id = $1 AND role <> 'assistant')
       OR reply_to IN (SELECT id FROM messages WHERE sender_id = $1 AND role <> 'assistant')`,
    [userId],
  );
  const own = await ids('SELECT id FROM memories WHERE user_id = $1', [userId]);
  // Memories built from what the user said or from their memories (episodes, merges, insights) go too, and those
  // built on any of them at any depth (an insight on a room's episodes, which are of no user; session 19).
  const memoryIds = await ids(
    `WITH RECURSIVE doomed(id) AS (
       SELECT id FROM memories WHERE id = ANY($1::bigint[]) OR source_message_ids && $2::bigint[]
       UNION
       SELECT m.id FROM doomed JOIN memories m ON cardinality(m.source_ids) > 0 AND doomed.id = ANY(m.source_ids)
     )
     SELECT id FROM doomed`,
    [own, messageIds],
  );
  const versions = await count('SELECT count(*) AS count FROM memory_versions WHERE memory_id = ANY($1::bigint[])', [
    memoryIds,
  ]);
  const links = await count(
    'SELECT count(*) AS count FROM memory_links WHERE source_id = ANY($1::bigint[]) OR target_id = ANY($1::bigint[])',
    [memoryIds],
  );
  // The identity never gives an id twice here; the floors are for \`mneme copy\`, which carries \`service_state\`
  // to a SQLite file (whose ids would otherwise be given again) and sets a target's identity past them.
  await q.query(
    `INSERT INTO service_state (name, value)
     SELECT name, last FROM (VALUES ('messages_id_floor', (SELECT MAX(id) FROM messages)),
       ('memories_id_floor', (SELECT MAX(id) FROM memories))) AS floors(name, last)
     WHERE last IS NOT NULL
     ON CONFLICT (name) DO UPDATE SET value = GREATEST(service_state.value, excluded.value)`,
  );
  // Every process's remembered word counts (postgres-term-frequencies.ts) may hold the user's words: recounted.
  await q.query(
    `INSERT INTO service_state (name, value) VALUES ('purges', 1)
     ON CONFLICT (name) DO UPDATE SET value = service_state.value + 1`,
  );
  const vectorCount = await vectors.remove(q, memoryIds);
  // An exchange chunk of another user searched with the user's message before it (its search context): its vector was
  // made from those words too (exchange-memories.ts), so it goes with them; the memory is embedded again from its own
  // words by the next backfill or `reembed` (attack21).
  const contextOnly = (
    await q.query<{ id: string | number }>(
      `SELECT id FROM memories WHERE search_context_message_id = ANY($1::bigint[]) AND NOT (id = ANY($2::bigint[]))`,
      [messageIds, memoryIds],
    )
  ).rows.map((row) => Number(row.id));
  await vectors.remove(q, contextOnly);
  await q.query(
    `UPDATE memories SET search_context = NULL, search_context_message_id = NULL, embedding_model = NULL
     WHERE search_context_message_id = ANY($1::bigint[])`,
    [messageIds],
  );
  const memories = (await q.query('DELETE FROM memories WHERE id = ANY($1::bigint[])', [memoryIds])).changed;
  await q.query('DELETE FROM messages WHERE id = ANY($1::bigint[])', [messageIds]);
  // A user under an id the engine writes its own version rows under (a database from before ADR 38) does not take
  // those rows' actor with them: they are the engine's, on every user's memories.
  if (!isEngineActor(userId)) await q.query('UPDATE memory_versions SET actor = NULL WHERE actor = $1', [userId]);
  await q.query('DELETE FROM users WHERE id = $1', [userId]);
  await q.query('DELETE FROM members WHERE user_id = $1', [userId]);
  const apiKeys = (await q.query('DELETE FROM api_keys WHERE user_id = $1', [userId])).changed;
  // Stored idempotent responses may quote what the user said, whoever sent them: all are erased (ADR 14).
  // The keys stay, so a retry of a request that was done is not done again.
  await q.query('UPDATE idempotency_keys SET body = NULL WHERE status IS NOT NULL');
  // A topic or channel only the user spoke in, that nothing else refers to now, was theirs alone.
  await q.query(
    `DELETE FROM topics WHERE id = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM messages WHERE topic_id = topics.id)
       AND NOT EXISTS (SELECT 1 FROM memories WHERE topic_id = topics.id)
       AND NOT EXISTS (SELECT 1 FROM members WHERE kind = 'topic' AND space_id = topics.id)`,
    [topics],
  );
  await q.query(
    `DELETE FROM channels WHERE id = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM messages WHERE channel_id = channels.id)
       AND NOT EXISTS (SELECT 1 FROM members WHERE kind = 'channel' AND space_id = channels.id)`,
    [channels],
  );
  // Their watermarks go with them: a channel's tasks under its id, a topic's under `topic:<id>`, each clause only its
  // own kind's tasks, and nothing keyed by a user (a channel named like the user is another's; attack27a).
  await q.query(
    `DELETE FROM maintenance_state WHERE
       (task = ANY($3::text[]) AND channel_id = ANY($1::text[])
         AND NOT EXISTS (SELECT 1 FROM messages WHERE channel_id = maintenance_state.channel_id))
       OR (task = ANY($4::text[]) AND channel_id IN (SELECT 'topic:' || topic FROM unnest($2::text[]) AS topic)
         AND NOT EXISTS (SELECT 1 FROM topics WHERE 'topic:' || id = maintenance_state.channel_id))`,
    [channels, topics, [...CHANNEL_TASKS], [...TOPIC_TASKS]],
  );
  return { userId, messages: messageIds.length, memories, vectors: vectorCount, versions, links, apiKeys };
}
