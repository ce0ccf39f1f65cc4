import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type {
  Memory,
  MemorySnapshot,
  MemorySource,
  MemoryVersion,
  Scope,
  Sector,
  VersionAction,
} from '../../core/types.js';
import type { MemoryListQuery, MemoryStore, NewMemory, WriteContext } from '../memory-store.js';
import { readSqlite, writeSqlite } from './sqlite-database.js';
import { placeholders, type SqliteVectorIndex } from './sqlite-vector-index.js';

/** A row of `memories` as better-sqlite3 returns it. */
export interface MemoryRow {
  id: number;
  content: string;
  category: string;
  sector: Sector;
  scope: Scope;
  owner: string;
  user_id: string | null;
  channel_id: string | null;
  project_id: string | null;
  topic_id: string | null;
  source: MemorySource;
  importance: number;
  strength: number;
  salience: number;
  access_count: number;
  last_accessed: number | null;
  pinned: 0 | 1;
  source_message_ids: string;
  source_ids: string;
  valid_from: number;
  superseded_by: number | null;
  archived_at: number | null;
  created_at: number;
  updated_at: number;
  embedding_model: string | null;
}

interface VersionRow {
  id: number;
  memory_id: number;
  version: number;
  action: VersionAction;
  actor: string | null;
  reason: string | null;
  changes: string;
  snapshot: string;
  created_at: number;
}

const snapshotFields = ['content', 'category', 'importance', 'pinned', 'archivedAt'] as const;

