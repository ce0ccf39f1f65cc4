import Database from 'better-sqlite3';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { nameKey } from '../../core/name-key.js';
import { leftNamesText, storedLeftNames } from '../../core/speaker-label.js';
import type { MaintenanceState } from '../maintenance-state-store.js';
import type { ChannelVisibility, SpaceKind } from '../membership-store.js';
import { type MessageRow, toMessage } from '../message-rows.js';
import {
  IMPORT_TARGET_NOT_EMPTY,
  type ImportSession,
  ingestFileRecorded,
  type TransferChannel,
  type TransferFilter,
  type TransferLink,
  type TransferMembership,
  type TransferMemory,
  type TransferStore,
} from '../transfer-store.js';
import {
  checkFilesInPlace,
  DEFAULT_BUSY_TIMEOUT_MS,
  preparedOnUse,
  readSqlite,
  toMnemeError,
} from './sqlite-database.js';
import { nextIdSql } from './sqlite-id-floors.js';
import { type MemoryRow, toMemory, toVersion, type VersionRow } from './sqlite-memory-rows.js';
import { createSqliteSpeakerLabels } from './sqlite-speaker-labels.js';
import { createSqliteUserNames } from './sqlite-user-names.js';

/** KiB of page cache while an import runs (better-sqlite3 builds SQLite with 16,000), then the connection's own again. */
const IMPORT_CACHE_KIB = 65_536;

/** The named parameters of a filtered read: the filter's lists as JSON (read with `json_each`). */
interface FilterParameters {
  filtered: 0 | 1;
  userId: string | null;
  channels: string;
  owners: string;
}

// A user's messages: those of their channels and what they said elsewhere, not an assistant reply sent under an id a
// person may hold too (`assistant` unless the caller names another; attack27a).
const MESSAGE_FILTER = `(@filtered = 0 OR channel_id IN (SELECT value FROM json_each(@channels))
  OR (sender_id = @userId AND role <> 'assistant'))`;
const memoryFilter = (alias: string) =>
  `(@filtered = 0 OR ${alias}.owner IN (SELECT value FROM json_each(@owners))
    OR (${alias}.owner = 'global' AND ${alias}.user_id = @userId))`;

function filterParameters(filter: TransferFilter | undefined): FilterParameters {
  return filter
    ? {
        filtered: 1,
        userId: filter.userId,
        channels: JSON.stringify(filter.channelIds),
        owners: JSON.stringify(filter.owners),
      }
    : { filtered: 0, userId: null, channels: '[]', owners: '[]' };
}

/** A page of one table keyed by a text id, optionally only the ids given. */
function pageById<Row>(database: Database.Database, table: string, order = 'id') {
  const statement = database.prepare<{ after: string | null; limit: number; ids: string | null }, Row>(
    `SELECT * FROM ${table} WHERE (@after IS NULL OR id > @after)
      AND (@ids IS NULL OR id IN (SELECT value FROM json_each(@ids))) ORDER BY ${order} LIMIT @limit`,
  );
  return (after: string | null, limit: number, ids?: readonly string[]) =>
    statement.all({ after, limit, ids: ids ? JSON.stringify(ids) : null });
}

