import { randomUUID } from 'node:crypto';
import type { ExtractionLease } from '../extraction-store.js';
import type { HeldLock, Storage } from '../storage.js';
import { createSqliteApiKeyStore } from './sqlite-api-key-store.js';
import {
  DEFAULT_BUSY_TIMEOUT_MS,
  filesOutOfPlace,
  type OpenSqliteOptions,
  openSqliteDatabase,
  toMnemeError,
} from './sqlite-database.js';
import { createSqliteDirectoryStore } from './sqlite-directory-store.js';
import { createSqliteExtractionStore } from './sqlite-extraction-store.js';
import { createSqliteIdempotencyStore } from './sqlite-idempotency-store.js';
import { createSqliteLinkStore } from './sqlite-link-store.js';
import { createSqliteMaintenanceStateStore } from './sqlite-maintenance-state-store.js';
import { createSqliteMaintenanceStore } from './sqlite-maintenance-store.js';
import { createSqliteMembershipStore } from './sqlite-membership-store.js';
import { createSqliteMemoryStore } from './sqlite-memory-store.js';
import { createSqliteMessageStore } from './sqlite-message-store.js';
import { createSqlitePolicyStore } from './sqlite-policy-store.js';
import { createSqliteScheduler, scheduleSqliteStorage } from './sqlite-scheduler.js';
import { createSqliteTransferStore } from './sqlite-transfer-store.js';
import { createSqliteVectorBackfillStore } from './sqlite-vector-backfill-store.js';
import { createSqliteVectorIndex } from './sqlite-vector-index.js';

/** How long a named lock (`tryLock`) lasts unrenewed: a process that dies holding it frees it after this. */
export const SQLITE_LOCK_TTL_MS = 60_000;

/**
 * Opens (or creates) a SQLite database with FTS5 and sqlite-vec and returns mneme's storage over it;
 * every call shares the event loop and waits for locks without blocking it (`createSqliteScheduler`).
 */
export function createSqliteStorage(options: OpenSqliteOptions): Storage {
  const database = openSqliteDatabase(options);
  const vectors = createSqliteVectorIndex(database, {
    ...(options.vectorListMinVectors === undefined ? {} : { listMinVectors: options.vectorListMinVectors }),
    ...(options.vectorListProbes === undefined ? {} : { listProbes: options.vectorListProbes }),
  });
  const scheduler = createSqliteScheduler({
    busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
    progress: () => database.pragma('data_version', { simple: true }),
  });
  const extraction = createSqliteExtractionStore(database, vectors, scheduler);
  const locks = createSqliteLocks(extraction, scheduler, options.lockTtlMs ?? SQLITE_LOCK_TTL_MS);
  let isOpen = true;
  const storage: Storage = {
    memories: createSqliteMemoryStore(database, vectors, { textSnapshotAfter: options.textSnapshotAfter }),
    links: createSqliteLinkStore(database),
    apiKeys: createSqliteApiKeyStore(database),
    directory: createSqliteDirectoryStore(database),
    memberships: createSqliteMembershipStore(database),
    messages: createSqliteMessageStore(database, vectors),
    idempotency: createSqliteIdempotencyStore(database),
    maintenanceState: createSqliteMaintenanceStateStore(database),
    extraction,
    maintenance: createSqliteMaintenanceStore(database, vectors),
    vectorBackfill: createSqliteVectorBackfillStore(database, vectors),
    policy: createSqlitePolicyStore(database),
    transfer: createSqliteTransferStore(database),
    vectorSearch: { available: true, reason: null },
    textSearchLimit: null,
    tryLock: locks.take,
    health() {
      const reason = filesOutOfPlace(database);
      return { ok: reason === null, reason };
    },
    async vectorIndex() {
      return vectors.info();
    },
    async configureVectors(info) {
      try {
        return vectors.configure(info);
      } catch (error) {
        throw toMnemeError(error, 'configuring the vector index');
      }
    },
    async close() {
      if (!isOpen) return;
      isOpen = false;
      await locks.releaseAll();
      database.close();
    },
  };
  return scheduleSqliteStorage(storage, scheduler);
}

/**
 * Named locks across every process on one file (`Storage.tryLock`): a lease row each in
 * `extraction_leases` (channel key '', task = the lock's name, owner = this storage's random token),
 * taken in one transaction when free or expired, renewed every third of `ttlMs` while held, deleted on
 * release and on close. A process killed while holding one frees it when the lease expires; a holder
 * that paused past its lease learns from `confirm` whether another took it.
 */
function createSqliteLocks(
  leases: ReturnType<typeof createSqliteExtractionStore>,
  scheduler: ReturnType<typeof createSqliteScheduler>,
  ttlMs: number,
) {
  const owner = randomUUID();
  /** Held (or being taken) by this storage: one entry a name, each release acting on its own entry only. */
  const held = new Map<string, { release(): Promise<void> }>();
  return {
    /** Called through the storage's scheduler (`scheduleSqliteStorage`): the claim runs there. */
    async take(name: string): Promise<HeldLock | null> {
      // Not granted twice within this storage, also to two calls that overlap: the entry is set before the claim.
      if (held.has(name)) return null;
      const lease: ExtractionLease = { channelId: '', task: name, owner, ttlMs };
      let renewal: NodeJS.Timeout | undefined;
      let released = false;
      const entry = {
        async release() {
          if (released) return;
          released = true;
          clearInterval(renewal);
          if (held.get(name) === entry) held.delete(name);
          // A release that fails (the file closed under it) leaves the lease to expire.
          await scheduler.run(() => leases.release(lease)).catch(() => undefined);
        },
      };
      held.set(name, entry);
      let claimed = false;
      try {
        claimed = await leases.claim(lease);
      } finally {
        if (!claimed) held.delete(name);
      }
      if (!claimed) return null;
      renewal = setInterval(() => {
        scheduler.run(() => leases.claim(lease)).catch(() => undefined);
      }, ttlMs / 3);
      renewal.unref();
      return {
        release: entry.release,
        // A claim by the holder renews its own lease, or takes it again if it expired and nobody took it.
        confirm: async () => !released && (await scheduler.run(() => leases.claim(lease))),
      };
    },
    async releaseAll() {
      for (const entry of [...held.values()]) await entry.release();
    },
  };
}