/** The SQLite implementation of the MemoryStore port. */
export function createSqliteMemoryStore(database: Database.Database, vectors: SqliteVectorIndex): MemoryStore {
  const statements = {
    insert: database.prepare(`INSERT INTO memories (
        content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id, source,
        importance, pinned, source_message_ids, source_ids, valid_from, created_at, updated_at, embedding_model,
        search_context, search_context_message_id
      ) VALUES (
        @content, @category, @sector, @scope, @owner, @userId, @channelId, @projectId, @topicId, @source,
        @importance, @pinned, @sourceMessageIds, @sourceIds, @at, @at, @at, @embeddingModel, @searchContext,
        @searchContextMessageId
      ) RETURNING *`),
    byId: database.prepare('SELECT * FROM memories WHERE id = ?'),
    version:
      database.prepare(`INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
      VALUES (?, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = ?), ?, ?, ?, ?, ?, ?)`),
    history: database.prepare('SELECT * FROM memory_versions WHERE memory_id = ? ORDER BY version'),
    archive: database.prepare(
      'UPDATE memories SET archived_at = ?, updated_at = ?, embedding_model = NULL WHERE id = ? RETURNING *',
    ),
    restore: database.prepare(
      'UPDATE memories SET archived_at = NULL, updated_at = ?, embedding_model = ? WHERE id = ? RETURNING *',
    ),
    topicExists: database.prepare('SELECT 1 FROM topics WHERE id = ?'),
    touch: database.prepare(`UPDATE memories SET
        access_count = access_count + 1,
        last_accessed = @at,
        strength = COALESCE(touched.strength, memories.strength),
        salience = COALESCE(touched.salience, memories.salience),
        importance = COALESCE(touched.importance, memories.importance)
      FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.strength') AS strength,
          json_extract(value, '$.salience') AS salience, json_extract(value, '$.importance') AS importance
        FROM json_each(@touches)) AS touched
      WHERE memories.id = touched.id AND memories.archived_at IS NULL`),
    recentlyAccessed: database.prepare(`SELECT * FROM memories
      WHERE archived_at IS NULL AND (@owners IS NULL OR owner IN (SELECT value FROM json_each(@owners)))
      ORDER BY COALESCE(last_accessed, created_at) DESC, id DESC
      LIMIT @limit`),
  };
  const textSearches = new Map<number, Database.Statement>();

  function requireRow(id: number): MemoryRow {
    const row = statements.byId.get(id) as MemoryRow | undefined;
    if (!row) throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
    return row;
  }

  function recordVersion(
    row: MemoryRow,
    action: VersionAction,
    changes: MemoryVersion['changes'],
    context: WriteContext,
  ): void {
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
  }

  function textSearchStatement(ownerCount: number): Database.Statement {
    let statement = textSearches.get(ownerCount);
    if (!statement) {
      const filter = ownerCount < 0 ? '' : `AND m.owner IN (${placeholders(ownerCount)})`;
      statement = database.prepare(`SELECT m.id AS id, bm25(memories_fts, 1.0, 1.0) AS rank
        FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
        WHERE memories_fts MATCH ? AND m.archived_at IS NULL ${filter}
        ORDER BY rank LIMIT ?`);
      textSearches.set(ownerCount, statement);
    }
    return statement;
  }

  return {
    async insert(memories, context) {
      return writeSqlite(
        database,
        'storing memories',
        () =>
          memories.map((memory) => {
            if (memory.scope === 'session' && !statements.topicExists.get(memory.topicId)) {
              throw new MnemeError(ErrorCode.NotFound, `topic ${memory.topicId} does not exist; create it first`);
            }
            const row = statements.insert.get(insertParameters(memory, context.at)) as MemoryRow;
            if (memory.embedding) vectors.put(row.id, row.owner, memory.embedding);
            recordVersion(row, 'create', {}, context);
            return toMemory(row);
          }),
        context,
      );
    },

    async update(id, changes, context) {
      return writeSqlite(
        database,
        `updating memory ${id}`,
        () => {
          const before = requireRow(id);
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
          if (changes.sourceMessageIds !== undefined) {
            assignments.push('source_message_ids = @sourceMessageIds');
            values.sourceMessageIds = JSON.stringify(changes.sourceMessageIds);
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
          const unchanged = changes.embedding === undefined && changes.sourceMessageIds === undefined;
          if (Object.keys(diff).length === 0 && unchanged) return toMemory(before);
          const after = database
            .prepare(`UPDATE memories SET ${assignments.join(', ')}, updated_at = @at WHERE id = @id RETURNING *`)
            .get(values) as MemoryRow;
          if (changes.embedding === null) vectors.remove([id]);
          else if (changes.embedding) vectors.put(id, after.owner, changes.embedding);
          if (Object.keys(diff).length > 0) recordVersion(after, 'update', diff, context);
          return toMemory(after);
        },
        context,
      );
    },

    async archive(ids, context) {
      return writeSqlite(database, 'archiving memories', () =>
        ids.map((id) => {
          const before = requireRow(id);
          if (before.archived_at !== null) {
            throw new MnemeError(ErrorCode.Conflict, `memory ${id} is already archived`);
          }
          const after = statements.archive.get(context.at, context.at, id) as MemoryRow;
          vectors.remove([id]);
          recordVersion(after, 'archive', { archivedAt: { from: null, to: toIso(context.at) } }, context);
          return toMemory(after);
        }),
      );
    },

    async restore(id, embedding, context) {
      return writeSqlite(database, `restoring memory ${id}`, () => {
        const before = requireRow(id);
        if (before.archived_at === null) throw new MnemeError(ErrorCode.Conflict, `memory ${id} is not archived`);
        const after = statements.restore.get(context.at, embedding?.model ?? null, id) as MemoryRow;
        if (embedding) vectors.put(id, after.owner, embedding);
        recordVersion(after, 'restore', { archivedAt: { from: toIso(before.archived_at), to: null } }, context);
        return toMemory(after);
      });
    },

    async get(ids) {
      if (ids.length === 0) return [];
      return readSqlite('reading memories', () => {
        const rows = database
          .prepare(`SELECT * FROM memories WHERE id IN (${placeholders(ids.length)})`)
          .all(...ids) as MemoryRow[];
        const byId = new Map(rows.map((row) => [row.id, row]));
        return ids.flatMap((id) => {
          const row = byId.get(id);
          return row ? [toMemory(row)] : [];
        });
      });
    },

    async list(filter) {
      return readSqlite('listing memories', () => {
        const { where, values } = listConditions(filter);
        const total = (
          database.prepare(`SELECT COUNT(*) AS total FROM memories ${where}`).get(values) as { total: number }
        ).total;
        const rows = database
          .prepare(`SELECT * FROM memories ${where} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`)
          .all({ ...values, limit: filter.limit, offset: filter.offset }) as MemoryRow[];
        return { memories: rows.map(toMemory), total, limit: filter.limit, offset: filter.offset };
      });
    },

    async history(id) {
      return readSqlite(`reading the history of memory ${id}`, () => {
        requireRow(id);
        return (statements.history.all(id) as VersionRow[]).map(toVersion);
      });
    },

    async searchText({ terms, owners, limit }) {
      const query = ftsQuery(terms);
      if (query === null || (owners !== null && owners.length === 0)) return [];
      return readSqlite('searching memories', () => {
        const rows = textSearchStatement(owners === null ? -1 : owners.length).all(
          query,
          ...(owners ?? []),
          limit,
        ) as Array<{ id: number; rank: number }>;
        return rows.map((row) => ({ id: row.id, score: -row.rank }));
      });
    },

    async searchVector({ vector, model, owners, limit }) {
      return readSqlite('searching memory vectors', () => vectors.search(vector, model, owners, limit));
    },

    async touch(touches, at) {
      if (touches.length === 0) return;
      // Access statistics are not data a power cut must not lose: no fsync of their own.
      writeSqlite(
        database,
        'recording retrievals',
        () => {
          statements.touch.run({ at, touches: JSON.stringify(touches) });
        },
        { deferred: true },
      );
    },

    async recentlyAccessed(owners, limit) {
      if (limit <= 0 || (owners !== null && owners.length === 0)) return [];
      return readSqlite('reading recently accessed memories', () =>
        (
          statements.recentlyAccessed.all({
            owners: owners === null ? null : JSON.stringify(owners),
            limit,
          }) as MemoryRow[]
        ).map(toMemory),
      );
    },

    async stats(now) {
      return readSqlite('counting memories', () => {
        const totals = database
          .prepare(`SELECT COUNT(*) AS total,
              COALESCE(SUM(archived_at IS NULL), 0) AS active,
              COALESCE(SUM(archived_at IS NOT NULL), 0) AS archived,
              COALESCE(SUM(pinned = 1 AND archived_at IS NULL), 0) AS pinned,
              COALESCE(SUM(created_at >= ?), 0) AS addedLast7Days,
              COALESCE(SUM(archived_at IS NULL AND pinned = 0 AND importance = 0), 0) AS expiring
            FROM memories`)
          .get(now - 7 * 24 * 60 * 60 * 1000) as {
          total: number;
          active: number;
          archived: number;
          pinned: number;
          addedLast7Days: number;
          expiring: number;
        };
        const grouped = (column: 'scope' | 'category') =>
          Object.fromEntries(
            (
              database
                .prepare(
                  `SELECT ${column} AS key, COUNT(*) AS count FROM memories WHERE archived_at IS NULL GROUP BY ${column} ORDER BY ${column}`,
                )
                .all() as Array<{ key: string; count: number }>
            ).map((row) => [row.key, row.count]),
          );
        const mostAccessed = (
          database
            .prepare(`SELECT id, content, access_count, last_accessed FROM memories
              WHERE archived_at IS NULL AND access_count > 0 ORDER BY access_count DESC, id LIMIT 5`)
            .all() as Array<Pick<MemoryRow, 'id' | 'content' | 'access_count' | 'last_accessed'>>
        ).map((row) => ({
          id: row.id,
          content: row.content,
          accessCount: row.access_count,
          lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
        }));
        const count = (sql: string) => (database.prepare(sql).get() as { count: number }).count;
        return {
          ...totals,
          byScope: grouped('scope'),
          byCategory: grouped('category'),
          mostAccessed,
          messages: count('SELECT COUNT(*) AS count FROM messages'),
          links: count('SELECT COUNT(*) AS count FROM memory_links'),
        };
      });
    },

    async purgeUser(userId) {
      return writeSqlite(database, `purging user ${userId}`, () => {
        const ids = (sql: string, ...values: unknown[]) =>
          (database.prepare(sql).all(...values) as Array<{ id: number }>).map((row) => row.id);
        const count = (sql: string, ...values: unknown[]) =>
          (database.prepare(sql).get(...values) as { count: number }).count;
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
        return { userId, messages, memories, vectors: vectorCount, versions, links };
      });
    },
  };
}

/**
 * An FTS5 MATCH expression that ORs the terms, each one double-quoted (inner quotes doubled), so no
 * user text can be read as FTS5 syntax (`AND`, `NEAR`, `-`, `*`, `:`, `"`). Null when nothing is left to match.
 */
export function ftsQuery(terms: readonly string[]): string | null {
  const quoted = terms
    .map((term) => term.replaceAll('\u0000', '').trim())
    .filter((term) => term.length > 0)
    .map((term) => `"${term.replaceAll('"', '""')}"`);
  return quoted.length === 0 ? null : quoted.join(' OR ');
}

/** The named parameters of the memories INSERT for one new memory. */
export function insertParameters(memory: NewMemory, at: number) {
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
    embeddingModel: memory.embedding?.model ?? null,
    searchContext: memory.searchContext ?? null,
    searchContextMessageId: memory.searchContextMessageId ?? null,
  };
}

