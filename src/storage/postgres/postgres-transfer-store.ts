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
  type TransferFilter,
  type TransferLink,
  type TransferMemory,
  type TransferStore,
} from '../transfer-store.js';
import {
  type PostgresDatabase,
  type PostgresQueryable,
  toMnemeErrorPg,
  WRITE_LOCK,
  withPgErrors,
} from './postgres-database.js';
import { memoryColumnsOf, type PgMemoryRow, type PgVersionRow, toMemory, toVersion } from './postgres-memory-rows.js';
import { labelEveryPostgresNamesake } from './postgres-speaker-labels.js';
import { knowPostgresUsers } from './postgres-user-names.js';

const messageColumns = 'id, channel_id, sender_id, role, content, topic_id, reply_to, external_id, created_at';

/**
 * The filter of a per-user read as SQL: `$1` is whether to filter, `$2` the user id, `$3` the channel
 * ids (messages) and the owner keys at `$owners` (memories); `filterValues` gives them.
 */
// A user's messages: those of their channels and what they said elsewhere, not an assistant reply sent under an id a
// person may hold too (`assistant` unless the caller names another; attack27a).
const messageFilter =
  "(NOT $1::boolean OR channel_id = ANY($3::text[]) OR (sender_id = $2::text AND role <> 'assistant'))";
const memoryFilter = (alias: string, owners: number) =>
  `(NOT $1::boolean OR ${alias}.owner = ANY($${owners}::text[])
    OR (${alias}.owner = 'global' AND ${alias}.user_id = $2::text))`;

function filterValues(filter: TransferFilter | undefined, lists: ReadonlyArray<'channels' | 'owners'>): unknown[] {
  return [
    filter !== undefined,
    filter?.userId ?? null,
    ...lists.map((list) => [...((list === 'channels' ? filter?.channelIds : filter?.owners) ?? [])]),
  ];
}

/** Whether any user, topic, project, channel, member, message, memory or API key exists (`found`). */
const ANY_ROW_SQL = `SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM topics) OR EXISTS (SELECT 1 FROM projects)
  OR EXISTS (SELECT 1 FROM channels) OR EXISTS (SELECT 1 FROM members) OR EXISTS (SELECT 1 FROM messages)
  OR EXISTS (SELECT 1 FROM memories) OR EXISTS (SELECT 1 FROM api_keys) AS found`;

/** Thrown inside the import's transaction callback to roll it back on request. */
class RolledBack extends Error {}

/**
 * The PostgreSQL implementation of the TransferStore port: paged reads for export (the per-user
 * filter inside each query), and an import held in one transaction that takes the write lock, so
 * `rollback` or any failed write leaves the database as it was.
 */
