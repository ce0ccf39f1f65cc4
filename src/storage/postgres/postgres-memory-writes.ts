import { toIso } from '../../core/clock.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { MemorySnapshot, MemoryVersion, VersionAction } from '../../core/types.js';
import {
  assertStillVisible,
  type MemoryChanges,
  type MoveTarget,
  type NewMemory,
  targetOwner,
  type WriteContext,
} from '../memory-store.js';
import { firstRow, type PostgresQueryable } from './postgres-database.js';
import { memoryColumns, type PgMemoryRow, snapshotOf } from './postgres-memory-rows.js';
import { knowPostgresUsers, labelWrittenPostgresMemory } from './postgres-user-names.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/**
 * The one write path of memory rows in PostgreSQL, as `SqliteMemoryWrites` is in SQLite: every store
 * that inserts, changes or archives a memory, or records a version, goes through it, inside its own
 * transaction (`writePg`). Reads for a change lock the row (`FOR UPDATE`).
 */
export interface PostgresMemoryWrites {
  read(q: PostgresQueryable, id: number): Promise<PgMemoryRow>;
  insert(
    q: PostgresQueryable,
    memory: NewMemory,
    context: WriteContext,
    action?: 'create' | 'merge',
  ): Promise<PgMemoryRow>;
  /**
   * Inserts an exchange chunk with its place (its message and index) in the same statement, as `insert` does
   * a memory; null, and nothing written, when that place already holds a chunk (a step applied again).
   */
  insertChunk(
    q: PostgresQueryable,
    memory: NewMemory,
    context: WriteContext,
    chunk: { messageId: number; index: number },
  ): Promise<PgMemoryRow | null>;
  update(q: PostgresQueryable, id: number, changes: MemoryChanges, context: WriteContext): Promise<PgMemoryRow>;
  /** Moves memory `id` (archived or not) into a room or its user's scope, its vector with it (`MemoryStore.moveTo`). */
  moveTo(q: PostgresQueryable, id: number, target: MoveTarget, context: WriteContext): Promise<PgMemoryRow>;
  archive(q: PostgresQueryable, id: number, context: WriteContext, fade?: boolean): Promise<PgMemoryRow>;
  revive(q: PostgresQueryable, id: number, context: WriteContext): Promise<PgMemoryRow>;
  supersede(q: PostgresQueryable, id: number, by: number, context: WriteContext): Promise<PgMemoryRow | null>;
  transferSupersession(q: PostgresQueryable, from: readonly number[], to: number): Promise<number[]>;
  recordVersion(
    q: PostgresQueryable,
    row: PgMemoryRow,
    action: VersionAction,
    changes: MemoryVersion['changes'],
    context: WriteContext,
  ): Promise<void>;
}

const returning = `RETURNING ${memoryColumns}`;

/**
 * `database` is the database the writes run on (its transactions are given to each call): the key `knowPostgresUsers`
 * remembers its schema by.
 */
