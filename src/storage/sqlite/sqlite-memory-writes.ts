import type Database from 'better-sqlite3';
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
import { getRow, preparedOnUse } from './sqlite-database.js';
import { nextIdSql } from './sqlite-id-floors.js';
import { type MemoryRow, snapshotOf } from './sqlite-memory-rows.js';
import { createSqliteMemoryWordCounts } from './sqlite-memory-word-counts.js';
import { createSqliteUserNames } from './sqlite-user-names.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

/**
 * The one write path of memory rows: every store that inserts or archives a memory, or records a
 * version, goes through it, inside its own transaction, so a new column or rule cannot be
 * forgotten in one copy.
 */
export interface SqliteMemoryWrites {
  /** The row of memory `id`; NOT_FOUND when there is none. */
  read(id: number): MemoryRow;
  /**
   * Writes one memory: its row (the FTS row follows by trigger), its vector when it has one, and its
   * first version, `create` (or `merge` for a consolidated memory) with `context.reason`; `valid_from`
   * is `memory.validFrom`, or the write's time. NOT_FOUND for a session memory whose topic does not exist.
   * `chunk`: an exchange chunk's place (its message and index), written with the row.
   */
  insert(
    memory: NewMemory,
    context: WriteContext,
    action?: 'create' | 'merge',
    chunk?: { messageId: number; index: number },
  ): MemoryRow;
  /**
   * Applies `changes` to memory `id` and writes an `update` version with the diff (none when only
   * the vector, the provenance, the decay time or the validity changed). NOT_FOUND when it does not
   * exist, CONFLICT when it is archived.
   */
  update(id: number, changes: MemoryChanges, context: WriteContext): MemoryRow;
  /** Moves memory `id` (archived or not) into a room or its user's scope, its vector with it (`MemoryStore.moveTo`). */
  moveTo(id: number, target: MoveTarget, context: WriteContext): MemoryRow;
  /**
   * Archives memory `id`: `archived_at` set, vector removed, an `archive` version with `context.reason`;
   * the memories it superseded are current again (their `superseded_by` cleared). With `fade` (decay),
   * `faded_at` is set too, the vector kept and supersession left as it is (ADR 9). NOT_FOUND when it does
   * not exist, CONFLICT when it is already archived (a faded memory may be archived again without `fade`).
   */
  archive(id: number, context: WriteContext, fade?: boolean): MemoryRow;
  /** Brings faded memory `id` back: archive cleared, a `restore` version with `context.reason`. */
  revive(id: number, context: WriteContext): MemoryRow;
  /**
   * Marks memory `id` superseded by memory `by` (a newer statement of what changed), when it is active
   * and not superseded yet; no version row of its own (the `supersedes` link records it). The row
   * after, or null when nothing was marked.
   */
  supersede(id: number, by: number, context: WriteContext): MemoryRow | null;
  /**
   * Makes every active memory superseded by one of `from` superseded by `to` instead (a merge replaces
   * them); returns their ids.
   */
  transferSupersession(from: readonly number[], to: number): number[];
  /** Appends the next version of a memory: what changed, and the snapshot of `row`, the memory after it. */
  recordVersion(row: MemoryRow, action: VersionAction, changes: MemoryVersion['changes'], context: WriteContext): void;
}