export function createPostgresTransferStore(database: PostgresDatabase): TransferStore {
  const read = <Row>(doing: string, sql: string, values: readonly unknown[]) =>
    withPgErrors(doing, async () => (await database.query<Row>(sql, values)).rows);
  // Pages in byte order, as SQLite sorts text, whatever the database's collation (ADR 49), each walking an index in
  // that order (step 15, ADR 51) rather than sorting the table.
  const pageById =
    <Row>(table: string, columns: string) =>
    async (after: string | null, limit: number, ids?: readonly string[]) =>
      read<Row>(
        `reading ${table}`,
        `SELECT ${columns} FROM ${table} WHERE ($1::text IS NULL OR id COLLATE "C" > $1::text)
        AND ($2::text[] IS NULL OR id = ANY($2::text[])) ORDER BY id COLLATE "C" LIMIT $3`,
        [after, ids ? [...ids] : null, limit],
      );
  const users = pageById<{
    id: string;
    display_name: string | null;
    created_at: number;
    updated_at: number;
    left_name: string | null;
    left_at: string | number | null;
  }>('users', 'id, display_name, created_at, updated_at, left_name, left_at');
  const projects = pageById<{ id: string; name: string | null; managed: boolean; created_at: number }>(
    'projects',
    'id, name, managed, created_at',
  );
  const topics = pageById<{ id: string; project_id: string | null; title: string | null; created_at: number }>(
    'topics',
    'id, project_id, title, created_at',
  );
  const channels = pageById<{ id: string; visibility: ChannelVisibility; created_at: number; updated_at: number }>(
    'channels',
    'id, visibility, created_at, updated_at',
  );

  const store: TransferStore = {
    async horizon() {
      const [row] = await read<{ messageId: number; memoryId: number; linkId: number }>(
        'reading the newest ids',
        `SELECT (SELECT COALESCE(MAX(id), 0) FROM messages) AS "messageId",
          (SELECT COALESCE(MAX(id), 0) FROM memories) AS "memoryId",
          (SELECT COALESCE(MAX(id), 0) FROM memory_links) AS "linkId"`,
        [],
      );
      return {
        messageId: Number(row?.messageId ?? 0),
        memoryId: Number(row?.memoryId ?? 0),
        linkId: Number(row?.linkId ?? 0),
      };
    },
    async isEmpty() {
      const [row] = await read<{ found: boolean }>('checking that the database is empty', ANY_ROW_SQL, []);
      return row?.found === false;
    },
    async users(after, limit, ids) {
      return (await users(after, limit, ids)).map((row) => ({
        id: row.id,
        displayName: row.display_name,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        leftNames: storedLeftNames(row.left_name, row.left_at === null ? null : Number(row.left_at)),
      }));
    },
    async hasLeftNames(ids) {
      const rows = await read<{ left_name: string; left_at: string | number | null }>(
        'reading the names users left',
        `SELECT left_name, left_at FROM users WHERE left_name IS NOT NULL AND ($1::text[] IS NULL OR id = ANY($1::text[]))`,
        [ids ? [...ids] : null],
      );
      return rows.some(
        (row) => storedLeftNames(row.left_name, row.left_at === null ? null : Number(row.left_at)).length > 0,
      );
    },
    async projects(after, limit, ids) {
      return (await projects(after, limit, ids)).map((row) => ({
        id: row.id,
        name: row.name,
        managed: row.managed,
        createdAt: row.created_at,
      }));
    },
    async topics(after, limit, ids) {
      return (await topics(after, limit, ids)).map((row) => ({
        id: row.id,
        projectId: row.project_id,
        title: row.title,
        createdAt: row.created_at,
      }));
    },
    async channels(after, limit, ids) {
      return (await channels(after, limit, ids)).map((row) => ({
        id: row.id,
        visibility: row.visibility,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      }));
    },
    async memberships(after, limit, userId) {
      const rows = await read<{ kind: SpaceKind; space_id: string; user_id: string; added_at: number }>(
        'reading memberships',
        `SELECT kind, space_id, user_id, added_at FROM members
          WHERE ($1::text IS NULL
            OR (kind COLLATE "C", space_id COLLATE "C", user_id COLLATE "C") > ($1::text, $2::text, $3::text))
          AND ($4::text IS NULL OR user_id = $4::text)
          ORDER BY kind COLLATE "C", space_id COLLATE "C", user_id COLLATE "C" LIMIT $5`,
        [after?.kind ?? null, after?.spaceId ?? '', after?.userId ?? '', userId ?? null, limit],
      );
      return rows.map((row) => ({ kind: row.kind, spaceId: row.space_id, userId: row.user_id, addedAt: row.added_at }));
    },
    async messages(afterId, limit, filter) {
      const rows = await read<MessageRow>(
        'reading messages',
        `SELECT ${messageColumns} FROM messages WHERE id > $4 AND ${messageFilter} ORDER BY id LIMIT $5`,
        [...filterValues(filter, ['channels']), afterId, limit],
      );
      return rows.map(toMessage);
    },
    async memories(afterId, limit, filter) {
      const rows = await read<PgMemoryRow>(
        'reading memories',
        `SELECT ${memoryColumnsOf('m')} FROM memories m WHERE m.id > $4 AND ${memoryFilter('m', 3)}
          ORDER BY m.id LIMIT $5`,
        [...filterValues(filter, ['owners']), afterId, limit],
      );
      return rows.map(toTransferMemory);
    },
    async versions(memoryIds) {
      if (memoryIds.length === 0) return [];
      const rows = await read<PgVersionRow>(
        'reading versions',
        `SELECT id, memory_id, version, action, actor, reason, changes, snapshot, created_at FROM memory_versions
          WHERE memory_id = ANY($1::bigint[]) ORDER BY memory_id, version`,
        [[...memoryIds]],
      );
      return rows.map(toVersion);
    },
    async links(afterId, limit, filter) {
      const rows = await read<{
        id: number;
        source_id: number;
        target_id: number;
        type: TransferLink['type'];
        strength: number;
        created_at: number;
      }>(
        'reading links',
        `SELECT l.id, l.source_id, l.target_id, l.type, l.strength, l.created_at FROM memory_links l
          WHERE l.id > $4 AND (NOT $1::boolean OR (
            EXISTS (SELECT 1 FROM memories m WHERE m.id = l.source_id AND ${memoryFilter('m', 3)})
            AND EXISTS (SELECT 1 FROM memories m WHERE m.id = l.target_id AND ${memoryFilter('m', 3)})))
          ORDER BY l.id LIMIT $5`,
        [...filterValues(filter, ['owners']), afterId, limit],
      );
      return rows.map((row) => ({
        id: row.id,
        sourceId: row.source_id,
        targetId: row.target_id,
        type: row.type,
        strength: row.strength,
        createdAt: row.created_at,
      }));
    },
    async watermarks() {
      const rows = await read<{
        channel_id: string;
        task: string;
        watermark: number | null;
        last_run_at: number | null;
        details: string | null;
      }>(
        'reading watermarks',
        // Byte order, as SQLite sorts (every row is read: no index to keep).
        `SELECT channel_id, task, watermark, last_run_at, details FROM maintenance_state
          ORDER BY channel_id COLLATE "C", task COLLATE "C"`,
        [],
      );
      return rows.map(
        (row): MaintenanceState => ({
          channelId: row.channel_id,
          task: row.task,
          watermark: row.watermark,
          lastRunAt: row.last_run_at,
          details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
        }),
      );
    },
    async ingestFiles() {
      const rows = await read<{ path: string; line: number; prefix_sha256: string; updated_at: number }>(
        'reading the file records of mneme ingest',
        // Byte order, as SQLite sorts: the same database exports the same file on either backend.
        'SELECT path, line, prefix_sha256, updated_at FROM ingest_files ORDER BY path COLLATE "C"',
        [],
      );
      return rows.map((row) => ({
        path: row.path,
        line: row.line,
        prefixSha256: row.prefix_sha256,
        updatedAt: row.updated_at,
      }));
    },
    async idempotencyKeys(after, limit, now) {
      const rows = await read<{
        principal: string;
        key: string;
        request_sha256: string;
        status: number | null;
        expires_at: number;
      }>(
        'reading idempotency keys',
        // Byte order, as SQLite sorts.
        `SELECT principal, key, request_sha256, status, expires_at FROM idempotency_keys
          WHERE expires_at > $1 AND (status IS NOT NULL OR committed > 0) AND principal NOT LIKE 'admin-key:%'
            AND ($2::text IS NULL OR principal COLLATE "C" > $2::text OR (principal = $2::text AND key COLLATE "C" > $3::text))
          ORDER BY principal COLLATE "C", key COLLATE "C" LIMIT $4`,
        [now, after?.principal ?? null, after?.key ?? '', limit],
      );
      return rows.map((row) => ({
        principal: row.principal,
        key: row.key,
        requestSha256: row.request_sha256,
        status: row.status,
        expiresAt: Number(row.expires_at),
      }));
    },
    async spacesOf(userId) {
      return read<{ kind: SpaceKind; id: string }>(
        `reading the spaces of ${userId}`,
        'SELECT kind, space_id AS id FROM members WHERE user_id = $1 ORDER BY kind COLLATE "C", space_id COLLATE "C"',
        [userId],
      );
    },
    async referencedBy(filter) {
      const both = filterValues(filter, ['channels', 'owners']);
      const ids = async (sql: string, values: unknown[]) =>
        (await read<{ id: string }>('reading what a per-user export names', sql, values)).map((row) => row.id);
      const topicIds = await ids(
        `SELECT space_id AS id FROM members WHERE kind = 'topic' AND user_id = $2::text
          UNION SELECT topic_id FROM messages WHERE topic_id IS NOT NULL AND ${messageFilter}
          UNION SELECT m.topic_id FROM memories m WHERE m.topic_id IS NOT NULL AND ${memoryFilter('m', 4)}
          ORDER BY id`,
        both,
      );
      return {
        userIds: await ids(
          `SELECT $2::text AS id
            UNION SELECT sender_id FROM messages WHERE ${messageFilter}
            UNION SELECT m.user_id FROM memories m WHERE m.user_id IS NOT NULL AND ${memoryFilter('m', 4)}
            ORDER BY id`,
          both,
        ),
        topicIds,
        projectIds: await ids(
          `SELECT space_id AS id FROM members WHERE kind = 'project' AND user_id = $2::text
            UNION SELECT m.project_id FROM memories m WHERE m.project_id IS NOT NULL AND ${memoryFilter('m', 3)}
            UNION SELECT project_id FROM topics WHERE project_id IS NOT NULL AND id = ANY($4::text[])
            ORDER BY id`,
          [...filterValues(filter, ['owners']), topicIds],
        ),
      };
    },
    async messageIds(ids, filter) {
      if (ids.length === 0) return new Set();
      const rows = await read<{ id: number }>(
        'reading which messages exist',
        `SELECT id FROM messages WHERE id = ANY($4::bigint[]) AND ${messageFilter}`,
        [...filterValues(filter, ['channels']), [...ids]],
      );
      return new Set(rows.map((row) => Number(row.id)));
    },
    async memoryIds(ids, filter) {
      if (ids.length === 0) return new Set();
      const rows = await read<{ id: number }>(
        'reading which memories exist',
        `SELECT m.id FROM memories m WHERE m.id = ANY($4::bigint[]) AND ${memoryFilter('m', 3)}`,
        [...filterValues(filter, ['owners']), [...ids]],
      );
      return new Set(rows.map((row) => Number(row.id)));
    },
    async snapshot() {
      // PGlite runs every statement of the process on one connection: a transaction held for the export would
      // hold every other one until the export's reader finished. Its export reads as things are (ADR 31).
      if (database.oneConnection) {
        const { isEmpty: _isEmpty, snapshot: _snapshot, beginImport: _beginImport, ...reads } = store;
        return { ...reads, close: async () => {} };
      }
      const held = await holdTransaction(database, 'opening a snapshot of the database for the export', async (q) => {
        // Every read of the transaction sees the database as its first statement found it.
        await q.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        await q.query('SELECT 1');
      });
      const {
        isEmpty: _isEmpty,
        snapshot: _snapshot,
        beginImport: _beginImport,
        ...reads
      } = createPostgresTransferStore({ ...database, query: held.transaction.query, exec: held.transaction.exec });
      return {
        ...reads,
        async close() {
          await held.end(true).catch(() => {});
        },
      };
    },
    async beginImport(options = {}) {
      const held = await holdTransaction(database, 'starting the import', async (q) => {
        await q.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK]);
        if (options.mustBeEmpty) {
          const { rows } = await q.query<{ found: boolean }>(ANY_ROW_SQL);
          if (rows[0]?.found !== false) throw new MnemeError(ErrorCode.Conflict, IMPORT_TARGET_NOT_EMPTY);
        }
      });
      return createImportSession(held.transaction, {
        // A file may hold a user's plain name beside a user another can take it for (ADR 44).
        commit: async () => {
          await labelEveryPostgresNamesake(held.transaction, Date.now());
          await held.end(true);
        },
        rollback: () => held.end(false),
      });
    },
  };
  return store;
}