/** The SQLite implementation of the TransferStore port: paged reads for export, one transaction for an import. */
export function createSqliteTransferStore(database: Database.Database): TransferStore {
  const users = pageById<{
    id: string;
    display_name: string | null;
    created_at: number;
    updated_at: number;
    left_name: string | null;
    left_at: number | null;
  }>(database, 'users');
  const projects = pageById<{ id: string; name: string | null; managed: 0 | 1; created_at: number }>(
    database,
    'projects',
  );
  const topics = pageById<{ id: string; project_id: string | null; title: string | null; created_at: number }>(
    database,
    'topics',
  );
  const channels = pageById<{ id: string; visibility: ChannelVisibility; created_at: number; updated_at: number }>(
    database,
    'channels',
  );
  // Prepared at first use: a store opened on a schema before migration 33 (tests of migrations) has no such column.
  let leftNames: Database.Statement<{ ids: string | null }, { left_name: string | null; left_at: number | null }>;
  const leftNamesOf = () => {
    leftNames ??= database.prepare(
      `SELECT left_name, left_at FROM users WHERE left_name IS NOT NULL
        AND (@ids IS NULL OR id IN (SELECT value FROM json_each(@ids)))`,
    );
    return leftNames;
  };
  const statements = {
    empty: database.prepare<[], { found: number }>(
      `SELECT EXISTS (SELECT 1 FROM users) + EXISTS (SELECT 1 FROM topics) + EXISTS (SELECT 1 FROM projects)
        + EXISTS (SELECT 1 FROM channels) + EXISTS (SELECT 1 FROM members) + EXISTS (SELECT 1 FROM messages)
        + EXISTS (SELECT 1 FROM memories) + EXISTS (SELECT 1 FROM api_keys) AS found`,
    ),
    horizon: database.prepare<[], { messageId: number; memoryId: number; linkId: number }>(
      `SELECT (SELECT COALESCE(MAX(id), 0) FROM messages) AS messageId,
        (SELECT COALESCE(MAX(id), 0) FROM memories) AS memoryId,
        (SELECT COALESCE(MAX(id), 0) FROM memory_links) AS linkId`,
    ),
    memberships: database.prepare<
      { kind: string | null; spaceId: string; userId: string; limit: number; only: string | null },
      { kind: SpaceKind; space_id: string; user_id: string; added_at: number }
    >(
      `SELECT * FROM members WHERE (@kind IS NULL OR (kind, space_id, user_id) > (@kind, @spaceId, @userId))
        AND (@only IS NULL OR user_id = @only) ORDER BY kind, space_id, user_id LIMIT @limit`,
    ),
    messages: database.prepare<FilterParameters & { after: number; limit: number }, MessageRow>(
      `SELECT * FROM messages WHERE id > @after AND ${MESSAGE_FILTER} ORDER BY id LIMIT @limit`,
    ),
    memories: database.prepare<FilterParameters & { after: number; limit: number }, MemoryRow & ChunkColumns>(
      `SELECT * FROM memories m WHERE m.id > @after AND ${memoryFilter('m')} ORDER BY m.id LIMIT @limit`,
    ),
    versions: database.prepare<[string], VersionRow>(
      `SELECT * FROM memory_versions WHERE memory_id IN (SELECT value FROM json_each(?))
        ORDER BY memory_id, version`,
    ),
    links: database.prepare<
      FilterParameters & { after: number; limit: number },
      {
        id: number;
        source_id: number;
        target_id: number;
        type: TransferLink['type'];
        strength: number;
        created_at: number;
      }
    >(
      `SELECT l.* FROM memory_links l WHERE l.id > @after AND (@filtered = 0 OR (
          EXISTS (SELECT 1 FROM memories m WHERE m.id = l.source_id AND ${memoryFilter('m')})
          AND EXISTS (SELECT 1 FROM memories m WHERE m.id = l.target_id AND ${memoryFilter('m')})))
        ORDER BY l.id LIMIT @limit`,
    ),
    watermarks: database.prepare<
      [],
      { channel_id: string; task: string; watermark: number | null; last_run_at: number | null; details: string | null }
    >('SELECT * FROM maintenance_state ORDER BY channel_id, task'),
    // A table of a later migration than some files tests open (`migrateTo`): prepared when first read.
    ingestFiles: preparedOnUse<[], { path: string; line: number; prefix_sha256: string; updated_at: number }>(
      database,
      'SELECT path, line, prefix_sha256, updated_at FROM ingest_files ORDER BY path',
    ),
    // Keys whose work was done (ADR 37), not an administrator key's (API keys are not exported), by (principal, key).
    idempotencyKeys: preparedOnUse<
      { principal: string | null; key: string; now: number; limit: number },
      { principal: string; key: string; request_sha256: string; status: number | null; expires_at: number }
    >(
      database,
      `SELECT principal, key, request_sha256, status, expires_at FROM idempotency_keys
        WHERE expires_at > @now AND (status IS NOT NULL OR committed > 0) AND principal NOT LIKE 'admin-key:%'
          AND (@principal IS NULL OR principal > @principal OR (principal = @principal AND key > @key))
        ORDER BY principal, key LIMIT @limit`,
    ),
    messageIds: database.prepare<FilterParameters & { ids: string }, number>(
      `SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(@ids)) AND ${MESSAGE_FILTER}`,
    ),
    memoryIds: database.prepare<FilterParameters & { ids: string }, number>(
      `SELECT m.id FROM memories m WHERE m.id IN (SELECT value FROM json_each(@ids)) AND ${memoryFilter('m')}`,
    ),
    spacesOf: database.prepare<[string], { kind: SpaceKind; id: string }>(
      'SELECT kind, space_id AS id FROM members WHERE user_id = ? ORDER BY kind, space_id',
    ),
    referencedUsers: database.prepare<FilterParameters, { id: string }>(
      `SELECT @userId AS id
        UNION SELECT sender_id FROM messages WHERE ${MESSAGE_FILTER}
        UNION SELECT m.user_id FROM memories m WHERE m.user_id IS NOT NULL AND ${memoryFilter('m')}
        ORDER BY id`,
    ),
    referencedTopics: database.prepare<FilterParameters, { id: string }>(
      `SELECT space_id AS id FROM members WHERE kind = 'topic' AND user_id = @userId
        UNION SELECT topic_id FROM messages WHERE topic_id IS NOT NULL AND ${MESSAGE_FILTER}
        UNION SELECT m.topic_id FROM memories m WHERE m.topic_id IS NOT NULL AND ${memoryFilter('m')}
        ORDER BY id`,
    ),
    referencedProjects: database.prepare<FilterParameters & { topics: string }, { id: string }>(
      `SELECT space_id AS id FROM members WHERE kind = 'project' AND user_id = @userId
        UNION SELECT m.project_id FROM memories m WHERE m.project_id IS NOT NULL AND ${memoryFilter('m')}
        UNION SELECT project_id FROM topics WHERE project_id IS NOT NULL
          AND id IN (SELECT value FROM json_each(@topics))
        ORDER BY id`,
    ),
  };

  return {
    async horizon() {
      return readSqlite('reading the newest ids', () => {
        const row = statements.horizon.get();
        return row ?? { messageId: 0, memoryId: 0, linkId: 0 };
      });
    },
    async isEmpty() {
      return readSqlite('checking that the database is empty', () => statements.empty.get()?.found === 0);
    },
    async users(after, limit, ids) {
      return readSqlite('reading users', () =>
        users(after, limit, ids).map((row) => ({
          id: row.id,
          displayName: row.display_name,
          createdAt: row.created_at,
          updatedAt: row.updated_at,
          leftNames: storedLeftNames(row.left_name, row.left_at),
        })),
      );
    },
    async hasLeftNames(ids) {
      return readSqlite('reading the names users left', () =>
        leftNamesOf()
          .all({ ids: ids ? JSON.stringify(ids) : null })
          .some((row) => storedLeftNames(row.left_name, row.left_at).length > 0),
      );
    },
    async projects(after, limit, ids) {
      return readSqlite('reading projects', () =>
        projects(after, limit, ids).map((row) => ({
          id: row.id,
          name: row.name,
          managed: row.managed === 1,
          createdAt: row.created_at,
        })),
      );
    },
    async topics(after, limit, ids) {
      return readSqlite('reading topics', () =>
        topics(after, limit, ids).map((row) => ({
          id: row.id,
          projectId: row.project_id,
          title: row.title,
          createdAt: row.created_at,
        })),
      );
    },
    async channels(after, limit, ids) {
      return readSqlite('reading channels', () =>
        channels(after, limit, ids).map(
          (row): TransferChannel => ({
            id: row.id,
            visibility: row.visibility,
            createdAt: row.created_at,
            updatedAt: row.updated_at,
          }),
        ),
      );
    },
    async memberships(after, limit, userId) {
      return readSqlite('reading memberships', () =>
        statements.memberships
          .all({
            kind: after?.kind ?? null,
            spaceId: after?.spaceId ?? '',
            userId: after?.userId ?? '',
            limit,
            only: userId ?? null,
          })
          .map(
            (row): TransferMembership => ({
              kind: row.kind,
              spaceId: row.space_id,
              userId: row.user_id,
              addedAt: row.added_at,
            }),
          ),
      );
    },
    async messages(afterId, limit, filter) {
      return readSqlite('reading messages', () =>
        statements.messages.all({ ...filterParameters(filter), after: afterId, limit }).map(toMessage),
      );
    },
    async memories(afterId, limit, filter) {
      return readSqlite('reading memories', () =>
        statements.memories.all({ ...filterParameters(filter), after: afterId, limit }).map(toTransferMemory),
      );
    },
    async versions(memoryIds) {
      if (memoryIds.length === 0) return [];
      return readSqlite('reading versions', () => statements.versions.all(JSON.stringify(memoryIds)).map(toVersion));
    },
    async links(afterId, limit, filter) {
      return readSqlite('reading links', () =>
        statements.links.all({ ...filterParameters(filter), after: afterId, limit }).map((row) => ({
          id: row.id,
          sourceId: row.source_id,
          targetId: row.target_id,
          type: row.type,
          strength: row.strength,
          createdAt: row.created_at,
        })),
      );
    },
    async watermarks() {
      return readSqlite('reading watermarks', () =>
        statements.watermarks.all().map(
          (row): MaintenanceState => ({
            channelId: row.channel_id,
            task: row.task,
            watermark: row.watermark,
            lastRunAt: row.last_run_at,
            details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
          }),
        ),
      );
    },
    async ingestFiles() {
      return readSqlite('reading the file records of mneme ingest', () =>
        statements
          .ingestFiles()
          .all()
          .map((row) => ({
            path: row.path,
            line: row.line,
            prefixSha256: row.prefix_sha256,
            updatedAt: row.updated_at,
          })),
      );
    },
    async idempotencyKeys(after, limit, now) {
      return readSqlite('reading idempotency keys', () =>
        statements
          .idempotencyKeys()
          .all({ principal: after?.principal ?? null, key: after?.key ?? '', now, limit })
          .map((row) => ({
            principal: row.principal,
            key: row.key,
            requestSha256: row.request_sha256,
            status: row.status,
            expiresAt: row.expires_at,
          })),
      );
    },
    async spacesOf(userId) {
      return readSqlite(`reading the spaces of ${userId}`, () => statements.spacesOf.all(userId));
    },
    async referencedBy(filter) {
      return readSqlite('reading what a per-user export names', () => {
        const parameters = filterParameters(filter);
        const topicIds = statements.referencedTopics.all(parameters).map((row) => row.id);
        return {
          userIds: statements.referencedUsers.all(parameters).map((row) => row.id),
          topicIds,
          projectIds: statements.referencedProjects
            .all({ ...parameters, topics: JSON.stringify(topicIds) })
            .map((row) => row.id),
        };
      });
    },
    async messageIds(ids, filter) {
      if (ids.length === 0) return new Set();
      return readSqlite('reading which messages exist', () =>
        statements.messageIds.pluck().all({ ...filterParameters(filter), ids: JSON.stringify(ids) }),
      ).reduce((found, id) => found.add(id), new Set<number>());
    },
    async memoryIds(ids, filter) {
      if (ids.length === 0) return new Set();
      return readSqlite('reading which memories exist', () =>
        statements.memoryIds.pluck().all({ ...filterParameters(filter), ids: JSON.stringify(ids) }),
      ).reduce((found, id) => found.add(id), new Set<number>());
    },
    async snapshot() {
      const connection = readSqlite('opening a snapshot of the database for the export', () => openSnapshot(database));
      try {
        const {
          isEmpty: _isEmpty,
          snapshot: _snapshot,
          beginImport: _beginImport,
          ...reads
        } = createSqliteTransferStore(connection);
        return {
          ...reads,
          async close() {
            if (connection.open) connection.close();
          },
        };
      } catch (error) {
        connection.close();
        throw toMnemeError(error, 'opening a snapshot of the database for the export');
      }
    },
    async beginImport(options = {}) {
      // The connection's own page cache, given back after the import (searches need it warm and whole).
      const cacheSize = Number(database.pragma('cache_size', { simple: true }));
      try {
        // One transaction holds the whole import: a larger page cache keeps its pages from spilling.
        database.pragma(`cache_size = -${IMPORT_CACHE_KIB}`);
        database.exec('BEGIN IMMEDIATE');
      } catch (error) {
        database.pragma(`cache_size = ${cacheSize}`);
        throw toMnemeError(error, 'starting the import');
      }
      if (options.mustBeEmpty && statements.empty.get()?.found !== 0) {
        database.exec('ROLLBACK');
        database.pragma(`cache_size = ${cacheSize}`);
        throw new MnemeError(ErrorCode.Conflict, IMPORT_TARGET_NOT_EMPTY);
      }
      return createImportSession(database, cacheSize);
    },
  };
}