/** Prepares the memory writes of one database; its methods run inside the caller's transaction. */
export function createSqliteMemoryWrites(database: Database.Database, vectors: SqliteVectorIndex): SqliteMemoryWrites {
  // From migration 22 an insert that gives the row its length counts its words itself (ADR 25, session
  // 8); a file opened at an older schema (migration tests) leaves them to the trigger.
  const wordCounts = schemaVersion(database) >= WORDS_COUNTED_BY_INSERT ? createSqliteMemoryWordCounts(database) : null;
  const chunkColumns = ['chunk_message_id', 'chunk_index'];
  // The user of a memory (a personal memory's, a fact's speaker) is a known user (ADR 40, attack29c).
  const userNames = createSqliteUserNames(database);
  const statements = {
    insert: database.prepare<InsertParameters, MemoryRow>(insertSql([])),
    // Prepared on first use: a file opened at a schema before migration 9 (migration tests) has no chunk columns.
    insertChunk: preparedOnUse<InsertParameters & { chunkMessageId: number; chunkIndex: number }, MemoryRow>(
      database,
      insertSql(chunkColumns),
    ),
    insertCounted: preparedOnUse<InsertParameters & { tokens: number }, MemoryRow>(database, insertSql(['tokens'])),
    insertChunkCounted: preparedOnUse<
      InsertParameters & { tokens: number; chunkMessageId: number; chunkIndex: number },
      MemoryRow
    >(database, insertSql([...chunkColumns, 'tokens'])),
    byId: database.prepare<[number], MemoryRow>('SELECT * FROM memories WHERE id = ?'),
    topicExists: database.prepare<[string | null], 1>('SELECT 1 FROM topics WHERE id = ?'),
    archive: preparedOnUse<[number, number, number], MemoryRow>(
      database,
      'UPDATE memories SET archived_at = ?, faded_at = NULL, updated_at = ?, embedding_model = NULL WHERE id = ? RETURNING *',
    ),
    fade: preparedOnUse<[number, number, number, number], MemoryRow>(
      database,
      'UPDATE memories SET archived_at = ?, faded_at = ?, updated_at = ? WHERE id = ? RETURNING *',
    ),
    revive: preparedOnUse<[number, number], MemoryRow>(
      database,
      'UPDATE memories SET archived_at = NULL, faded_at = NULL, updated_at = ? WHERE id = ? RETURNING *',
    ),
    moveTo: preparedOnUse<
      { scope: string; owner: string; channelId: string | null; at: number; id: number },
      MemoryRow
    >(
      database,
      `UPDATE memories SET scope = @scope, owner = @owner, channel_id = coalesce(@channelId, channel_id), updated_at = @at
      WHERE id = @id RETURNING *`,
    ),
    supersede: database.prepare<[number, number, number], MemoryRow>(
      `UPDATE memories SET superseded_by = ?, updated_at = ?
      WHERE id = ? AND archived_at IS NULL AND superseded_by IS NULL RETURNING *`,
    ),
    clearSupersession: database.prepare<[number]>('UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?'),
    transferSupersession: database.prepare<[number, number], { id: number }>(
      'UPDATE memories SET superseded_by = ? WHERE superseded_by = ? AND archived_at IS NULL RETURNING id',
    ),
    version: database.prepare<[number, number, VersionAction, string | null, string | null, string, string, number]>(
      `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
      VALUES (?, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = ?), ?, ?, ?, ?, ?, ?)`,
    ),
  };

  const writes: SqliteMemoryWrites = {
    read(id) {
      const row = statements.byId.get(id);
      if (!row) throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
      return row;
    },

    insert(memory, context, action = 'create', chunk) {
      if (memory.scope === 'session' && !statements.topicExists.get(memory.topicId)) {
        throw new MnemeError(ErrorCode.NotFound, `topic ${memory.topicId} does not exist; create it first`);
      }
      const embedding = vectors.held(memory.embedding);
      const parameters = insertParameters({ ...memory, embedding }, context.at);
      const place = chunk ? { chunkMessageId: chunk.messageId, chunkIndex: chunk.index } : null;
      const words = wordCounts?.wordsOf(parameters.content, parameters.searchContext);
      let row: MemoryRow;
      if (wordCounts && words && words.tokens > 0) {
        // The row with its length, which the insert trigger leaves alone: its words counted here.
        const counted = { ...parameters, tokens: words.tokens };
        row = place
          ? getRow(statements.insertChunkCounted(), { ...counted, ...place })
          : getRow(statements.insertCounted(), counted);
        wordCounts.countIn(row.owner, words);
      } else {
        // A text without a word (length 0), or an older schema: the trigger counts it.
        row = place
          ? getRow(statements.insertChunk(), { ...parameters, ...place })
          : getRow(statements.insert, parameters);
      }
      if (embedding) vectors.put(row.id, row.owner, embedding);
      if (row.user_id !== null) userNames.know([row.user_id], context.at);
      writes.recordVersion(row, action, {}, context);
      // Its text was made before this transaction: a namesake of a speaker may have arrived since (ADR 44).
      return userNames.labelWritten(row, context.at);
    },

    update(id, given, context) {
      // A vector of a model the index no longer holds is not kept (nor its model named on the row).
      const changes = given.embedding ? { ...given, embedding: vectors.held(given.embedding) } : given;
      const before = writes.read(id);
      assertStillVisible(before.owner, id, context);
      if (before.archived_at !== null) {
        throw new MnemeError(ErrorCode.Conflict, `memory ${id} is archived; restore it before editing`);
      }
      const assignments: string[] = [];
      const values: Record<string, unknown> = { id, at: context.at };
      for (const [field, column] of [
        ['content', 'content'],
        ['category', 'category'],
        ['sector', 'sector'],
        ['importance', 'importance'],
        ['pinned', 'pinned'],
      ] as const) {
        const value = changes[field];
        if (value === undefined) continue;
        assignments.push(`${column} = @${field}`);
        values[field] = typeof value === 'boolean' ? Number(value) : value;
      }
      if (changes.decayedAt !== undefined) {
        assignments.push('decayed_at = @decayedAt');
        values.decayedAt = changes.decayedAt;
      }
      if (changes.sourceMessageIds !== undefined) {
        assignments.push('source_message_ids = @sourceMessageIds');
        values.sourceMessageIds = JSON.stringify(changes.sourceMessageIds);
      }
      if (changes.validFrom !== undefined) {
        assignments.push('valid_from = @validFrom');
        values.validFrom = changes.validFrom;
      }
      if (changes.embedding !== undefined) {
        assignments.push('embedding_model = @embeddingModel');
        values.embeddingModel = changes.embedding?.model ?? null;
      }
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
      const after = getRow(
        database.prepare<Record<string, unknown>, MemoryRow>(
          `UPDATE memories SET ${assignments.join(', ')}, updated_at = @at WHERE id = @id RETURNING *`,
        ),
        values,
      );
      if (changes.embedding === null) vectors.remove([id]);
      else if (changes.embedding) vectors.put(id, after.owner, changes.embedding);
      if (Object.keys(diff).length > 0) writes.recordVersion(after, 'update', diff, context);
      return after;
    },

    moveTo(id, target, context) {
      const before = writes.read(id);
      const owner = targetOwner(id, target, before.user_id);
      if (before.owner === owner) return before;
      // The word counts and word blocks follow the owner by trigger; the vector is stored again under it.
      const after = getRow(statements.moveTo(), {
        scope: target.scope,
        owner,
        channelId: target.scope === 'room' ? target.channelId : null,
        at: context.at,
        id,
      });
      const model = vectors.info()?.model;
      const vector = model === undefined ? undefined : vectors.vectors([id]).get(id);
      if (model !== undefined && vector) vectors.put(id, owner, { model, vector });
      writes.recordVersion(after, 'update', {}, context);
      return after;
    },

    archive(id, context, fade = false) {
      const before = writes.read(id);
      assertStillVisible(before.owner, id, context);
      if (before.archived_at !== null && (fade || before.faded_at === null)) {
        throw new MnemeError(ErrorCode.Conflict, `memory ${id} is already archived`);
      }
      const row = fade
        ? getRow(statements.fade(), context.at, context.at, context.at, id)
        : getRow(statements.archive(), context.at, context.at, id);
      if (!fade) {
        statements.clearSupersession.run(id);
        vectors.remove([id]);
      }
      const from = before.archived_at === null ? null : toIso(before.archived_at);
      writes.recordVersion(row, 'archive', { archivedAt: { from, to: toIso(context.at) } }, context);
      return row;
    },

    revive(id, context) {
      const before = writes.read(id);
      if (before.faded_at === null) throw new MnemeError(ErrorCode.Conflict, `memory ${id} has not faded`);
      const row = getRow(statements.revive(), context.at, id);
      const from = before.archived_at === null ? null : toIso(before.archived_at);
      writes.recordVersion(row, 'restore', { archivedAt: { from, to: null } }, context);
      return row;
    },

    supersede(id, by, context) {
      return statements.supersede.get(by, context.at, id) ?? null;
    },

    transferSupersession(from, to) {
      return from.flatMap((id) => statements.transferSupersession.all(to, id).map((row) => row.id));
    },

    recordVersion(row, action, changes, context) {
      statements.version.run(
        row.id,
        row.id,
        action,
        context.actor,
        context.reason ?? null,
        JSON.stringify(changes),
        JSON.stringify(snapshotOf(row)),
        context.at,
      );
    },
  };
  return writes;
}