/**
 * A transaction of `database` held open once `begin` ran in it, for a caller that uses it statement by statement
 * (an import's writes, an export's snapshot): `end(true)` commits it, `end(false)` rolls it back; either waits.
 */
async function holdTransaction(
  database: PostgresDatabase,
  doing: string,
  begin: (transaction: PostgresQueryable) => Promise<void>,
): Promise<{ transaction: PostgresQueryable; end(commit: boolean): Promise<void> }> {
  let opened: (transaction: PostgresQueryable) => void = () => {};
  let end: (commit: boolean) => void = () => {};
  const ready = new Promise<PostgresQueryable>((resolve) => {
    opened = resolve;
  });
  const ended = new Promise<boolean>((resolve) => {
    end = resolve;
  });
  const done = database.transaction(async (transaction) => {
    await begin(transaction);
    opened(transaction);
    if (!(await ended)) throw new RolledBack('the transaction was rolled back');
  });
  // Keeps an early failure from going unhandled; it surfaces through the race below.
  done.catch(() => {});
  let transaction: PostgresQueryable;
  try {
    transaction = await Promise.race([
      ready,
      done.then((): never => {
        throw new MnemeError(ErrorCode.StoreFailed, 'the transaction ended before it started');
      }),
    ]);
  } catch (error) {
    throw toMnemeErrorPg(error, doing);
  }
  return {
    transaction,
    async end(commit) {
      end(commit);
      await done.catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    },
  };
}

