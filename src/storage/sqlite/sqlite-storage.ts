import type { Storage } from '../storage.js';
import { createSqliteApiKeyStore } from './sqlite-api-key-store.js';
import {
  DEFAULT_BUSY_TIMEOUT_MS,
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
  const scheduler = createSqliteScheduler({ busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS });
  let isOpen = true;
  const storage: Storage = {
    memories: createSqliteMemoryStore(database, vectors),
    links: createSqliteLinkStore(database),
    apiKeys: createSqliteApiKeyStore(database),
    directory: createSqliteDirectoryStore(database),
    memberships: createSqliteMembershipStore(database),
    messages: createSqliteMessageStore(database),
    idempotency: createSqliteIdempotencyStore(database),
    maintenanceState: createSqliteMaintenanceStateStore(database),
    extraction: createSqliteExtractionStore(database, vectors, scheduler),
    maintenance: createSqliteMaintenanceStore(database, vectors),
    vectorBackfill: createSqliteVectorBackfillStore(database, vectors),
    policy: createSqlitePolicyStore(database),
    transfer: createSqliteTransferStore(database),
    vectorSearch: { available: true, reason: null },
    async tryLock() {
      return async () => {};
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
      database.close();
    },
  };
  return scheduleSqliteStorage(storage, scheduler);
}
