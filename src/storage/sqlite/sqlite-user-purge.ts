import type Database from 'better-sqlite3';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { CHANNEL_TASKS, TOPIC_TASKS } from '../../core/ingest/extraction-task.js';
import { isEngineActor } from '../../core/reserved-ids.js';
import type { PurgeReport } from '../../core/types.js';
import { withBuiltOnThem } from '../cited-channels.js';
import { getRow, toMnemeError, writeSqlite } from './sqlite-database.js';
import { recordPurge } from './sqlite-id-floors.js';
import { WORD_BLOCKS_GENERATION } from './sqlite-migrations.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

/**
 * Purges one user (see `purgeSqliteUser`) so that their bytes go too, not only their rows: deleted
 * cells are overwritten with zeros (`secure_delete`), both full-text indexes are rebuilt from the rows
 * that remain (a merge keeps deleted terms in its leaves), the file is rebuilt too (`VACUUM`: stale
 * copies of cells that page splits left behind go), and the WAL is checkpointed and truncated. It
 * takes time in proportion to the size of the file.
 */
export function eraseSqliteUser(database: Database.Database, vectors: SqliteVectorIndex, userId: string): PurgeReport {
  const previous = Number(database.pragma('secure_delete', { simple: true }));
  database.pragma('secure_delete = ON');
  try {
    const report = writeSqlite(database, `purging user ${userId}`, () => {
      const purged = purgeSqliteUser(database, vectors, userId);
      database.exec(`INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');`);
      return purged;
    });
    const unfinished = `user ${userId} was purged, but erasing the deleted bytes from the file did not finish`;
    let busy = 0;
    try {
      database.exec('VACUUM');
      busy = (database.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>)[0]?.busy ?? 0;
    } catch (error) {
      throw toMnemeError(error, `${unfinished}; purge again to finish it`);
    }
    if (busy) {
      throw new MnemeError(
        ErrorCode.StoreBusy,
        `${unfinished}: another connection is still reading the write-ahead log; purge again once it is done`,
      );
    }
    return report;
  } finally {
    database.pragma(`secure_delete = ${previous}`);
  }
}

/**
 * Deletes everything about one user, inside the caller's transaction: their messages and the replies
 * to them, their memories and the memories built from those (episodes, merges, insights) or on them at
 * any depth, with vectors, versions and links, and their memberships; a turn's search context quoting
 * their messages is cleared; their API keys are deleted (so revoked).
 */
