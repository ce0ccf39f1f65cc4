import { DUE_MARGIN_MS, decayDueExpression, stillAsRead, toDecayCandidate } from '../decay-due-sql.js';
import {
  assertAsRead,
  assertOfOwner,
  type DueDecayCandidate,
  type MaintenanceStore,
  type MemoryText,
} from '../maintenance-store.js';
import { type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';
import { memoryColumns, type PgMemoryRow, toMemory } from './postgres-memory-rows.js';
import { createPostgresMemoryWrites } from './postgres-memory-writes.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/** The PostgreSQL implementation of the MaintenanceStore port. */
export function createPostgresMaintenanceStore(
  database: PostgresDatabase,
  vectors: PostgresVectorIndex,
): MaintenanceStore {
  const writes = createPostgresMemoryWrites(vectors, database);
  const link = (type: 'consolidated' | 'supersedes') =>
    `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES ($1, $2, '${type}', 1, $3)
     ON CONFLICT (source_id, target_id, type) DO NOTHING`;
  /** The id, owner key and text of the memories `where` picks with an id above `afterId`, oldest first. */
  const texts = (where: string, afterId: number, limit: number) =>
    withPgErrors('reading memory texts', async () => {
      const { rows } = await database.query<MemoryText>(
        `SELECT id, owner, content FROM memories WHERE ${where} AND id > $1 ORDER BY id LIMIT $2`,
        [afterId, limit],
      );
      return rows.map((row) => ({ id: Number(row.id), owner: row.owner, content: row.content }));
    });

  return {
    async decayCandidates(afterId, limit) {
      return withPgErrors('reading memories to decay', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at
           FROM memories WHERE archived_at IS NULL AND NOT pinned AND id > $1 ORDER BY id LIMIT $2`,
          [afterId, limit],
        );
        return rows.map(toDecayCandidate);
      });
    },

    // No index here (ADR 9, session 8): the rule is evaluated over every active, unpinned memory in
    // the database, which still leaves the memories that are not due out of what is sent.
    async dueForDecay(rule, until, after, limit) {
      const due = `(${decayDueExpression(rule, 'GREATEST')})::float8`;
      return withPgErrors('reading memories due to decay', async () => {
        const { rows } = await database.query<PgMemoryRow & { due: number }>(
          `SELECT id, strength, salience, importance, last_accessed, created_at, decayed_at, ${due} AS due
           FROM memories WHERE archived_at IS NULL AND NOT pinned AND ${due} <= $1::float8
             AND (${due}, id) > ($2::float8, $3::bigint)
           ORDER BY ${due}, id LIMIT $4`,
          [until + DUE_MARGIN_MS, after?.due ?? -Number.MAX_VALUE, after?.id ?? 0, limit],
        );
        return rows.map((row): DueDecayCandidate => ({ ...toDecayCandidate(row), due: row.due }));
      });
    },

    async applyImportanceChanges(changes, context) {
      if (changes.length === 0) return [];
      return writePg(database, 'storing importance downgrades', async (q) => {
        const changed: number[] = [];
        for (const change of changes) {
          const before = (
            await q.query<PgMemoryRow>(`SELECT ${memoryColumns} FROM memories WHERE id = $1 FOR UPDATE`, [change.id])
          ).rows[0];
          // Not over a retrieval, an edit or a pin that landed after decay read the memory (attack 31c).
          if (!before || !stillAsRead(before, change.read)) continue;
          if (before.importance === change.importance) {
            await q.query('UPDATE memories SET decayed_at = $1 WHERE id = $2', [change.decayedAt, change.id]);
            changed.push(change.id);
            continue;
          }
          const after = (
            await q.query<PgMemoryRow>(
              `UPDATE memories SET importance = $1, decayed_at = $2, updated_at = $3 WHERE id = $4
               RETURNING ${memoryColumns}`,
              [change.importance, change.decayedAt, context.at, change.id],
            )
          ).rows[0];
          if (!after) continue;
          await writes.recordVersion(
            q,
            after,
            'update',
            { importance: { from: before.importance, to: after.importance } },
            context,
          );
          changed.push(change.id);
        }
        return changed;
      });
    },

    async putToRest(read, context) {
      if (read.length === 0) return [];
      return writePg(database, 'putting memories to rest', async (q) => {
        const archived: number[] = [];
        for (const memory of read) {
          const before = (
            await q.query<PgMemoryRow>(`SELECT ${memoryColumns} FROM memories WHERE id = $1 FOR UPDATE`, [memory.id])
          ).rows[0];
          if (!before || !stillAsRead(before, memory)) continue;
          await writes.archive(q, memory.id, context, true);
          archived.push(memory.id);
        }
        return archived;
      });
    },

    async listAfter(afterId, limit) {
      return withPgErrors('reading memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE archived_at IS NULL AND id > $1 ORDER BY id LIMIT $2`,
          [afterId, limit],
        );
        return rows.map(toMemory);
      });
    },

    async textsAfter(afterId, limit) {
      return texts('archived_at IS NULL', afterId, limit);
    },

    async mergeableTextsAfter(afterId, limit) {
      return texts(
        "archived_at IS NULL AND NOT pinned AND superseded_by IS NULL AND category NOT IN ('episode', 'exchange')",
        afterId,
        limit,
      );
    },

    async recentWithVectors(model, limit) {
      return withPgErrors('reading recent memories', async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumns} FROM memories WHERE archived_at IS NULL AND embedding_model = $1
           ORDER BY created_at DESC, id DESC LIMIT $2`,
          [model, limit],
        );
        return rows.map(toMemory);
      });
    },

    async vectors(ids, model) {
      if (ids.length === 0 || vectors.info()?.model !== model) return new Map<number, Float32Array>();
      return withPgErrors('reading memory vectors', () => vectors.vectors(ids));
    },

    async indexStep() {
      // The PostgreSQL store has no inverted lists.
      return false;
    },

    async compactTextIndex() {
      // A GIN index has no segments to merge (its pending list is off since schema step 3).
      return false;
    },

    async latestMemoryId() {
      return withPgErrors('reading the latest memory id', async () => {
        const { rows } = await database.query<{ id: number }>('SELECT COALESCE(MAX(id), 0) AS id FROM memories');
        return rows[0]?.id ?? 0;
      });
    },

    async merge(merged, originalIds, context, read = []) {
      return writePg(database, 'merging memories', async (q) => {
        const sources = originalIds.map((id) => `#${id}`).join(', ');
        const row = await writes.insert(
          q,
          merged,
          { ...context, reason: context.reason ?? `merged from ${sources}` },
          'merge',
        );
        // Of its owner still (an audience change moves memories out of their owner, ADR 5), and as the caller read
        // it (attack 31c): refused, all rolled back.
        for (const id of originalIds) {
          const original = await writes.read(q, id);
          assertOfOwner(original.owner, id, merged.owner);
          assertAsRead({ ...original, id: Number(original.id) }, read);
        }
        for (const id of await writes.transferSupersession(q, originalIds, row.id)) {
          await q.query(link('supersedes'), [row.id, id, context.at]);
        }
        const archived = [];
        for (const id of originalIds) {
          const after = await writes.archive(q, id, { ...context, reason: `merged into #${row.id}` });
          await q.query(link('consolidated'), [row.id, id, context.at]);
          archived.push(toMemory(after));
        }
        return { merged: toMemory(row), archived };
      });
    },
  };
}