type InsertParameters = ReturnType<typeof insertParameters>;

const snapshotFields = ['content', 'category', 'importance', 'pinned', 'archivedAt'] as const;

function diffSnapshots(before: MemorySnapshot, after: MemorySnapshot): MemoryVersion['changes'] {
  const changes: MemoryVersion['changes'] = {};
  for (const field of snapshotFields) {
    if (before[field] !== after[field]) changes[field] = { from: before[field], to: after[field] };
  }
  return changes;
}

/** The memory row's INSERT, with the named columns of an exchange chunk's place (`@chunkMessageId`, `@chunkIndex`). */
/** The schema version migration 22 made: from it, an insert that gives the row's length counts its words. */
const WORDS_COUNTED_BY_INSERT = 22;

/** The file's schema version (0 for a file without migrations). */
function schemaVersion(database: Database.Database): number {
  const table = database
    .prepare<[], number>("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .pluck()
    .get();
  if (!table) return 0;
  return database.prepare<[], number | null>('SELECT MAX(version) FROM schema_migrations').pluck().get() ?? 0;
}

/** The insert of a memory row naming `extraColumns` too (`chunk_message_id`, `chunk_index`, `tokens`). */
function insertSql(extraColumns: readonly string[]): string {
  const columns = extraColumns.map((column) => `, ${column}`).join('');
  const parameterOf: Record<string, string> = {
    chunk_message_id: '@chunkMessageId',
    chunk_index: '@chunkIndex',
    tokens: '@tokens',
  };
  const values = extraColumns.map((column) => `, ${parameterOf[column]}`).join('');
  return `INSERT INTO memories (
      id, content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id, source,
      importance, pinned, source_message_ids, source_ids, valid_from, created_at, updated_at, embedding_model,
      search_context, search_context_message_id${columns}
    ) VALUES (
      ${nextIdSql('memories')}, @content, @category, @sector, @scope, @owner, @userId, @channelId, @projectId, @topicId, @source,
      @importance, @pinned, @sourceMessageIds, @sourceIds, @validFrom, @at, @at, @embeddingModel, @searchContext,
      @searchContextMessageId${values}
    ) RETURNING *`;
}

function insertParameters(memory: NewMemory, at: number) {
  return {
    content: memory.content,
    category: memory.category,
    sector: memory.sector,
    scope: memory.scope,
    owner: memory.owner,
    userId: memory.userId,
    channelId: memory.channelId,
    projectId: memory.projectId,
    topicId: memory.topicId,
    source: memory.source,
    importance: memory.importance,
    pinned: memory.pinned ? 1 : 0,
    sourceMessageIds: JSON.stringify(memory.sourceMessageIds),
    sourceIds: JSON.stringify(memory.sourceIds),
    at,
    validFrom: memory.validFrom ?? at,
    embeddingModel: memory.embedding?.model ?? null,
    searchContext: memory.searchContext ?? null,
    searchContextMessageId: memory.searchContextMessageId ?? null,
  };
}
