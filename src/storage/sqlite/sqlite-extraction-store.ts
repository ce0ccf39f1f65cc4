import type Database from 'better-sqlite3';
import type { AppliedStep, ExtractionLease, ExtractionStore } from '../extraction-store.js';
import { checkFilesInPlace, readSqlite, setSynchronous, toMnemeError, writeSqlite } from './sqlite-database.js';
import { type MemoryRow, toMemory } from './sqlite-memory-rows.js';
import { createSqliteMemoryWrites } from './sqlite-memory-writes.js';
import type { SqliteScheduler } from './sqlite-scheduler.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

type LeaseKey = Pick<ExtractionLease, 'channelId' | 'task'>;

/** Prepared on first use: a file opened at an older schema version (migration tests) has no lease table yet. */
function prepareStatements(database: Database.Database) {
  return {
    // Free, its own, expired, or expiring more than twice its length ahead: no holder renews it that far (each sets it
    // one length ahead), so it was written while the clock ran fast, and waiting for it would stall the key for as long
    // as the clock was set back after a holder died (attack 25, time).
    claim: database.prepare<
      LeaseKey & { owner: string; expiresAt: number; now: number; ttlMs: number },
      { owner: string }
    >(
      `INSERT INTO extraction_leases (channel_id, task, owner, expires_at) VALUES (@channelId, @task, @owner, @expiresAt)
      ON CONFLICT (channel_id, task) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE extraction_leases.owner = excluded.owner OR extraction_leases.expires_at <= @now
          OR extraction_leases.expires_at > @now + 2 * @ttlMs
      RETURNING owner`,
    ),
    release: database.prepare<LeaseKey & { owner: string }>(
      'DELETE FROM extraction_leases WHERE channel_id = @channelId AND task = @task AND owner = @owner',
    ),
    holder: database.prepare<LeaseKey, { owner: string }>(
      'SELECT owner FROM extraction_leases WHERE channel_id = @channelId AND task = @task',
    ),
    renew: database.prepare<LeaseKey & { owner: string; expiresAt: number }>(
      `UPDATE extraction_leases SET expires_at = @expiresAt
      WHERE channel_id = @channelId AND task = @task AND owner = @owner`,
    ),
    watermark: database.prepare<LeaseKey, { watermark: number | null }>(
      'SELECT watermark FROM maintenance_state WHERE channel_id = @channelId AND task = @task',
    ),
    setWatermark: database.prepare<LeaseKey & { watermark: number; at: number }>(
      `UPDATE maintenance_state SET watermark = @watermark, last_run_at = @at
      WHERE channel_id = @channelId AND task = @task`,
    ),
    moveWatermark: database.prepare<LeaseKey & { watermark: number; at: number }>(
      `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at) VALUES (@channelId, @task, @watermark, @at)
      ON CONFLICT (channel_id, task) DO UPDATE SET watermark = excluded.watermark, last_run_at = excluded.last_run_at`,
    ),
    link: database.prepare<[number, number, number]>(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES (?, ?, 'co_extracted', 1, ?)
      ON CONFLICT (source_id, target_id, type) DO UPDATE SET strength = excluded.strength`,
    ),
    supersedesLink: database.prepare<[number, number, number]>(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES (?, ?, 'supersedes', 1, ?)
      ON CONFLICT (source_id, target_id, type) DO NOTHING`,
    ),
    messageExists: database.prepare<[number], 1>('SELECT 1 FROM messages WHERE id = ?'),
    chunkStored: database.prepare<[number, number], 1>(
      'SELECT 1 FROM memories WHERE chunk_message_id = ? AND chunk_index = ?',
    ),
    // The memories a `/forget` the step goes past may match: built from messages before it only, and never restored
    // (`ExtractedForget`).
    forgetCandidates: database.prepare<[string, string, number], { id: number; content: string }>(
      `SELECT m.id, m.content FROM memories m WHERE m.owner IN (SELECT value FROM json_each(?)) AND m.user_id = ?
        AND m.archived_at IS NULL
        AND (SELECT MAX(s.message_id) FROM memory_source_messages s WHERE s.memory_id = m.id) < ?
        AND NOT EXISTS (SELECT 1 FROM memory_versions v WHERE v.memory_id = m.id AND v.action = 'restore')
      ORDER BY m.id`,
    ),
    citing: database.prepare<{ messageId: number; owners: string }, MemoryRow>(
      `SELECT memories.* FROM memory_source_messages source JOIN memories ON memories.id = source.memory_id
      WHERE source.message_id = @messageId AND memories.archived_at IS NULL
        AND memories.owner IN (SELECT value FROM json_each(@owners))
      ORDER BY memories.id`,
    ),
  };
}