export function createPostgresMemoryWrites(vectors: PostgresVectorIndex, database: object): PostgresMemoryWrites {
  const writes: PostgresMemoryWrites = {
    async read(q, id) {
      const { rows } = await q.query<PgMemoryRow>(`SELECT ${memoryColumns} FROM memories WHERE id = $1 FOR UPDATE`, [
        id,
      ]);
      const row = rows[0];
      if (!row) throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
      return row;
    },

    async insert(q, memory, context, action = 'create') {
      const row = await insertRow(q, memory, context, action, null, vectors, writes, database);
      if (!row) throw new MnemeError(ErrorCode.StoreFailed, 'no row came back from the insert of a memory');
      return row;
    },

    insertChunk: (q, memory, context, chunk) =>
      insertRow(q, memory, context, 'create', chunk, vectors, writes, database),

    async update(q, id, changes, context) {
      const before = await writes.read(q, id);
      assertStillVisible(before.owner, id, context);
      if (before.archived_at !== null) {
        throw new MnemeError(ErrorCode.Conflict, `memory ${id} is archived; restore it before editing`);
      }
      const assignments: string[] = [];
      const values: unknown[] = [];
      const assign = (column: string, value: unknown, cast = '') => {
        values.push(value);
        assignments.push(`${column} = $${values.length}${cast}`);
      };
      if (changes.content !== undefined) assign('content', changes.content);
      if (changes.category !== undefined) assign('category', changes.category);
      if (changes.sector !== undefined) assign('sector', changes.sector);
      if (changes.importance !== undefined) assign('importance', changes.importance);
      if (changes.pinned !== undefined) assign('pinned', changes.pinned);
      if (changes.decayedAt !== undefined) assign('decayed_at', changes.decayedAt);
      if (changes.sourceMessageIds !== undefined) {
        assign('source_message_ids', [...changes.sourceMessageIds], '::bigint[]');
      }
      if (changes.validFrom !== undefined) assign('valid_from', changes.validFrom);
      if (changes.embedding !== undefined) assign('embedding_model', changes.embedding?.model ?? null);
      const previous = snapshotOf(before);
      const diff = diffSnapshots(previous, {
        ...previous,
        content: changes.content ?? previous.content,
        category: changes.category ?? previous.category,
        importance: changes.importance ?? previous.importance,
        pinned: changes.pinned ?? previous.pinned,
      });
      const unchanged =
        changes.embedding === undefined &&
        changes.sourceMessageIds === undefined &&
        changes.decayedAt === undefined &&
        changes.validFrom === undefined;
      if (Object.keys(diff).length === 0 && unchanged) return before;
      values.push(context.at, id);
      const sql = `UPDATE memories SET ${assignments.join(', ')}${assignments.length ? ', ' : ''}updated_at = $${
        values.length - 1
      } WHERE id = $${values.length} ${returning}`;
      const after = firstRow(await q.query<PgMemoryRow>(sql, values), sql);
      if (changes.embedding === null) await vectors.remove(q, [id]);
      else if (changes.embedding) await vectors.put(q, id, after.owner, changes.embedding);
      if (Object.keys(diff).length > 0) await writes.recordVersion(q, after, 'update', diff, context);
      return after;
    },

    async moveTo(q, id, target, context) {
      const before = await writes.read(q, id);
      const owner = targetOwner(id, target, before.user_id);
      if (before.owner === owner) return before;
      const sql = `UPDATE memories SET scope = $1, owner = $2, channel_id = coalesce($3, channel_id), updated_at = $4
        WHERE id = $5 ${returning}`;
      const channelId = target.scope === 'room' ? target.channelId : null;
      const after = firstRow(await q.query<PgMemoryRow>(sql, [target.scope, owner, channelId, context.at, id]), sql);
      await q.query('UPDATE memory_vectors SET owner = $1 WHERE memory_id = $2', [owner, id]);
      await writes.recordVersion(q, after, 'update', {}, context);
      return after;
    },

    async archive(q, id, context, fade = false) {
      const before = await writes.read(q, id);
      assertStillVisible(before.owner, id, context);
      if (before.archived_at !== null && (fade || before.faded_at === null)) {
        throw new MnemeError(ErrorCode.Conflict, `memory ${id} is already archived`);
      }
      const sql = fade
        ? `UPDATE memories SET archived_at = $1, faded_at = $1, updated_at = $1 WHERE id = $2 ${returning}`
        : `UPDATE memories SET archived_at = $1, faded_at = NULL, updated_at = $1, embedding_model = NULL
           WHERE id = $2 ${returning}`;
      const row = firstRow(await q.query<PgMemoryRow>(sql, [context.at, id]), sql);
      if (!fade) {
        await q.query('UPDATE memories SET superseded_by = NULL WHERE superseded_by = $1', [id]);
        await vectors.remove(q, [id]);
      }
      const from = before.archived_at === null ? null : toIso(before.archived_at);
      await writes.recordVersion(q, row, 'archive', { archivedAt: { from, to: toIso(context.at) } }, context);
      return row;
    },

    async revive(q, id, context) {
      const before = await writes.read(q, id);
      if (before.faded_at === null) throw new MnemeError(ErrorCode.Conflict, `memory ${id} has not faded`);
      const sql = `UPDATE memories SET archived_at = NULL, faded_at = NULL, updated_at = $1 WHERE id = $2 ${returning}`;
      const row = firstRow(await q.query<PgMemoryRow>(sql, [context.at, id]), sql);
      const from = before.archived_at === null ? null : toIso(before.archived_at);
      await writes.recordVersion(q, row, 'restore', { archivedAt: { from, to: null } }, context);
      return row;
    },

    async supersede(q, id, by, context) {
      const { rows } = await q.query<PgMemoryRow>(
        `UPDATE memories SET superseded_by = $1, updated_at = $2
         WHERE id = $3 AND archived_at IS NULL AND superseded_by IS NULL ${returning}`,
        [by, context.at, id],
      );
      return rows[0] ?? null;
    },

    async transferSupersession(q, from, to) {
      if (from.length === 0) return [];
      const { rows } = await q.query<{ id: number }>(
        `UPDATE memories SET superseded_by = $1
         WHERE superseded_by = ANY($2::bigint[]) AND archived_at IS NULL RETURNING id`,
        [to, [...from]],
      );
      return rows.map((row) => row.id).sort((a, b) => a - b);
    },

    async recordVersion(q, row, action, changes, context) {
      await q.query(
        `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
         VALUES ($1, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = $1), $2, $3, $4, $5, $6, $7)`,
        [
          row.id,
          action,
          context.actor,
          context.reason ?? null,
          JSON.stringify(changes),
          JSON.stringify(snapshotOf(row)),
          context.at,
        ],
      );
    },
  };
  return writes;
}