/**
 * A second connection that sees `database` as it is now until it is closed (ADR 31): on a file, a read-only
 * connection holding a read transaction (WAL: writers go on, the log keeps what the snapshot needs); in memory,
 * where no second connection can open the database, a copy of it.
 */
function openSnapshot(database: Database.Database): Database.Database {
  const inMemory = database.memory;
  const connection = inMemory
    ? new Database(database.serialize())
    : new Database(database.name, { readonly: true, fileMustExist: true });
  try {
    connection.pragma(`busy_timeout = ${DEFAULT_BUSY_TIMEOUT_MS}`);
    if (!inMemory) {
      connection.exec('BEGIN');
      // A read transaction takes its snapshot at its first read.
      connection.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    }
    return connection;
  } catch (error) {
    connection.close();
    throw error;
  }
}

interface ChunkColumns {
  chunk_message_id: number | null;
  chunk_index: number | null;
}

function toTransferMemory(row: MemoryRow & ChunkColumns): TransferMemory {
  const { embeddingModel: _model, ...memory } = toMemory(row);
  return {
    ...memory,
    owner: row.owner,
    decayedAt: row.decayed_at ?? null,
    searchContext: row.search_context ?? null,
    searchContextMessageId: row.search_context_message_id ?? null,
    chunkMessageId: row.chunk_message_id,
    chunkIndex: row.chunk_index,
  };
}