function toTransferMemory(row: PgMemoryRow): TransferMemory {
  const { embeddingModel: _model, ...memory } = toMemory(row);
  return {
    ...memory,
    owner: row.owner,
    decayedAt: row.decayed_at,
    searchContext: row.search_context,
    searchContextMessageId: row.search_context_message_id,
    chunkMessageId: row.chunk_message_id,
    chunkIndex: row.chunk_index,
  };
}

/** The import's writes, all on the one transaction `beginImport` opened; `end` commits or rolls it back. */
function createImportSession(
  q: PostgresQueryable,
  end: { commit(): Promise<void>; rollback(): Promise<void> },
): ImportSession {
  let open = true;

  async function rollback(): Promise<void> {
    if (!open) return;
    open = false;
    await end.rollback();
  }

  /** Runs one write of the session; the first failure rolls the whole import back. */
  async function write<T>(doing: string, work: () => Promise<T>): Promise<T> {
    if (!open) throw new MnemeError(ErrorCode.StoreFailed, `${doing}: the import was already ended`);
    try {
      return await work();
    } catch (error) {
      await rollback().catch(() => {});
      throw toMnemeErrorPg(error, doing);
    }
  }

  const ids = (rows: Array<{ id: number }>) => rows.map((row) => Number(row.id));

  return {
    putUsers: (users) =>
      write('importing users', async () => {
        for (const user of users) {
          await q.query(
            `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at, left_name, left_at)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
            [
              user.id,
              user.displayName,
              nameKey(user.displayName ?? user.id),
              nameKey(user.id),
              user.createdAt,
              user.updatedAt,
              user.leftNames.length === 0 ? null : leftNamesText(user.leftNames),
              user.leftNames.at(-1)?.at ?? null,
            ],
          );
        }
      }),
    putProjects: (projects) =>
      write('importing projects', async () => {
        for (const project of projects) {
          await q.query('INSERT INTO projects (id, name, managed, created_at) VALUES ($1, $2, $3, $4)', [
            project.id,
            project.name,
            project.managed,
            project.createdAt,
          ]);
        }
      }),
    putTopics: (topics) =>
      write('importing topics', async () => {
        for (const topic of topics) {
          await q.query('INSERT INTO topics (id, project_id, title, created_at) VALUES ($1, $2, $3, $4)', [
            topic.id,
            topic.projectId,
            topic.title,
            topic.createdAt,
          ]);
        }
      }),
    putChannels: (channels) =>
      write('importing channels', async () => {
        for (const channel of channels) {
          await q.query('INSERT INTO channels (id, visibility, created_at, updated_at) VALUES ($1, $2, $3, $4)', [
            channel.id,
            channel.visibility,
            channel.createdAt,
            channel.updatedAt,
          ]);
        }
      }),
    putMemberships: (memberships) =>
      write('importing memberships', async () => {
        for (const member of memberships) {
          await q.query(
            `INSERT INTO members (kind, space_id, user_id, added_at) VALUES ($1, $2, $3, $4)
              ON CONFLICT (kind, space_id, user_id) DO NOTHING`,
            [member.kind, member.spaceId, member.userId, member.addedAt],
          );
        }
        // Members and senders without a row in the file are known users all the same (ADR 40).
        await knowPostgresUsers(
          q,
          q,
          memberships.map((member) => [member.userId, member.addedAt] as const),
        );
      }),
    appendMessages: (messages) =>
      write('importing messages', async () => {
        const stored: number[] = [];
        for (const message of messages) {
          const { rows } = await q.query<{ id: number }>(
            `INSERT INTO messages (channel_id, sender_id, role, content, topic_id, reply_to, created_at, external_id)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
            [
              message.channelId,
              message.senderId,
              message.role,
              message.content,
              message.topicId,
              message.replyTo,
              message.createdAt,
              message.externalId,
            ],
          );
          stored.push(...ids(rows));
        }
        await knowPostgresUsers(
          q,
          q,
          messages.map((message) => [message.senderId, message.createdAt] as const),
        );
        return stored;
      }),
    insertMemories: (memories) =>
      write('importing memories', async () => {
        const stored: number[] = [];
        for (const memory of memories) {
          const { rows } = await q.query<{ id: number }>(
            `INSERT INTO memories (content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id,
              source, importance, strength, salience, access_count, last_accessed, pinned, source_message_ids,
              source_ids, valid_from, archived_at, faded_at, created_at, updated_at, decayed_at, search_context,
              search_context_message_id, chunk_message_id, chunk_index)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::bigint[],
              $18::bigint[], $19, $20, $21, $22, $23, $24, $25, $26, $27, $28) RETURNING id`,
            [
              memory.content,
              memory.category,
              memory.sector,
              memory.scope,
              memory.owner,
              memory.userId,
              memory.channelId,
              memory.projectId,
              memory.topicId,
              memory.source,
              memory.importance,
              memory.strength,
              memory.salience,
              memory.accessCount,
              memory.lastAccessedAt,
              memory.pinned,
              [...memory.sourceMessageIds],
              [...memory.sourceIds],
              memory.validFrom,
              memory.archivedAt,
              memory.fadedAt,
              memory.createdAt,
              memory.updatedAt,
              memory.decayedAt,
              memory.searchContext,
              memory.searchContextMessageId,
              memory.chunkMessageId,
              memory.chunkIndex,
            ],
          );
          stored.push(...ids(rows));
        }
        // The users of memories without a row in the file are known users too (ADR 40, attack29c).
        await knowPostgresUsers(
          q,
          q,
          memories.flatMap((memory) => (memory.userId === null ? [] : [[memory.userId, memory.createdAt] as const])),
        );
        return stored;
      }),
    setSupersededBy: (pairs) =>
      write('importing supersessions', async () => {
        for (const [id, by] of pairs) await q.query('UPDATE memories SET superseded_by = $1 WHERE id = $2', [by, id]);
      }),
    setSourceIds: (pairs) =>
      write('importing source memories', async () => {
        for (const [id, sourceIds] of pairs) {
          await q.query('UPDATE memories SET source_ids = $1::bigint[] WHERE id = $2', [[...sourceIds], id]);
        }
      }),
    addVersions: (versions) =>
      write('importing versions', async () => {
        for (const version of versions) {
          await q.query(
            `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
            [
              version.memoryId,
              version.version,
              version.action,
              version.actor,
              version.reason,
              JSON.stringify(version.changes),
              JSON.stringify(version.snapshot),
              version.createdAt,
            ],
          );
        }
      }),
    createReasons: (reasons) =>
      write('reading the reasons of create versions', async () => {
        const { rows } = await q.query<{ reason: string }>(
          `SELECT DISTINCT reason FROM memory_versions WHERE action = 'create' AND reason = ANY($1::text[])`,
          [reasons],
        );
        return new Set(rows.map((row) => row.reason));
      }),
    addLinks: (links) =>
      write('importing links', async () => {
        for (const link of links) {
          await q.query(
            `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES ($1, $2, $3, $4, $5)
              ON CONFLICT (source_id, target_id, type) DO NOTHING`,
            [link.sourceId, link.targetId, link.type, link.strength, link.createdAt],
          );
        }
      }),
    setWatermarks: (states) =>
      write('importing watermarks', async () => {
        for (const state of states) {
          await q.query(
            `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details)
              VALUES ($1, $2, $3, $4, $5)
              ON CONFLICT (channel_id, task) DO UPDATE SET watermark = excluded.watermark,
                last_run_at = excluded.last_run_at, details = excluded.details`,
            [
              state.channelId,
              state.task,
              state.watermark,
              state.lastRunAt,
              state.details === null ? null : JSON.stringify(state.details),
            ],
          );
        }
      }),
    putIngestFiles: (files) =>
      write('importing the file records of mneme ingest', async () => {
        for (const file of files) {
          const { rows } = await q.query<{ line: number }>(
            'SELECT line FROM ingest_files WHERE md5(path) = md5($1) AND path = $1',
            [file.path],
          );
          const recorded = rows[0];
          if (recorded) throw ingestFileRecorded(file.path, recorded.line);
          await q.query('INSERT INTO ingest_files (path, line, prefix_sha256, updated_at) VALUES ($1, $2, $3, $4)', [
            file.path,
            file.line,
            file.prefixSha256,
            file.updatedAt,
          ]);
        }
      }),
    putIdempotencyKeys: (keys) =>
      write('importing idempotency keys', async () => {
        for (const key of keys) {
          await q.query(
            `INSERT INTO idempotency_keys (principal, key, request_sha256, status, body, locked_until, expires_at, committed)
              VALUES ($1, $2, $3, $4, NULL, 0, $5, 1) ON CONFLICT (principal, key) DO NOTHING`,
            [key.principal, key.key, key.requestSha256, key.status, key.expiresAt],
          );
        }
      }),
    requireApiKeys: (at) =>
      write('importing the service state', async () => {
        await q.query(
          "INSERT INTO service_state (name, value) VALUES ('first_api_key_at', $1) ON CONFLICT DO NOTHING",
          [at],
        );
      }),
    replacePolicy: (versions) =>
      write('importing the policy', async () => {
        await q.query('DELETE FROM policy_versions');
        for (const version of versions) {
          await q.query(
            `INSERT INTO policy_versions (version, preset, overrides, change, actor, created_at)
              VALUES ($1, $2, $3, $4, $5, $6)`,
            [
              version.version,
              version.preset,
              JSON.stringify(version.overrides),
              version.change,
              version.actor,
              version.createdAt,
            ],
          );
        }
      }),
    commit: () =>
      write('committing the import', async () => {
        open = false;
        await end.commit();
      }),
    rollback,
  };
}
