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
  /** The model whose vectors the index holds, or null before any model was configured. */
  vectorIndex(): Promise<VectorIndexInfo | null>;
  /**
   * Points the vector index at `model`. When it held another model's vectors they are dropped
   * (and must be re-embedded), so two models' vectors are never compared. Returns true when it reset.
   */
  configureVectors(info: VectorIndexInfo): Promise<boolean>;
  close(): Promise<void>;
}