export function purgeSqliteUser(database: Database.Database, vectors: SqliteVectorIndex, userId: string): PurgeReport {
  const ids = (sql: string, ...values: unknown[]) =>
    database
      .prepare<unknown[], { id: number }>(sql)
      .all(...values)
      .map((row) => row.id);
  const count = (sql: string, ...values: unknown[]) =>
    getRow(database.prepare<unknown[], { count: number }>(sql), ...values).count;
  const spoken = database
    .prepare<[string], { channels: string; topics: string }>(
      `SELECT json_group_array(DISTINCT channel_id) AS channels,
        json_group_array(DISTINCT topic_id) FILTER (WHERE topic_id IS NOT NULL) AS topics
      FROM messages WHERE sender_id = ? AND role <> 'assistant'`,
    )
    .get(userId) ?? { channels: '[]', topics: '[]' };
  // What the user said (any role but `assistant`) and the replies to it: an assistant reply is sent under an id
  // (`assistant` unless the caller names another) that a person may hold too, and is not theirs (attack27a).
  const messageIds = JSON.stringify(
    ids(
      `SELECT id FROM messages WHERE (sender_id = @userId AND role <> 'assistant')
        OR reply_to IN (SELECT id FROM messages WHERE sender_id = @userId AND role <> 'assistant')`,
      { userId },
    ),
  );
  const own = JSON.stringify(ids('SELECT id FROM memories WHERE user_id = ?', userId));
  // Memories built from what the user said or from their memories (episodes, merges, insights) go too, and those
  // built on any of them at any depth (an insight on a room's episodes, which are of no user; session 19): found among
  // the memories built on others, read once (a recursive statement read them all again for each memory it reached:
  // 2.2 s for a user of 2,000 memories beside 5,000 built on others).
  const memoryIds = withBuiltOnThem(
    ids(
      `SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(@own))
       UNION SELECT m.id FROM memories m, json_each(m.source_message_ids) s
         WHERE s.value IN (SELECT value FROM json_each(@messageIds))`,
      { messageIds, own },
    ),
    new Map(
      database
        .prepare<[], { id: number; source_ids: string }>("SELECT id, source_ids FROM memories WHERE source_ids <> '[]'")
        .all()
        .map((row) => [row.id, JSON.parse(row.source_ids) as number[]] as const),
    ),
  );
  const doomed = JSON.stringify(memoryIds);
  const versions = count(
    'SELECT COUNT(*) AS count FROM memory_versions WHERE memory_id IN (SELECT value FROM json_each(?))',
    doomed,
  );
  const links = count(
    `SELECT COUNT(*) AS count FROM memory_links WHERE source_id IN (SELECT value FROM json_each(@doomed))
       OR target_id IN (SELECT value FROM json_each(@doomed))`,
    { doomed },
  );
  recordPurge(database);
  const vectorCount = vectors.remove(memoryIds);
  // An exchange chunk of another user searched with the user's message before it (its search context): its vector was
  // made from those words too (exchange-memories.ts), so it goes with them; the memory is embedded again from its own
  // words by the next backfill or `reembed` (attack21).
  const contextOnly = database
    .prepare<[string, string], number>(
      `SELECT id FROM memories WHERE search_context_message_id IN (SELECT value FROM json_each(?))
        AND id NOT IN (SELECT value FROM json_each(?))`,
    )
    .pluck()
    .all(messageIds, doomed);
  vectors.remove(contextOnly);
  database
    .prepare(`UPDATE memories SET search_context = NULL, search_context_message_id = NULL, embedding_model = NULL
      WHERE search_context_message_id IN (SELECT value FROM json_each(?))`)
    .run(messageIds);
  const memories = database
    .prepare('DELETE FROM memories WHERE id IN (SELECT value FROM json_each(?))')
    .run(doomed).changes;
  // Consolidation's vocabulary may hold the user's words: it goes, with every word block its ids are in
  // (the next consolidation writes them again), and the generation moves on (ADR 19, session 7). Its ids
  // start again from 1 (so they do not grow by the vocabulary at every purge): a run that read ids before
  // this neither writes a block nor looks a word's id up any more (both check the generation).
  database.exec(`DELETE FROM consolidation_word_blocks; DELETE FROM consolidation_words;
    DELETE FROM sqlite_sequence WHERE name = 'consolidation_words';
    UPDATE service_state SET value = value + 1 WHERE name = '${WORD_BLOCKS_GENERATION}';`);
  const messages = count('SELECT COUNT(*) AS count FROM json_each(?)', messageIds);
  database.prepare('DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))').run(messageIds);
  // A user under an id the engine writes its own version rows under (a database from before ADR 38) does not take
  // those rows' actor with them: they are the engine's, on every user's memories.
  if (!isEngineActor(userId)) database.prepare('UPDATE memory_versions SET actor = NULL WHERE actor = ?').run(userId);
  database.prepare('DELETE FROM users WHERE id = ?').run(userId);
  database.prepare('DELETE FROM members WHERE user_id = ?').run(userId);
  const apiKeys = database.prepare('DELETE FROM api_keys WHERE user_id = ?').run(userId).changes;
  // Stored idempotent responses may quote what the user said, whoever sent them: all are erased (ADR 14).
  // The keys stay, so a retry of a request that was done is not done again.
  database.prepare('UPDATE idempotency_keys SET body = NULL WHERE status IS NOT NULL').run();
  // A topic or channel only the user spoke in, that nothing else refers to now, was theirs alone.
  database
    .prepare(`DELETE FROM topics WHERE id IN (SELECT value FROM json_each(?))
      AND NOT EXISTS (SELECT 1 FROM messages WHERE topic_id = topics.id)
      AND NOT EXISTS (SELECT 1 FROM memories WHERE topic_id = topics.id)
      AND NOT EXISTS (SELECT 1 FROM members WHERE kind = 'topic' AND space_id = topics.id)`)
    .run(spoken.topics);
  database
    .prepare(`DELETE FROM channels WHERE id IN (SELECT value FROM json_each(?))
      AND NOT EXISTS (SELECT 1 FROM messages WHERE channel_id = channels.id)
      AND NOT EXISTS (SELECT 1 FROM members WHERE kind = 'channel' AND space_id = channels.id)`)
    .run(spoken.channels);
  // Their watermarks go with them: a channel's tasks under its id, a topic's under `topic:<id>`. Ids of channels,
  // topics and users share no namespace (a channel may be named `eve` or `topic:retro`): each clause takes only its
  // own kind's tasks, and nothing is keyed by a user (a purge of Eve emptied channel `eve`'s extraction watermark,
  // and what Bob had forgotten there was extracted again; attack27a).
  database
    .prepare(`DELETE FROM maintenance_state WHERE
      (task IN (SELECT value FROM json_each(@channelTasks)) AND channel_id IN (SELECT value FROM json_each(@channels))
        AND NOT EXISTS (SELECT 1 FROM messages WHERE channel_id = maintenance_state.channel_id))
      OR (task IN (SELECT value FROM json_each(@topicTasks))
        AND channel_id IN (SELECT 'topic:' || value FROM json_each(@topics))
        AND NOT EXISTS (SELECT 1 FROM topics WHERE 'topic:' || id = maintenance_state.channel_id))`)
    .run({
      channels: spoken.channels,
      topics: spoken.topics,
      channelTasks: JSON.stringify(CHANNEL_TASKS),
      topicTasks: JSON.stringify(TOPIC_TASKS),
    });
  return { userId, messages, memories, vectors: vectorCount, versions, links, apiKeys };
}
