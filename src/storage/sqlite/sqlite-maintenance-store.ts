import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { MemoryVersion, VersionAction } from '../../core/types.js';
import type { DecayCandidate, MaintenanceStore } from '../maintenance-store.js';
import type { WriteContext } from '../memory-store.js';
import { readSqlite, writeSqlite } from './sqlite-database.js';
import { insertParameters, type MemoryRow, snapshotOf, toMemory } from './sqlite-memory-store.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

interface DecayRow {
  id: number;
  strength: number;
  salience: number;
  importance: number;
  last_accessed: number | null;
  created_at: number;
  decayed_at: number | null;
}

/** The SQLite implementation of the MaintenanceStore port. */
export function createSqliteMaintenanceStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
): MaintenanceStore {
  const statements = {
    decayCandidates: database.prepare(`SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at
      FROM memories WHERE archived_at IS NULL AND pinned = 0 AND id > ? ORDER BY id LIMIT ?`),
    importance: database.prepare(
      'UPDATE memories SET importance = @importance, decayed_at = @decayedAt, updated_at = @at WHERE id = @id AND archived_at IS NULL RETURNING *',
    ),
    decayedAt: database.prepare('UPDATE memories SET decayed_at = @decayedAt WHERE id = @id AND archived_at IS NULL'),
    byId: database.prepare('SELECT * FROM memories WHERE id = ?'),
    listAfter: database.prepare('SELECT * FROM memories WHERE archived_at IS NULL AND id > ? ORDER BY id LIMIT ?'),
    recentWithVectors: database.prepare(`SELECT * FROM memories WHERE archived_at IS NULL AND embedding_model = ?
      ORDER BY created_at DESC, id DESC LIMIT ?`),
    latestMemoryId: database.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM memories'),
    insert: database.prepare(`INSERT INTO memories (
        content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id, source,
        importance, pinned, source_message_ids, source_ids, valid_from, created_at, updated_at, embedding_model
      ) VALUES (
        @content, @category, @sector, @scope, @owner, @userId, @channelId, @projectId, @topicId, @source,
        @importance, @pinned, @sourceMessageIds, @sourceIds, @at, @at, @at, @embeddingModel
      ) RETURNING *`),
    archive: database.prepare(
      'UPDATE memories SET archived_at = ?, updated_at = ?, embedding_model = NULL WHERE id = ? RETURNING *',
    ),
    version:
      database.prepare(`INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
      VALUES (?, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = ?), ?, ?, ?, ?, ?, ?)`),
    link: database.prepare(`INSERT INTO memory_links (source_id, target_id, type, strength, created_at)
      VALUES (?, ?, 'consolidated', 1, ?) ON CONFLICT (source_id, target_id, type) DO NOTHING`),
  };

  function recordVersion(
    row: MemoryRow,
    action: VersionAction,
    changes: MemoryVersion['changes'],
    context: WriteContext,
    reason: string | null,
  ): void {
    statements.version.run(
      row.id,
      row.id,
      action,
      context.actor,
      reason,
      JSON.stringify(changes),
      JSON.stringify(snapshotOf(row)),
      context.at,
    );
  }

  return {
    async decayCandidates(afterId, limit) {
      return readSqlite('reading memories to decay', () =>
        (statements.decayCandidates.all(afterId, limit) as DecayRow[]).map(
          (row): DecayCandidate => ({
            id: row.id,
            strength: row.strength,
            salience: row.salience,
            importance: row.importance,
            pinned: false,
            lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
            createdAt: toIso(row.created_at),
            decayedAt: row.decayed_at,
          }),
        ),
      );
    },

    async applyImportanceChanges(changes, context) {
      if (changes.length === 0) return 0;
      return writeSqlite(database, 'storing importance downgrades', () => {
        let changed = 0;
        for (const change of changes) {
          const before = statements.byId.get(change.id) as MemoryRow | undefined;
          if (!before || before.archived_at !== null) continue;
          if (before.importance === change.importance) {
            statements.decayedAt.run({ id: change.id, decayedAt: change.decayedAt });
            continue;
          }
          const after = statements.importance.get({ ...change, at: context.at }) as MemoryRow;
          recordVersion(
            after,
            'update',
            { importance: { from: before.importance, to: after.importance } },
            context,
            context.reason ?? null,
          );
          changed++;
        }
        return changed;
      });
    },

    async listAfter(afterId, limit) {
      return readSqlite('reading memories', () =>
        (statements.listAfter.all(afterId, limit) as MemoryRow[]).map(toMemory),
      );
    },

    async recentWithVectors(model, limit) {
      return readSqlite('reading recent memories', () =>
        (statements.recentWithVectors.all(model, limit) as MemoryRow[]).map(toMemory),
      );
    },

    async vectors(ids, model) {
      const found = new Map<number, Float32Array>();
      if (ids.length === 0 || vectors.info()?.model !== model) return found;
      return readSqlite('reading memory vectors', () => {
        const select = database.prepare('SELECT embedding FROM memory_vectors WHERE memory_id = ?');
        for (const id of ids) {
          const row = select.get(BigInt(id)) as { embedding: Buffer } | undefined;
          if (!row) continue;
          const bytes = Uint8Array.from(row.embedding);
          found.set(id, new Float32Array(bytes.buffer, 0, bytes.byteLength / 4));
        }
        return found;
      });
    },

    async latestMemoryId() {
      return readSqlite('reading the latest memory id', () => (statements.latestMemoryId.get() as { id: number }).id);
    },

    async merge(merged, originalIds, context) {
      return writeSqlite(database, 'merging memories', () => {
        const row = statements.insert.get(insertParameters(merged, context.at)) as MemoryRow;
        if (merged.embedding) vectors.put(row.id, row.owner, merged.embedding);
        const sources = originalIds.map((id) => `#${id}`).join(', ');
        recordVersion(row, 'merge', {}, context, context.reason ?? `merged from ${sources}`);
        const archived = originalIds.map((id) => {
          const before = statements.byId.get(id) as MemoryRow | undefined;
          if (!before) throw new MnemeError(ErrorCode.NotFound, `memory ${id} does not exist`);
          if (before.archived_at !== null) {
            throw new MnemeError(ErrorCode.Conflict, `memory ${id} is already archived; it was not merged`);
          }
          const after = statements.archive.get(context.at, context.at, id) as MemoryRow;
          vectors.remove([id]);
          recordVersion(
            after,
            'archive',
            { archivedAt: { from: null, to: toIso(context.at) } },
            context,
            `merged into #${row.id}`,
          );
          statements.link.run(row.id, id, context.at);
          return toMemory(after);
        });
        return { merged: toMemory(row), archived };
      });
    },
  };
}
