import type { ApiKeyStore } from './api-key-store.js';
import type { DirectoryStore } from './directory-store.js';
import type { ExtractionStore } from './extraction-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { LinkStore } from './link-store.js';
import type { MaintenanceStateStore } from './maintenance-state-store.js';
import type { MaintenanceStore } from './maintenance-store.js';
import type { MembershipStore } from './membership-store.js';
import type { MemoryStore } from './memory-store.js';
import type { MessageStore } from './message-store.js';
import type { PolicyStore } from './policy-store.js';
import type { TransferStore } from './transfer-store.js';
import type { VectorBackfillStore } from './vector-backfill-store.js';

/** The model and dimensions the vector index holds. */
export interface VectorIndexInfo {
  model: string;
  dimensions: number;
}

/** Whether a storage can search vectors, and if not, why and what would change that. */
export interface VectorSearchSupport {
  available: boolean;
  /** Null when available; else a sentence saying why not and how to make it work. */
  reason: string | null;
}

/** Whether a storage can go on serving, and if not, why. */
export interface StorageHealth {
  ok: boolean;
  /**
   * Null when ok; else one line saying what is wrong and what to do. Only what does not mend by itself: a lock held
   * by another process, a full disk or a PostgreSQL server away are answered per call (STORE_BUSY) and leave it ok.
   */
  reason: string | null;
}

/** One opened database. */
export interface Storage {
  readonly memories: MemoryStore;
  readonly links: LinkStore;
  readonly directory: DirectoryStore;
  /** Channel visibility and who belongs to which channel, topic and project. */
  readonly memberships: MembershipStore;
  /** API keys of the HTTP service (prefix and hash only). */
  readonly apiKeys: ApiKeyStore;
  /** The append-only message log (and how far `mneme ingest` got in each file). */
  readonly messages: MessageStore;
  /** Idempotency keys of the HTTP face and the responses stored under them. */
  readonly idempotency: IdempotencyStore;
  /** Per-channel watermarks of the background tasks. */
  readonly maintenanceState: MaintenanceStateStore;
  /** Leases on the extraction watermarks, and each message's extraction committed with its watermark. */
  readonly extraction: ExtractionStore;
  /** Paged reads and transactional merges of decay, consolidation, linking and dream. */
  readonly maintenance: MaintenanceStore;
  /** The policy the database runs under: its preset and changed settings, every version kept. */
  readonly policy: PolicyStore;
  /** Memories that lack a vector of the current model, and the writes that give them one. */
  readonly vectorBackfill: VectorBackfillStore;
  /** Paged reads of everything (export) and the one transaction of an import. */
  readonly transfer: TransferStore;
  /**
   * Whether `searchVector` can find anything: always with SQLite (sqlite-vec is bundled); with
   * PostgreSQL only when the server has pgvector (vectors are stored either way).
   */
  readonly vectorSearch: VectorSearchSupport;
  /**
   * Whether full-text search reads words as SQLite's does: null when it does; else a sentence saying which words it
   * cannot find and how to make it find them (a PostgreSQL database whose character classification, `LC_CTYPE`, is
   * `C` folds no letter outside ASCII to lower case: ADR 49).
   */
  readonly textSearchLimit: string | null;
  /** The model whose vectors the index holds, or null before any model was configured. */
  vectorIndex(): Promise<VectorIndexInfo | null>;
  /**
   * Points the vector index at `model`. When it held another model's vectors they are dropped
   * (and must be re-embedded), so two models' vectors are never compared. Returns true when it reset.
   */
  configureVectors(info: VectorIndexInfo): Promise<boolean>;
  /**
   * Takes the cross-process lock named `name` (a maintenance task: `maintenance:<task>`) if no other
   * process holds it, nor another call of this storage. Null when one does. PostgreSQL: a session advisory
   * lock, freed when its session ends; SQLite: a lease row renewed while held, freed by a process killed
   * while holding it once the lease expires (`SQLITE_LOCK_TTL_MS`).
   */
  tryLock(name: string): Promise<HeldLock | null>;
  /**
   * Whether the database can still be served (for health probes: cheap, no query, never waits for a lock). SQLite:
   * not ok once the file, -wal or -shm it opened was removed, moved or replaced under the process, which refuses
   * every write from then on until it is restarted or the file is put back. PostgreSQL: always ok.
   */
  health(): StorageHealth;
  close(): Promise<void>;
}

/** A named lock taken by `Storage.tryLock`. */
export interface HeldLock {
  /** Gives it up; a second call does nothing. */
  release(): Promise<void>;
  /**
   * Whether this holder still has it, checked now (SQLite: the lease renewed in this call; false when it
   * expired unrenewed, the process having paused past it, and another holder took it; PostgreSQL: false
   * once the session holding it failed). A task checks it before each step's watermark.
   */
  confirm(): Promise<boolean>;
}
