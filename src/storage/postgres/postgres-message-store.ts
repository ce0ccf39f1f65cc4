import { type MessageRow, toMessage } from '../message-rows.js';
import {
  type CommandWrite,
  type CommandWritten,
  fileProgressMoved,
  joinsOnlyIfNew,
  keyGone,
  type MessageRole,
  type MessageStore,
  purgedMeanwhile,
  replyGone,
  type StoredMessage,
  spaceStartedMeanwhile,
} from '../message-store.js';
import { firstRow, type PostgresDatabase, type PostgresQueryable, withPgErrors, writePg } from './postgres-database.js';
import { toMemory } from './postgres-memory-rows.js';
import { createPostgresMemoryWrites, type PostgresMemoryWrites } from './postgres-memory-writes.js';
import { orLexemeQuery } from './postgres-text-query.js';
import { knowPostgresUsers, putPostgresUserName } from './postgres-user-names.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

const columns = 'id, channel_id, sender_id, role, content, topic_id, reply_to, external_id, created_at';

/**
 * A channel's messages matching `$1` (a `tsquery` text of quoted lexemes, see `orLexemeQuery`), best
 * first, at most `$3`. The query is a parameter, not computed inside the statement, so the planner
 * knows its lexemes: a rare word is looked up through the GIN index on `fts` (`messages_fts`), a
 * small channel through its own index.
 */
export const messageSearchSql = `SELECT ${columns} FROM messages m
  WHERE m.fts @@ $1::tsquery AND m.channel_id = $2
  ORDER BY ts_rank(m.fts, $1::tsquery, 1) DESC, m.id LIMIT $3`;

/**
 * The PostgreSQL implementation of the MessageStore port, over the append-only `messages` table
 * (a trigger refuses updates). Appends take the write lock (`writePg`), so message ids become
 * visible in order and an extraction watermark never skips a message committed late; an external id
 * a sender already has in a channel (the unique index of steps 2 and 5) is answered with the stored message.
 */
