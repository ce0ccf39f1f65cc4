import type Database from 'better-sqlite3';
import type { PurgeReport } from '../../core/types.js';
import { getRow } from './sqlite-database.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

/**
 * Deletes everything about one user, inside the caller's transaction: their messages and the replies
 * to them, their memories and the memories built from those (episodes, merges, insights), with
 * vectors, versions and links, and their memberships; a turn's search context quoting their messages is
 * cleared; their API keys are deleted (so revoked).
 */
export function purgeSqliteUser(database: Database.Database, vectors: SqliteVectorIndex, userId: string): PurgeReport {
  const ids = (sql: string, ...values: unknown[]) =>
    database
      .prepare<unknown[], { id: number }>(sql)
      .all(...values)
      .map((row) => row.id);
  const count = (sql: string, ...values: unknown[]) =>
    getRow(database.prepare<unknown[], { count: number }>(sql), ...values).count;
  const messageIds = JSON.stringify(
    ids(
      'SELECT id FROM messages WHERE sender_id = @userId OR reply_to IN (SELECT id FROM messages WHERE sender_id = @userId)',
      { userId },
    ),
  );
  const own = JSON.stringify(ids('SELECT id FROM memories WHERE user_id = ?', userId));
  // Memories built from what the user said or from their memories (episodes, merges, insights) go too.
  const memoryIds = ids(
    `SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(@own))
     UNION SELECT m.id FROM memories m, json_each(m.source_message_ids) s WHERE s.value IN (SELECT value FROM json_each(@messageIds))
     UNION SELECT m.id FROM memories m, json_each(m.source_ids) s WHERE s.value IN (SELECT value FROM json_each(@own))`,
    { messageIds, own },
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
  const vectorCount = vectors.remove(memoryIds);
  database
    .prepare(`UPDATE memories SET search_context = NULL, search_context_message_id = NULL
      WHERE search_context_message_id IN (SELECT value FROM json_each(?))`)
    .run(messageIds);
  const memories = database
    .prepare('DELETE FROM memories WHERE id IN (SELECT value FROM json_each(?))')
    .run(doomed).changes;
  const messages = count('SELECT COUNT(*) AS count FROM json_each(?)', messageIds);
  database.prepare('DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))').run(messageIds);
  database.prepare('UPDATE memory_versions SET actor = NULL WHERE actor = ?').run(userId);
  database.prepare('DELETE FROM users WHERE id = ?').run(userId);
  database.prepare('DELETE FROM members WHERE user_id = ?').run(userId);
  const apiKeys = database.prepare('DELETE FROM api_keys WHERE user_id = ?').run(userId).changes;
  return { userId, messages, memories, vectors: vectorCount, versions, links, apiKeys };
}