/**
 * The SQLite implementation of the ExtractionStore port: leases in `extraction_leases` (expiry by
 * this machine's clock), steps applied in one IMMEDIATE transaction without an fsync of their own
 * (a power cut loses whole steps, memories and watermark together, which the next run re-extracts).
 * A `batch` is a section of the connection's scheduler: its first hold or step opens one IMMEDIATE
 * transaction (the steps run in it, no savepoint each), committed when the batch's work returns, rolled
 * back when it throws; the batch's reads run inside it, other calls of the process wait for its end.
 * Within it a lease is checked once and renewed at the commit (ADR 19, session 7).
 */
export function createSqliteExtractionStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
  scheduler: SqliteScheduler,
): ExtractionStore {
  const writes = createSqliteMemoryWrites(database, vectors);
  let prepared: ReturnType<typeof prepareStatements> | null = null;
  const statements = () => {
    prepared ??= prepareStatements(database);
    return prepared;
  };
  const key = (lease: ExtractionLease): LeaseKey => ({ channelId: lease.channelId, task: lease.task });
  /**
   * Within a batch's transaction, per lease (its key and owner): the watermark its last step moved. The
   * transaction holds the file's write lock and the other calls of the process wait for the batch, so
   * nothing else moves that watermark or takes that lease before the commit: the next step of the lease
   * is checked against this instead of reading both rows again, and the leases are renewed once, at the
   * commit. Empty outside a batch.
   */
  const batchSteps = new Map<string, { lease: ExtractionLease; watermark: number }>();
  let batchOpen = false;
  const stepKey = (lease: ExtractionLease) => JSON.stringify([lease.channelId, lease.task, lease.owner]);
  // A maintenance task's lease has no channel (`channelId` '').
  const leaseOf = (lease: ExtractionLease) =>
    lease.channelId === '' ? `the ${lease.task} task's lease` : `the ${lease.task} lease of ${lease.channelId}`;

  return {
    async claim(lease) {
      return writeSqlite(
        database,
        `claiming ${leaseOf(lease)}`,
        () => {
          const now = Date.now();
          const row = statements().claim.get({
            ...key(lease),
            owner: lease.owner,
            expiresAt: now + lease.ttlMs,
            now,
            ttlMs: lease.ttlMs,
          });
          return row !== undefined;
        },
        { deferred: true },
      );
    },

    async release(lease) {
      writeSqlite(
        database,
        `releasing ${leaseOf(lease)}`,
        () => {
          statements().release.run({ ...key(lease), owner: lease.owner });
        },
        { deferred: true },
      );
    },

    async citing(messageId, owners) {
      if (owners.length === 0) return [];
      return readSqlite(`reading the memories citing message ${messageId}`, () =>
        statements()
          .citing.all({ messageId, owners: JSON.stringify(owners) })
          .map(toMemory),
      );
    },

    batch(work) {
      const batch = { othersWaiting: () => scheduler.waiting(), hold: () => scheduler.hold(), commitsTogether: true };
      // A batch within a batch (a topic's steps run by a channel's) joins it.
      if (scheduler.inSection()) return work(batch);
      return scheduler.section(() => work(batch), {
        open() {
          batchSteps.clear();
          batchOpen = true;
          setSynchronous(database, 'NORMAL');
          try {
            database.prepare('BEGIN IMMEDIATE').run();
          } catch (error) {
            setSynchronous(database, 'FULL');
            throw toMnemeError(error, 'beginning a batch of extraction steps');
          }
        },
        close(ok) {
          try {
            if (ok) {
              const expiresAt = Date.now();
              for (const { lease } of batchSteps.values()) {
                statements().renew.run({ ...key(lease), owner: lease.owner, expiresAt: expiresAt + lease.ttlMs });
              }
              checkFilesInPlace(database);
              database.prepare('COMMIT').run();
            }
          } catch (error) {
            throw toMnemeError(error, 'committing a batch of extraction steps');
          } finally {
            batchSteps.clear();
            batchOpen = false;
            if (database.inTransaction) database.prepare('ROLLBACK').run();
            setSynchronous(database, 'FULL');
          }
        },
      });
    },

    async apply(lease, step) {
      await scheduler.hold();
      const doing = `moving the ${lease.task} watermark of ${lease.channelId} to message ${step.to}`;
      // Within a batch's transaction, a step is no savepoint of its own: a failed step fails the
      // whole batch anyway, and a savepoint would make FTS5 write its pending terms at every step.
      const inBatch = database.inTransaction;
      const write = inBatch ? <T>(_: unknown, __: string, work: () => T) => readSqlite(doing, work) : writeSqlite;
      const before = inBatch && batchOpen ? batchSteps.get(stepKey(lease)) : undefined;
      return write(
        database,
        doing,
        () => {
          const sql = statements();
          // The lease's earlier step of this batch left the watermark at `before.watermark`, held by this owner.
          const known = before !== undefined && before.watermark === step.from;
          if (!known) {
            if (sql.holder.get(key(lease))?.owner !== lease.owner) return null;
            if ((sql.watermark.get(key(lease))?.watermark ?? 0) !== step.from) return null;
          }
          const applied: AppliedStep = { created: [], updated: [], chunks: [] };
          // Whether the step's message is still there (a purge may have deleted it), read once for its facts
          // and its exchange: the step's own writes delete no message.
          let stepMessage: boolean | undefined;
          const exists = (id: number) => {
            if (id !== step.to) return sql.messageExists.get(id) !== undefined;
            stepMessage ??= sql.messageExists.get(id) !== undefined;
            return stepMessage;
          };
          if (step.facts && exists(step.to)) {
            const { context, updates, inserts, linked, supersedes = [] } = step.facts;
            for (const { id, changes } of updates) applied.updated.push(toMemory(writes.update(id, changes, context)));
            for (const memory of inserts) applied.created.push(toMemory(writes.insert(memory, context)));
            for (const { insert, memoryId } of supersedes) {
              const newer = applied.created[insert];
              if (newer && writes.supersede(memoryId, newer.id, context)) {
                sql.supersedesLink.run(newer.id, memoryId, context.at);
              }
            }
            const group = [...linked, ...applied.created.map((memory) => memory.id)];
            for (const [index, sourceId] of group.entries()) {
              for (const targetId of group.slice(index + 1)) {
                if (sourceId !== targetId) sql.link.run(sourceId, targetId, context.at);
              }
            }
          }
          if (step.exchange && exists(step.exchange.messageId)) {
            const { context, messageId, chunks } = step.exchange;
            for (const [index, memory] of chunks.entries()) {
              if (sql.chunkStored.get(messageId, index)) continue;
              applied.chunks.push(toMemory(writes.insert(memory, context, 'create', { messageId, index })));
            }
          }
          if (step.forget) {
            const { context, owners, userId, matches, before: command } = step.forget;
            for (const candidate of sql.forgetCandidates.all(JSON.stringify(owners), userId, command)) {
              if (matches(candidate.content)) writes.archive(candidate.id, context);
            }
          }
          // The watermark's row exists once an earlier step of the batch moved it: an update, not an upsert.
          (known ? sql.setWatermark : sql.moveWatermark).run({ ...key(lease), watermark: step.to, at: step.at });
          if (inBatch && batchOpen) batchSteps.set(stepKey(lease), { lease, watermark: step.to });
          else sql.renew.run({ ...key(lease), owner: lease.owner, expiresAt: Date.now() + lease.ttlMs });
          return applied;
        },
        { deferred: true },
      );
    },
  };
}