export function createPostgresMessageStore(database: PostgresDatabase, vectors: PostgresVectorIndex): MessageStore {
  const writes = createPostgresMemoryWrites(vectors, database);
  const list = async (doing: string, sql: string, parameters: unknown[]) =>
    withPgErrors(doing, async () => (await database.query<MessageRow>(sql, parameters)).rows.map(toMessage));
  const count = async (
    doing: string,
    column: 'channel_id' | 'topic_id',
    key: string,
    after: number,
    role?: MessageRole,
  ) =>
    withPgErrors(doing, async () => {
      const { rows } = await database.query<{ count: number }>(
        `SELECT count(*) AS count FROM messages WHERE ${column} = $1 AND id > $2 ${role ? 'AND role = $3' : ''}`,
        [key, after, ...(role ? [role] : [])],
      );
      return rows[0]?.count ?? 0;
    });

  return {
    async append(messages, options = {}) {
      return writePg(database, 'appending messages', async (q) => {
        if (options.purges !== undefined && (await countPurges(q)) !== options.purges) throw purgedMeanwhile();
        if (options.keyId !== undefined) {
          const { rows } = await q.query('SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL', [
            options.keyId,
          ]);
          if (rows.length === 0) throw keyGone();
        }
        // Every writing transaction holds the write lock: a space to start must not exist yet (before the topics
        // below are created), unless its sender is in it.
        for (const { join, userId } of joinsOnlyIfNew(messages)) {
          const table = join.kind === 'channel' ? 'channels' : join.kind === 'topic' ? 'topics' : 'projects';
          const { rows } = await q.query<{ exists: boolean; member: boolean }>(
            `SELECT (EXISTS (SELECT 1 FROM ${table} WHERE id = $2)
                     OR EXISTS (SELECT 1 FROM members WHERE kind = $1 AND space_id = $2)) AS exists,
                    EXISTS (SELECT 1 FROM members WHERE kind = $1 AND space_id = $2 AND user_id = $3) AS member`,
            [join.kind, join.id, userId],
          );
          if (rows[0]?.exists === true && rows[0].member !== true) throw spaceStartedMeanwhile(join, userId);
        }
        const at = options.at ?? Date.now();
        for (const topicId of options.topics ?? []) {
          await q.query(
            'INSERT INTO topics (id, project_id, title, created_at) VALUES ($1, NULL, NULL, $2) ON CONFLICT (id) DO NOTHING',
            [topicId, at],
          );
        }
        for (const user of options.names ?? []) await putPostgresUserName(database, q, user, at);
        // Every sender is a known user (ADR 40), and the members these messages add are their senders.
        await knowPostgresUsers(
          database,
          q,
          messages.map((message) => message.senderId),
          at,
        );
        const file = options.file;
        if (file?.after !== undefined) {
          // Every writing transaction holds the write lock: no other run moves the record meanwhile.
          const { rows } = await q.query<{ line: number }>(
            'SELECT line FROM ingest_files WHERE md5(path) = md5($1) AND path = $1',
            [file.path],
          );
          const recorded = Number(rows[0]?.line ?? 0);
          if (recorded !== file.after) throw fileProgressMoved(file.path, file.after, recorded);
        }
        const stored: StoredMessage[] = [];
        for (const message of messages) {
          const previous = stored.at(-1);
          const replyTo = message.repliesToPrevious ? (previous?.id ?? null) : (message.replyTo ?? null);
          const externalId = message.externalId ?? null;
          // A reply without an id of its own, after a duplicate that already has its reply, is that reply.
          const earlier =
            externalId === null
              ? message.repliesToPrevious && previous?.duplicate
                ? (
                    await q.query<MessageRow>(
                      `SELECT ${columns} FROM messages WHERE reply_to = $1 AND sender_id = $2 AND role = $3
                       ORDER BY id LIMIT 1`,
                      [previous.id, message.senderId, message.role],
                    )
                  ).rows[0]
                : undefined
              : (
                  await q.query<MessageRow>(
                    `SELECT ${columns} FROM messages WHERE channel_id = $1 AND sender_id = $2 AND external_id = $3`,
                    [message.channelId, message.senderId, externalId],
                  )
                ).rows[0];
          if (earlier === undefined && !message.repliesToPrevious && replyTo !== null) {
            const { rows } = await q.query('SELECT 1 FROM messages WHERE id = $1', [replyTo]);
            if (rows.length === 0) throw replyGone(replyTo);
          }
          // The write lock makes the read above current; the conflict clause keeps a race out regardless.
          const sql = `INSERT INTO messages (channel_id, sender_id, role, content, topic_id, reply_to, external_id, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (channel_id, sender_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING ${columns}`;
          const row =
            earlier ??
            firstRow(
              await q.query<MessageRow>(sql, [
                message.channelId,
                message.senderId,
                message.role,
                message.content,
                message.topicId,
                replyTo,
                externalId,
                message.createdAt,
              ]),
              sql,
            );
          if (earlier === undefined) {
            for (const join of message.joins ?? []) {
              const { changed } = await q.query(
                `INSERT INTO members (kind, space_id, user_id, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
                [join.kind, join.id, message.senderId, join.at],
              );
              const marks = options.joinMarks;
              if (changed === 0 || !marks) continue;
              const mark = marks.mark({ ...join, userId: message.senderId });
              const put = await q.query(
                `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details)
                 VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (channel_id, task) DO NOTHING`,
                [mark.key, mark.task, mark.watermark, JSON.stringify(mark.details)],
              );
              if (put.changed > 0) marks.written.push(mark);
            }
          }
          const appended: StoredMessage = { ...toMessage(row), duplicate: earlier !== undefined };
          if (earlier === undefined && message.command) {
            appended.written = await writeCommand(q, writes, message.command, appended.id);
          }
          stored.push(appended);
        }
        if (file) {
          await q.query(
            `INSERT INTO ingest_files (path, line, prefix_sha256, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT ((md5(path))) DO UPDATE SET line = excluded.line, prefix_sha256 = excluded.prefix_sha256,
               updated_at = excluded.updated_at`,
            [file.path, file.line, file.prefixSha256, file.at],
          );
        }
        return stored;
      });
    },
    async purges() {
      return withPgErrors('reading the number of purges', () => countPurges(database));
    },
    async ingestFile(path) {
      return withPgErrors(`reading the ingest progress of ${path}`, async () => {
        const { rows } = await database.query<{ path: string; line: number; prefix_sha256: string }>(
          'SELECT path, line, prefix_sha256 FROM ingest_files WHERE md5(path) = md5($1) AND path = $1',
          [path],
        );
        const row = rows[0];
        return row ? { path: row.path, line: row.line, prefixSha256: row.prefix_sha256 } : null;
      });
    },
    async get(ids) {
      if (ids.length === 0) return [];
      const rows = await list('reading messages', `SELECT ${columns} FROM messages WHERE id = ANY($1::bigint[])`, [
        [...ids],
      ]);
      const byId = new Map(rows.map((row) => [row.id, row]));
      return ids.flatMap((id) => {
        const row = byId.get(id);
        return row ? [row] : [];
      });
    },
    async listAfter(channelId, afterMessageId, limit) {
      return list(
        `reading messages of channel ${channelId}`,
        `SELECT ${columns} FROM messages WHERE channel_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [channelId, afterMessageId, limit],
      );
    },
    async listBefore(channelId, beforeMessageId, limit) {
      return list(
        `reading messages of channel ${channelId}`,
        `SELECT * FROM (SELECT ${columns} FROM messages WHERE channel_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3) AS latest
         ORDER BY id`,
        [channelId, beforeMessageId, limit],
      );
    },
    async listTopicAfter(topicId, afterMessageId, limit) {
      return list(
        `reading messages of topic ${topicId}`,
        `SELECT ${columns} FROM messages WHERE topic_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [topicId, afterMessageId, limit],
      );
    },
    async recent(channelId, count) {
      return list(
        `reading recent messages of channel ${channelId}`,
        `SELECT * FROM (SELECT ${columns} FROM messages WHERE channel_id = $1 ORDER BY id DESC LIMIT $2) AS last ORDER BY id`,
        [channelId, count],
      );
    },
    async recentUserMessages(channelId, count) {
      return list(
        `reading recent user messages of channel ${channelId}`,
        `SELECT * FROM (SELECT ${columns} FROM messages WHERE channel_id = $1 AND role = 'user' ORDER BY id DESC LIMIT $2)
           AS last ORDER BY id`,
        [channelId, count],
      );
    },
    async countAfter(channelId, afterMessageId, role) {
      return count(`counting messages of channel ${channelId}`, 'channel_id', channelId, afterMessageId, role);
    },
    async countTopicAfter(topicId, afterMessageId, role) {
      return count(`counting messages of topic ${topicId}`, 'topic_id', topicId, afterMessageId, role);
    },
    async latestId(channelId) {
      return withPgErrors(`reading the newest message of channel ${channelId}`, async () => {
        const { rows } = await database.query<{ id: number | null }>(
          'SELECT MAX(id) AS id FROM messages WHERE channel_id = $1',
          [channelId],
        );
        return rows[0]?.id ?? 0;
      });
    },
    async topicIds() {
      return withPgErrors('listing topics', async () => {
        const { rows } = await database.query<{ topic_id: string }>(
          'SELECT DISTINCT topic_id COLLATE "C" AS topic_id FROM messages WHERE topic_id IS NOT NULL ORDER BY 1',
        );
        return rows.map((row) => row.topic_id);
      });
    },
    async channelIds() {
      return withPgErrors('listing channels', async () => {
        const { rows } = await database.query<{ channel_id: string }>(
          'SELECT DISTINCT channel_id COLLATE "C" AS channel_id FROM messages ORDER BY 1',
        );
        return rows.map((row) => row.channel_id);
      });
    },
    async searchText(channelId, terms, limit) {
      if (terms.length === 0 || limit <= 0) return [];
      const doing = `searching messages of channel ${channelId}`;
      // The words as `fts` has them (`simple`: lower case, no stemming), never read as query syntax.
      const lexemes = await withPgErrors(doing, async () => {
        const { rows } = await database.query<{ lexemes: string[] }>(
          `SELECT tsvector_to_array(to_tsvector('simple'::regconfig, array_to_string($1::text[], ' '))) AS lexemes`,
          [[...terms]],
        );
        return rows[0]?.lexemes ?? [];
      });
      const query = orLexemeQuery(lexemes);
      if (query === null) return [];
      return list(doing, messageSearchSql, [query, channelId, limit]);
    },
  };
}

/** Writes a message's chat command inside its append's transaction (`CommandWrite`). */
async function writeCommand(
  q: PostgresQueryable,
  writes: PostgresMemoryWrites,
  command: CommandWrite,
  messageId: number,
): Promise<CommandWritten> {
  if ('remember' in command) {
    const row = await writes.insert(q, { ...command.remember, sourceMessageIds: [messageId] }, command.context);
    return { remembered: toMemory(row), forgotten: [] };
  }
  const { owners, userId, matches } = command.forget;
  const { rows } = await q.query<{ id: string | number; content: string }>(
    `SELECT id, content FROM memories WHERE owner = ANY($1::text[]) AND user_id = $2 AND archived_at IS NULL
     ORDER BY id`,
    [[...owners], userId],
  );
  const forgotten = [];
  for (const row of rows) {
    if (matches(row.content)) forgotten.push(toMemory(await writes.archive(q, Number(row.id), command.context)));
  }
  return { remembered: null, forgotten };
}

/** How many purges the database has had (`service_state.purges`). */
async function countPurges(q: PostgresQueryable): Promise<number> {
  const { rows } = await q.query<{ value: string | number }>("SELECT value FROM service_state WHERE name = 'purges'");
  return Number(rows[0]?.value ?? 0);
}
