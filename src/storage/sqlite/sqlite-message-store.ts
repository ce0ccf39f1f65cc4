import type Database from 'better-sqlite3';
import { keyToCount } from '../keyed-work.js';
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
  type SpaceJoin,
  type StoredMessage,
  spaceStartedMeanwhile,
} from '../message-store.js';
import {
  checkFilesInPlace,
  countKeyedWrite,
  getRow,
  preparedOnUse,
  readSqlite,
  toMnemeError,
} from './sqlite-database.js';
import { ftsQuery } from './sqlite-fts-query.js';
import { nextIdSql } from './sqlite-id-floors.js';
import { toMemory } from './sqlite-memory-rows.js';
import { createSqliteMemoryWrites, type SqliteMemoryWrites } from './sqlite-memory-writes.js';
import { createSqliteUserNames } from './sqlite-user-names.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

interface CountParameters {
  key: string;
  after: number;
  role: MessageRole | null;
}

/** The SQLite implementation of the MessageStore port, over the append-only `messages` table. */
export function createSqliteMessageStore(database: Database.Database, vectors: SqliteVectorIndex): MessageStore {
  const writes = createSqliteMemoryWrites(database, vectors);
  const purgeCount = database
    .prepare<[], number>("SELECT IFNULL((SELECT value FROM service_state WHERE name = 'purges'), 0)")
    .pluck();
  const countPurges = () => purgeCount.get() ?? 0;
  const activeKey = database
    .prepare<[number], number>('SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL')
    .pluck();
  const statements = {
    get: database.prepare<[number], MessageRow>('SELECT * FROM messages WHERE id = ?'),
    listAfter: database.prepare<[string, number, number], MessageRow>(
      'SELECT * FROM messages WHERE channel_id = ? AND id > ? ORDER BY id LIMIT ?',
    ),
    listBefore: database.prepare<[string, number, number], MessageRow>(
      'SELECT * FROM (SELECT * FROM messages WHERE channel_id = ? AND id < ? ORDER BY id DESC LIMIT ?) ORDER BY id',
    ),
    listTopicAfter: database.prepare<[string, number, number], MessageRow>(
      'SELECT * FROM messages WHERE topic_id = ? AND id > ? ORDER BY id LIMIT ?',
    ),
    recent: database.prepare<[string, number], MessageRow>(
      'SELECT * FROM (SELECT * FROM messages WHERE channel_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id',
    ),
    recentOfRole: database.prepare<[string, MessageRole, number], MessageRow>(
      'SELECT * FROM (SELECT * FROM messages WHERE channel_id = ? AND role = ? ORDER BY id DESC LIMIT ?) ORDER BY id',
    ),
    countAfter: database.prepare<CountParameters, { count: number }>(
      'SELECT COUNT(*) AS count FROM messages WHERE channel_id = @key AND id > @after AND (@role IS NULL OR role = @role)',
    ),
    countTopicAfter: database.prepare<CountParameters, { count: number }>(
      'SELECT COUNT(*) AS count FROM messages WHERE topic_id = @key AND id > @after AND (@role IS NULL OR role = @role)',
    ),
    latestId: database.prepare<[string], { id: number | null }>(
      'SELECT MAX(id) AS id FROM messages WHERE channel_id = ?',
    ),
    channelIds: database.prepare<[], { channelId: string }>(
      'SELECT DISTINCT channel_id AS channelId FROM messages ORDER BY channel_id',
    ),
    topicIds: database
      .prepare<[], string>('SELECT DISTINCT topic_id FROM messages WHERE topic_id IS NOT NULL ORDER BY topic_id')
      .pluck(),
    searchText: database.prepare<[string, string, number], MessageRow>(
      `SELECT m.* FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
      WHERE messages_fts MATCH ? AND m.channel_id = ? ORDER BY rank LIMIT ?`,
    ),
  };

  // Migration 14's column and table.
  const userNames = createSqliteUserNames(database);
  const retryable = {
    insert: preparedOnUse<
      [string, string, MessageRole, string, string | null, number | null, string | null, number],
      MessageRow
    >(
      database,
      `INSERT INTO messages (id, channel_id, sender_id, role, content, topic_id, reply_to, external_id, created_at)
      VALUES (${nextIdSql('messages')}, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (channel_id, sender_id, external_id) WHERE external_id IS NOT NULL DO NOTHING RETURNING *`,
    ),
    byExternalId: preparedOnUse<[string, string, string], MessageRow>(
      database,
      'SELECT * FROM messages WHERE channel_id = ? AND sender_id = ? AND external_id = ?',
    ),
    replyOf: preparedOnUse<[number, string, MessageRole], MessageRow>(
      database,
      'SELECT * FROM messages WHERE reply_to = ? AND sender_id = ? AND role = ? ORDER BY id LIMIT 1',
    ),
    putFile: preparedOnUse<[string, number, string, number]>(
      database,
      `INSERT INTO ingest_files (path, line, prefix_sha256, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (path) DO UPDATE SET line = excluded.line, prefix_sha256 = excluded.prefix_sha256,
        updated_at = excluded.updated_at`,
    ),
    isMember: preparedOnUse<[string, string, string], 1>(
      database,
      'SELECT 1 FROM members WHERE kind = ? AND space_id = ? AND user_id = ?',
    ),
    anyMember: preparedOnUse<[string, string], 1>(
      database,
      'SELECT 1 FROM members WHERE kind = ? AND space_id = ? LIMIT 1',
    ),
    channelRow: preparedOnUse<[string], 1>(database, 'SELECT 1 FROM channels WHERE id = ?'),
    topicRow: preparedOnUse<[string], 1>(database, 'SELECT 1 FROM topics WHERE id = ?'),
    projectRow: preparedOnUse<[string], 1>(database, 'SELECT 1 FROM projects WHERE id = ?'),
    join: preparedOnUse<[string, string, string, number]>(
      database,
      'INSERT INTO members (kind, space_id, user_id, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
    putMark: preparedOnUse<[string, string, number, string]>(
      database,
      `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details) VALUES (?, ?, ?, NULL, ?)
        ON CONFLICT (channel_id, task) DO NOTHING`,
    ),
    putTopic: preparedOnUse<[string, number]>(
      database,
      'INSERT INTO topics (id, project_id, title, created_at) VALUES (?, NULL, NULL, ?) ON CONFLICT (id) DO NOTHING',
    ),
    getFile: preparedOnUse<[string], { path: string; line: number; prefix_sha256: string }>(
      database,
      'SELECT path, line, prefix_sha256 FROM ingest_files WHERE path = ?',
    ),
  };

  /** Whether a space exists: its row, or a member (a channel is started by its first message's membership). */
  const spaceExists = ({ kind, id }: SpaceJoin): boolean => {
    const row =
      kind === 'channel' ? retryable.channelRow() : kind === 'topic' ? retryable.topicRow() : retryable.projectRow();
    return row.get(id) !== undefined || retryable.anyMember().get(kind, id) !== undefined;
  };

  return {
    async append(messages, options = {}) {
      try {
        const keyed = database.inTransaction ? null : keyToCount();
        return database
          .transaction(() => {
            const count = keyed === null ? null : countKeyedWrite(database, keyed);
            if (options.purges !== undefined && countPurges() !== options.purges) throw purgedMeanwhile();
            if (options.keyId !== undefined && !activeKey.get(options.keyId)) throw keyGone();
            // Before the topics below are created: a space to start must not exist yet, unless its sender is in it.
            for (const { join, userId } of joinsOnlyIfNew(messages)) {
              if (spaceExists(join) && !retryable.isMember().get(join.kind, join.id, userId)) {
                throw spaceStartedMeanwhile(join, userId);
              }
            }
            const at = options.at ?? Date.now();
            for (const topicId of options.topics ?? []) retryable.putTopic().run(topicId, at);
            for (const user of options.names ?? []) userNames.put(user, at);
            // Every sender is a known user (ADR 40), and the members these messages add are their senders.
            userNames.know(
              messages.map((message) => message.senderId),
              at,
            );
            const file = options.file;
            if (file?.after !== undefined) {
              const recorded = retryable.getFile().get(file.path)?.line ?? 0;
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
                    ? retryable.replyOf().get(previous.id, message.senderId, message.role)
                    : undefined
                  : retryable.byExternalId().get(message.channelId, message.senderId, externalId);
              if (
                earlier === undefined &&
                !message.repliesToPrevious &&
                replyTo !== null &&
                !statements.get.get(replyTo)
              )
                throw replyGone(replyTo);
              const row =
                earlier ??
                retryable
                  .insert()
                  .get(
                    message.channelId,
                    message.senderId,
                    message.role,
                    message.content,
                    message.topicId,
                    replyTo,
                    externalId,
                    message.createdAt,
                  );
              if (!row)
                throw new Error(`message ${externalId} of channel ${message.channelId} was neither stored nor found`);
              if (earlier === undefined) {
                for (const join of message.joins ?? []) {
                  const { changes } = retryable.join().run(join.kind, join.id, message.senderId, join.at);
                  const marks = options.joinMarks;
                  if (changes === 0 || !marks) continue;
                  const mark = marks.mark({ ...join, userId: message.senderId });
                  const details = JSON.stringify(mark.details);
                  if (retryable.putMark().run(mark.key, mark.task, mark.watermark, details).changes > 0) {
                    marks.written.push(mark);
                  }
                }
              }
              const appended: StoredMessage = { ...toMessage(row), duplicate: earlier !== undefined };
              if (earlier === undefined && message.command) {
                appended.written = writeCommand(database, writes, message.command, appended.id);
              }
              stored.push(appended);
            }
            if (file) retryable.putFile().run(file.path, file.line, file.prefixSha256, file.at);
            count?.();
            checkFilesInPlace(database);
            return stored;
          })
          .immediate();
      } catch (error) {
        throw toMnemeError(error, 'appending messages');
      }
    },
    async purges() {
      return readSqlite('reading the number of purges', countPurges);
    },
    async ingestFile(path) {
      return readSqlite(`reading the ingest progress of ${path}`, () => {
        const row = retryable.getFile().get(path);
        return row ? { path: row.path, line: row.line, prefixSha256: row.prefix_sha256 } : null;
      });
    },
    async get(ids) {
      return readSqlite('reading messages', () =>
        ids.flatMap((id) => {
          const row = statements.get.get(id);
          return row ? [toMessage(row)] : [];
        }),
      );
    },
    async listAfter(channelId, afterMessageId, limit) {
      return readSqlite(`reading messages of channel ${channelId}`, () =>
        statements.listAfter.all(channelId, afterMessageId, limit).map(toMessage),
      );
    },
    async listBefore(channelId, beforeMessageId, limit) {
      return readSqlite(`reading messages of channel ${channelId}`, () =>
        statements.listBefore.all(channelId, beforeMessageId, limit).map(toMessage),
      );
    },
    async listTopicAfter(topicId, afterMessageId, limit) {
      return readSqlite(`reading messages of topic ${topicId}`, () =>
        statements.listTopicAfter.all(topicId, afterMessageId, limit).map(toMessage),
      );
    },
    async recent(channelId, count) {
      return readSqlite(`reading recent messages of channel ${channelId}`, () =>
        statements.recent.all(channelId, count).map(toMessage),
      );
    },
    async recentUserMessages(channelId, count) {
      return readSqlite(`reading recent user messages of channel ${channelId}`, () =>
        statements.recentOfRole.all(channelId, 'user', count).map(toMessage),
      );
    },
    async countAfter(channelId, afterMessageId, role) {
      return readSqlite(
        `counting messages of channel ${channelId}`,
        () => getRow(statements.countAfter, { key: channelId, after: afterMessageId, role: role ?? null }).count,
      );
    },
    async countTopicAfter(topicId, afterMessageId, role) {
      return readSqlite(
        `counting messages of topic ${topicId}`,
        () => getRow(statements.countTopicAfter, { key: topicId, after: afterMessageId, role: role ?? null }).count,
      );
    },
    async latestId(channelId) {
      return readSqlite(
        `reading the newest message of channel ${channelId}`,
        () => getRow(statements.latestId, channelId).id ?? 0,
      );
    },
    async topicIds() {
      return readSqlite('listing topics', () => statements.topicIds.all());
    },
    async channelIds() {
      return readSqlite('listing channels', () => statements.channelIds.all().map((row) => row.channelId));
    },
    async searchText(channelId, terms, limit) {
      const query = ftsQuery(terms);
      if (query === null || limit <= 0) return [];
      return readSqlite(`searching messages of channel ${channelId}`, () =>
        statements.searchText.all(query, channelId, limit).map(toMessage),
      );
    },
  };
}

/** Writes a message's chat command inside its append's transaction (`CommandWrite`). */
function writeCommand(
  database: Database.Database,
  writes: SqliteMemoryWrites,
  command: CommandWrite,
  messageId: number,
): CommandWritten {
  if ('remember' in command) {
    const row = writes.insert({ ...command.remember, sourceMessageIds: [messageId] }, command.context);
    return { remembered: toMemory(row), forgotten: [] };
  }
  const { owners, userId, matches } = command.forget;
  const candidates = database
    .prepare<[string, string], { id: number; content: string }>(
      `SELECT id, content FROM memories WHERE owner IN (SELECT value FROM json_each(?)) AND user_id = ?
        AND archived_at IS NULL ORDER BY id`,
    )
    .all(JSON.stringify(owners), userId);
  const forgotten = candidates
    .filter((candidate) => matches(candidate.content))
    .map((candidate) => toMemory(writes.archive(candidate.id, command.context)));
  return { remembered: null, forgotten };
}