function listConditions(filter: MemoryListQuery): { where: string; values: Record<string, unknown> } {
  const conditions: string[] = [];
  const values: Record<string, unknown> = {};
  const equal = (column: string, key: string, value: unknown) => {
    if (value === undefined) return;
    conditions.push(`${column} = @${key}`);
    values[key] = value;
  };
  equal('scope', 'scope', filter.scope);
  equal('user_id', 'userId', filter.userId);
  equal('channel_id', 'channelId', filter.channelId);
  equal('project_id', 'projectId', filter.projectId);
  equal('topic_id', 'topicId', filter.topicId);
  equal('category', 'category', filter.category);
  if (filter.owners !== null) {
    const keys = filter.owners.map((_, index) => `owner${index}`);
    conditions.push(keys.length ? `owner IN (${keys.map((key) => `@${key}`).join(', ')})` : '0');
    filter.owners.forEach((owner, index) => {
      values[`owner${index}`] = owner;
    });
  }
  if (filter.archived === 'exclude') conditions.push('archived_at IS NULL');
  if (filter.archived === 'only') conditions.push('archived_at IS NOT NULL');
  return { where: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', values };
}

export function toMemory(row: MemoryRow): Memory {
  return {
    id: row.id,
    content: row.content,
    category: row.category,
    sector: row.sector,
    scope: row.scope,
    userId: row.user_id,
    channelId: row.channel_id,
    projectId: row.project_id,
    topicId: row.topic_id,
    source: row.source,
    importance: row.importance,
    strength: row.strength,
    salience: row.salience,
    accessCount: row.access_count,
    lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
    pinned: row.pinned === 1,
    sourceMessageIds: JSON.parse(row.source_message_ids) as number[],
    sourceIds: JSON.parse(row.source_ids) as number[],
    validFrom: toIso(row.valid_from),
    supersededBy: row.superseded_by,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    embeddingModel: row.embedding_model,
  };
}

export function snapshotOf(row: MemoryRow): MemorySnapshot {
  return {
    content: row.content,
    category: row.category,
    importance: row.importance,
    pinned: row.pinned === 1,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
  };
}

function diffSnapshots(before: MemorySnapshot, after: MemorySnapshot): MemoryVersion['changes'] {
  const changes: MemoryVersion['changes'] = {};
  for (const field of snapshotFields) {
    if (before[field] !== after[field]) changes[field] = { from: before[field], to: after[field] };
  }
  return changes;
}

function toVersion(row: VersionRow): MemoryVersion {
  return {
    id: row.id,
    memoryId: row.memory_id,
    version: row.version,
    action: row.action,
    actor: row.actor,
    reason: row.reason,
    changes: JSON.parse(row.changes) as MemoryVersion['changes'],
    snapshot: JSON.parse(row.snapshot) as MemorySnapshot,
    createdAt: toIso(row.created_at),
  };
}