/** The import's statements, all run inside the one transaction `beginImport` opened. */
function createImportSession(database: Database.Database, cacheSize: number): ImportSession {
  let open = true;
  // Senders, members and the users of memories without a row in the file are known users all the same (ADR 40).
  const userNames = createSqliteUserNames(database);
  const statements = {
    user: database.prepare(
      `INSERT OR IGNORE INTO users (id, display_name, name_key, id_key, created_at, updated_at, left_name, left_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    project: database.prepare('INSERT INTO projects (id, name, managed, created_at) VALUES (?, ?, ?, ?)'),
    topic: database.prepare('INSERT INTO topics (id, project_id, title, created_at) VALUES (?, ?, ?, ?)'),
    channel: database.prepare('INSERT INTO channels (id, visibility, created_at, updated_at) VALUES (?, ?, ?, ?)'),
    member: database.prepare('INSERT OR IGNORE INTO members (kind, space_id, user_id, added_at) VALUES (?, ?, ?, ?)'),
    message: database.prepare<unknown[], { id: number }>(
      `INSERT INTO messages (id, channel_id, sender_id, role, content, topic_id, reply_to, created_at, external_id)
        VALUES (${nextIdSql('messages')}, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    memory: database.prepare<Record<string, unknown>, { id: number }>(
      `INSERT INTO memories (id, content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id,
        source, importance, strength, salience, access_count, last_accessed, pinned, source_message_ids,
        source_ids, valid_from, archived_at, faded_at, created_at, updated_at, decayed_at, search_context,
        search_context_message_id, chunk_message_id, chunk_index)
      VALUES (${nextIdSql('memories')}, @content, @category, @sector, @scope, @owner, @userId, @channelId, @projectId, @topicId, @source,
        @importance, @strength, @salience, @accessCount, @lastAccessedAt, @pinned, @sourceMessageIds, @sourceIds,
        @validFrom, @archivedAt, @fadedAt, @createdAt, @updatedAt, @decayedAt, @searchContext,
        @searchContextMessageId, @chunkMessageId, @chunkIndex) RETURNING id`,
    ),
    supersededBy: database.prepare('UPDATE memories SET superseded_by = ? WHERE id = ?'),
    sourceIds: database.prepare('UPDATE memories SET source_ids = ? WHERE id = ?'),
    version: database.prepare(
      `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    link: database.prepare(
      `INSERT OR IGNORE INTO memory_links (source_id, target_id, type, strength, created_at) VALUES (?, ?, ?, ?, ?)`,
    ),
    watermark: database.prepare(
      `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (channel_id, task) DO UPDATE SET watermark = excluded.watermark,
          last_run_at = excluded.last_run_at, details = excluded.details`,
    ),
    ingestFileLine: database.prepare<[string], number>('SELECT line FROM ingest_files WHERE path = ?').pluck(),
    ingestFile: database.prepare(
      'INSERT INTO ingest_files (path, line, prefix_sha256, updated_at) VALUES (?, ?, ?, ?)',
    ),
    idempotencyKey: database.prepare(
      `INSERT INTO idempotency_keys (principal, key, request_sha256, status, body, locked_until, expires_at, committed)
        VALUES (?, ?, ?, ?, NULL, 0, ?, 1) ON CONFLICT (principal, key) DO NOTHING`,
    ),
    clearPolicy: database.prepare('DELETE FROM policy_versions'),
    requireApiKeys: database.prepare<[number]>(
      "INSERT INTO service_state (name, value) VALUES ('first_api_key_at', ?) ON CONFLICT DO NOTHING",
    ),
    policy: database.prepare(
      'INSERT INTO policy_versions (version, preset, overrides, change, actor, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
  };

  /** Runs one write of the session; the first failure rolls the whole import back. */
  async function write<T>(doing: string, work: () => T): Promise<T> {
    if (!open) throw new MnemeError(ErrorCode.StoreFailed, `${doing}: the import was already ended`);
    try {
      return work();
    } catch (error) {
      rollback();
      throw toMnemeError(error, doing);
    }
  }

  function rollback(): void {
    if (!open) return;
    open = false;
    if (database.inTransaction) database.exec('ROLLBACK');
    database.pragma(`cache_size = ${cacheSize}`);
  }

  return {
    putUsers: (users) =>
      write('importing users', () => {
        for (const user of users) {
          const key = nameKey(user.displayName ?? user.id);
          const left = user.leftNames.length === 0 ? null : user.leftNames;
          statements.user.run(
            user.id,
            user.displayName,
            key,
            nameKey(user.id),
            user.createdAt,
            user.updatedAt,
            left === null ? null : leftNamesText(left),
            left?.at(-1)?.at ?? null,
          );
        }
      }),
    putProjects: (projects) =>
      write('importing projects', () => {
        for (const project of projects) {
          statements.project.run(project.id, project.name, project.managed ? 1 : 0, project.createdAt);
        }
      }),
    putTopics: (topics) =>
      write('importing topics', () => {
        for (const topic of topics) statements.topic.run(topic.id, topic.projectId, topic.title, topic.createdAt);
      }),
    putChannels: (channels) =>
      write('importing channels', () => {
        for (const channel of channels) {
          statements.channel.run(channel.id, channel.visibility, channel.createdAt, channel.updatedAt);
        }
      }),
    putMemberships: (memberships) =>
      write('importing memberships', () => {
        for (const member of memberships) {
          statements.member.run(member.kind, member.spaceId, member.userId, member.addedAt);
          userNames.know([member.userId], member.addedAt);
        }
      }),
    appendMessages: (messages) =>
      write('importing messages', () =>
        messages.map((message) => {
          const row = statements.message.get(
            message.channelId,
            message.senderId,
            message.role,
            message.content,
            message.topicId,
            message.replyTo,
            message.createdAt,
            message.externalId,
          );
          if (!row) throw new MnemeError(ErrorCode.StoreFailed, 'a message insert returned no id');
          userNames.know([message.senderId], message.createdAt);
          return row.id;
        }),
      ),
    insertMemories: (memories) =>
      write('importing memories', () =>
        memories.map((memory) => {
          const row = statements.memory.get({
            ...memory,
            pinned: memory.pinned ? 1 : 0,
            sourceMessageIds: JSON.stringify(memory.sourceMessageIds),
            sourceIds: JSON.stringify(memory.sourceIds),
          });
          if (!row) throw new MnemeError(ErrorCode.StoreFailed, 'a memory insert returned no id');
          if (memory.userId !== null) userNames.know([memory.userId], memory.createdAt);
          return row.id;
        }),
      ),
    setSupersededBy: (pairs) =>
      write('importing supersessions', () => {
        for (const [id, by] of pairs) statements.supersededBy.run(by, id);
      }),
    setSourceIds: (pairs) =>
      write('importing source memories', () => {
        for (const [id, sourceIds] of pairs) statements.sourceIds.run(JSON.stringify(sourceIds), id);
      }),
    addVersions: (versions) =>
      write('importing versions', () => {
        for (const version of versions) {
          statements.version.run(
            version.memoryId,
            version.version,
            version.action,
            version.actor,
            version.reason,
            JSON.stringify(version.changes),
            JSON.stringify(version.snapshot),
            version.createdAt,
          );
        }
      }),
    createReasons: (reasons) =>
      write(
        'reading the reasons of create versions',
        () =>
          new Set(
            database
              .prepare<[string], string>(
                `SELECT DISTINCT reason FROM memory_versions
                WHERE action = 'create' AND reason IN (SELECT value FROM json_each(?))`,
              )
              .pluck()
              .all(JSON.stringify(reasons)),
          ),
      ),
    addLinks: (links) =>
      write('importing links', () => {
        for (const link of links) {
          statements.link.run(link.sourceId, link.targetId, link.type, link.strength, link.createdAt);
        }
      }),
    setWatermarks: (states) =>
      write('importing watermarks', () => {
        for (const state of states) {
          statements.watermark.run(
            state.channelId,
            state.task,
            state.watermark,
            state.lastRunAt,
            state.details === null ? null : JSON.stringify(state.details),
          );
        }
      }),
    putIngestFiles: (files) =>
      write('importing the file records of mneme ingest', () => {
        for (const file of files) {
          const recorded = statements.ingestFileLine.get(file.path);
          if (recorded !== undefined) throw ingestFileRecorded(file.path, recorded);
          statements.ingestFile.run(file.path, file.line, file.prefixSha256, file.updatedAt);
        }
      }),
    putIdempotencyKeys: (keys) =>
      write('importing idempotency keys', () => {
        for (const key of keys) {
          statements.idempotencyKey.run(key.principal, key.key, key.requestSha256, key.status, key.expiresAt);
        }
      }),
    requireApiKeys: (at) =>
      write('importing the service state', () => {
        statements.requireApiKeys.run(at);
      }),
    replacePolicy: (versions) =>
      write('importing the policy', () => {
        statements.clearPolicy.run();
        for (const version of versions) {
          statements.policy.run(
            version.version,
            version.preset,
            JSON.stringify(version.overrides),
            version.change,
            version.actor,
            version.createdAt,
          );
        }
      }),
    commit: () =>
      write('committing the import', () => {
        // A file may hold a user's plain name beside a user another can take it for (ADR 44).
        createSqliteSpeakerLabels(database).labelEveryNamesake(Date.now());
        checkFilesInPlace(database);
        database.exec('COMMIT');
        open = false;
        database.pragma(`cache_size = ${cacheSize}`);
      }),
    async rollback() {
      rollback();
    },
  };
}