const snapshotFields = ['content', 'category', 'importance', 'pinned', 'archivedAt'] as const;

function diffSnapshots(before: MemorySnapshot, after: MemorySnapshot): MemoryVersion['changes'] {
  const changes: MemoryVersion['changes'] = {};
  for (const field of snapshotFields) {
    if (before[field] !== after[field]) changes[field] = { from: before[field], to: after[field] };
  }
  return changes;
}

/**
 * Writes one memory: its row, its vector when it has one, and its first version. With `chunk`, the row carries its
 * place and nothing is written when the place is taken (null).
 */
async function insertRow(
  q: PostgresQueryable,
  memory: NewMemory,
  context: WriteContext,
  action: 'create' | 'merge',
  chunk: { messageId: number; index: number } | null,
  vectors: PostgresVectorIndex,
  writes: PostgresMemoryWrites,
  database: object,
): Promise<PgMemoryRow | null> {
  if (memory.scope === 'session') {
    const topic = await q.query('SELECT 1 FROM topics WHERE id = $1', [memory.topicId]);
    if (topic.rows.length === 0) {
      throw new MnemeError(ErrorCode.NotFound, `topic ${memory.topicId} does not exist; create it first`);
    }
  }
  const place = chunk ? ', chunk_message_id, chunk_index' : '';
  const placeValues = chunk ? ', $20, $21' : '';
  const taken = chunk
    ? 'ON CONFLICT (chunk_message_id, chunk_index) WHERE chunk_message_id IS NOT NULL DO NOTHING'
    : '';
  const sql = `INSERT INTO memories (
      content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id, source,
      importance, pinned, source_message_ids, source_ids, valid_from, created_at, updated_at, embedding_model,
      search_context, search_context_message_id${place}
    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::bigint[], $14::bigint[], $15, $16, $16, $17, $18, $19${placeValues})
    ${taken} ${returning}`;
  const { rows } = await q.query<PgMemoryRow>(sql, [
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
    memory.pinned,
    [...memory.sourceMessageIds],
    [...memory.sourceIds],
    memory.validFrom ?? context.at,
    context.at,
    memory.embedding?.model ?? null,
    memory.searchContext ?? null,
    memory.searchContextMessageId ?? null,
    ...(chunk ? [chunk.messageId, chunk.index] : []),
  ]);
  const row = rows[0];
  if (!row) return null;
  if (memory.embedding) await vectors.put(q, row.id, row.owner, memory.embedding);
  // The user of a memory (a personal memory's, a fact's speaker) is a known user (ADR 40, attack29c).
  if (row.user_id !== null) await knowPostgresUsers(database, q, [row.user_id], context.at);
  await writes.recordVersion(q, row, action, {}, context);
  // Its text was made before this transaction: a namesake of a speaker may have arrived since (ADR 44).
  return labelWrittenPostgresMemory(database, q, row, context.at);
}
