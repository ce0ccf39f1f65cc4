import type { AppliedStep, ExtractionLease, ExtractionStore } from '../extraction-store.js';
import { type PostgresDatabase, type PostgresQueryable, withPgErrors, writePg } from './postgres-database.js';
import { memoryColumnsOf, type PgMemoryRow, toMemory } from './postgres-memory-rows.js';
import { createPostgresMemoryWrites } from './postgres-memory-writes.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';
import type { PostgresWriteHolds } from './postgres-write-holds.js';

/** The database server's clock in epoch milliseconds: every process sharing the database agrees on lease expiry. */
const now = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/**
 * The PostgreSQL implementation of the ExtractionStore port: leases in `extraction_leases`, expiring
 * by the database server's clock (so several `mneme serve` processes on several machines agree), and
 * each step applied in one transaction that checks the lease and the watermark under row locks (a
 * `batch` of steps too: one transaction each). A batch's `hold` opens that transaction early, with the
 * write lock, and the step's reads run in it (`holds`, through `database`): the step's `apply` commits it.
 */
export function createPostgresExtractionStore(
  database: PostgresDatabase,
  vectors: PostgresVectorIndex,
  holds: PostgresWriteHolds,
): ExtractionStore {
  const writes = createPostgresMemoryWrites(vectors, database);
  // A maintenance task's lease has no channel (`channelId` '').
  const leaseOf = (lease: ExtractionLease) =>
    lease.channelId === '' ? `the ${lease.task} task's lease` : `the ${lease.task} lease of ${lease.channelId}`;
  const link = async (q: PostgresQueryable, sourceId: number, targetId: number, type: string, at: number) =>
    q.query(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES ($1, $2, $3, 1, $4)
       ON CONFLICT (source_id, target_id, type) DO ${type === 'co_extracted' ? 'UPDATE SET strength = excluded.strength' : 'NOTHING'}`,
      [sourceId, targetId, type, at],
    );

  return {
    async claim(lease) {
      return withPgErrors(`claiming ${leaseOf(lease)}`, async () => {
        const { rows } = await database.query(
          `INSERT INTO extraction_leases (channel_id, task, owner, expires_at) VALUES ($1, $2, $3, ${now} + $4)
           ON CONFLICT (channel_id, task) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
             WHERE extraction_leases.owner = excluded.owner OR extraction_leases.expires_at <= ${now}
               OR extraction_leases.expires_at > ${now} + 2 * $4
           RETURNING owner`,
          [lease.channelId, lease.task, lease.owner, lease.ttlMs],
        );
        return rows.length > 0;
      });
    },

    async release(lease) {
      await withPgErrors(`releasing ${leaseOf(lease)}`, () =>
        database.query('DELETE FROM extraction_leases WHERE channel_id = $1 AND task = $2 AND owner = $3', [
          lease.channelId,
          lease.task,
          lease.owner,
        ]),
      );
    },

    async citing(messageId, owners) {
      if (owners.length === 0) return [];
      return withPgErrors(`reading the memories citing message ${messageId}`, async () => {
        const { rows } = await database.query<PgMemoryRow>(
          `SELECT ${memoryColumnsOf('m')} FROM memories m
           WHERE m.source_message_ids @> ARRAY[$1::bigint] AND m.archived_at IS NULL AND m.owner = ANY($2::text[])
           ORDER BY m.id`,
          [messageId, [...owners]],
        );
        return rows.map(toMemory);
      });
    },

    // Each step commits on its own: exactly once all the same, each watermark moving in its step's commit.
    // A hold opens the step's transaction before its reads (every statement of the batch's context then
    // runs on its client), and the step's `apply` commits it (ADR 19, 2026-12-03).
    batch: (work) =>
      holds.run(() =>
        work({
          othersWaiting: () => false,
          hold: () => holds.hold('holding the write lock for an extraction step'),
          commitsTogether: false,
        }),
      ),

    async apply(lease, step) {
      const result = await writePg(
        database,
        `moving the ${lease.task} watermark of ${lease.channelId} to message ${step.to}`,
        async (q) => {
          // One round trip for what the step checks: the lease's holder and the watermark (both rows locked, in
          // that order) and whether the step's messages are still there (a purge may have deleted them).
          const exchangeId = step.exchange?.messageId ?? step.to;
          const { rows } = await q.query<{ owner: string | null; watermark: number | null; found: number[] }>(
            `SELECT (SELECT owner FROM extraction_leases WHERE channel_id = $1 AND task = $2 FOR UPDATE) AS owner,
               (SELECT watermark FROM maintenance_state WHERE channel_id = $1 AND task = $2 FOR UPDATE) AS watermark,
               ARRAY(SELECT id FROM messages WHERE id IN ($3, $4)) AS found`,
            [lease.channelId, lease.task, step.to, exchangeId],
          );
          const checked = rows[0];
          if (checked?.owner !== lease.owner) return null;
          if ((checked.watermark ?? 0) !== step.from) return null;
          const messageExists = (id: number) => checked.found.includes(id);
          const applied: AppliedStep = { created: [], updated: [], chunks: [] };
          if (step.facts && messageExists(step.to)) {
            const { context, updates, inserts, linked, supersedes = [] } = step.facts;
            for (const { id, changes } of updates) {
              applied.updated.push(toMemory(await writes.update(q, id, changes, context)));
            }
            for (const memory of inserts) applied.created.push(toMemory(await writes.insert(q, memory, context)));
            for (const { insert, memoryId } of supersedes) {
              const newer = applied.created[insert];
              if (newer && (await writes.supersede(q, memoryId, newer.id, context))) {
                await link(q, newer.id, memoryId, 'supersedes', context.at);
              }
            }
            const group = [...linked, ...applied.created.map((memory) => memory.id)];
            for (const [index, sourceId] of group.entries()) {
              for (const targetId of group.slice(index + 1)) {
                if (sourceId !== targetId) await link(q, sourceId, targetId, 'co_extracted', context.at);
              }
            }
          }
          if (step.exchange && messageExists(step.exchange.messageId)) {
            const { context, messageId, chunks } = step.exchange;
            for (const [index, memory] of chunks.entries()) {
              // A place that holds a chunk already (the step applied before) is left as it is.
              const row = await writes.insertChunk(q, memory, context, { messageId, index });
              if (row) applied.chunks.push(toMemory(row));
            }
          }
          if (step.forget) {
            const { context, owners, userId, matches, before } = step.forget;
            // Built from messages before the command only, and never restored (`ExtractedForget`).
            const { rows: candidates } = await q.query<{ id: string | number; content: string }>(
              `SELECT id, content FROM memories m WHERE owner = ANY($1::text[]) AND user_id = $2 AND archived_at IS NULL
                 AND (SELECT max(source) FROM unnest(source_message_ids) AS source) < $3
                 AND NOT EXISTS (SELECT 1 FROM memory_versions v WHERE v.memory_id = m.id AND v.action = 'restore')
               ORDER BY id`,
              [[...owners], userId, before],
            );
            for (const candidate of candidates) {
              if (matches(candidate.content)) await writes.archive(q, Number(candidate.id), context);
            }
          }
          await q.query(
            `WITH state AS (
               INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at) VALUES ($1, $2, $3, $4)
               ON CONFLICT (channel_id, task) DO UPDATE SET watermark = excluded.watermark, last_run_at = excluded.last_run_at
             )
             UPDATE extraction_leases SET expires_at = ${now} + $5 WHERE channel_id = $1 AND task = $2 AND owner = $6`,
            [lease.channelId, lease.task, step.to, step.at, lease.ttlMs, lease.owner],
          );
          return applied;
        },
      );
      // The step's own transaction, held since its reads (`hold`): committed with the step. A failed
      // step's is rolled back when the batch's work throws.
      await holds.release(true);
      return result;
    },
  };
}
