import type { Memory } from '../core/types.js';
import type { MemoryChanges, NewMemory, WriteContext } from './memory-store.js';

/**
 * A claim on one extraction watermark (a `maintenance_state` row): the one holder that may move it,
 * until its lease expires unrenewed (its process died or hangs) and another holder takes it over.
 */
export interface ExtractionLease {
  /** The watermark's channel key: a channel id, or `topic:<id>` for a topic's own watermarks. */
  channelId: string;
  /** The watermark's task: `extraction`, `conversation` or `work`. */
  task: string;
  /** The holder: a random token of one engine (so of one process). */
  owner: string;
  /** How long the lease lasts after each claim or applied step, in milliseconds of the store's own clock. */
  ttlMs: number;
}

/** What the facts of one message write: changes to memories they matched, new memories, `co_extracted` links. */
export interface ExtractedFacts {
  context: WriteContext;
  /** Memories a fact matched, with the changes that fold it in (an `update` version each). */
  updates: ReadonlyArray<{ id: number; changes: MemoryChanges }>;
  /** New memories, inserted in order. */
  inserts: readonly NewMemory[];
  /**
   * Memories the facts matched (updated, or already citing the message): linked `co_extracted`,
   * every pair of these followed by the inserts, when there are two or more.
   */
  linked: readonly number[];
  /**
   * Facts that change what a memory said: `inserts[insert]` supersedes memory `memoryId`, which is
   * marked `superseded_by` it (if still active and not superseded already) and linked `supersedes`
   * from it.
   */
  supersedes?: ReadonlyArray<{ insert: number; memoryId: number }>;
}

/** One message's exchange as chunks: `chunks[i]` is chunk `i` of message `messageId`, stored once. */
export interface ExtractedExchange {
  context: WriteContext;
  messageId: number;
  chunks: readonly NewMemory[];
}

/**
 * A `/forget` a step goes past (ADR 30, 2026-12-04): its append archived the sender's matching memories written by
 * then, and extraction may have written more since from the messages before it (a batch, a file, a backlog). Those
 * are archived in the step's transaction: every active memory of `userId` among `owners` whose content `matches`,
 * built from messages before the command's (`before`) and from none after it, and never restored: a memory the user
 * brought back (after the command's first application archived it) stays.
 */
export interface ExtractedForget {
  context: WriteContext;
  owners: readonly string[];
  userId: string;
  matches(content: string): boolean;
  before: number;
}

/** One step of an extraction run: what one message wrote, and the watermark past it. */
export interface ExtractionStep {
  /** The watermark the run holds: the step is applied only if the stored watermark is still this (0: none). */
  from: number;
  /** The watermark after the step: the message's id, or the last message the run went past. */
  to: number;
  /** Epoch milliseconds: the watermark's `lastRunAt`. */
  at: number;
  facts?: ExtractedFacts | null;
  exchange?: ExtractedExchange | null;
  forget?: ExtractedForget | null;
}

/** What an applied step wrote. */
export interface AppliedStep {
  /** The new fact memories, in order. */
  created: Memory[];
  /** The memories facts changed, as stored after the change. */
  updated: Memory[];
  /** The new exchange chunks; a chunk already stored (same message and index) is left out. */
  chunks: Memory[];
}

/**
 * Exactly-once extraction across processes and crashes: a lease per watermark, and each message's
 * memories committed in the same transaction as the watermark past it (several messages in one, in a
 * `batch`).
 */
export interface ExtractionStore {
  /**
   * Takes the lease, or renews it, in one transaction: when no one holds it, its holder is
   * `lease.owner`, or its expiry has passed (a takeover). False when another holder's lease is live.
   */
  claim(lease: ExtractionLease): Promise<boolean>;
  /** Gives the lease up, if `lease.owner` still holds it. */
  release(lease: ExtractionLease): Promise<void>;
  /** Active memories of the given owners that cite message `messageId`, by id: what its extraction already wrote. */
  citing(messageId: number, owners: readonly string[]): Promise<Memory[]>;
  /**
   * Applies one step in one transaction: the facts (updates, inserts, links), the exchange chunks
   * not stored yet, the watermark moved to `step.to`, the lease renewed (within a `batch`, a store may
   * renew the leases of its steps once, at its commit). Writes nothing and returns
   * null when `lease.owner` no longer holds the lease or the watermark is no longer `step.from`
   * (another holder moved it): the caller has lost the run and must claim again. Facts of a message
   * (`step.to`) and chunks of one (`exchange.messageId`) that was purged meanwhile are not written.
   */
  apply(lease: ExtractionLease, step: ExtractionStep): Promise<AppliedStep | null>;
  /**
   * Runs `work` as one batch: the steps it applies (`apply`, under any lease) commit together in one
   * transaction when it returns, or none of them when it throws or the process dies, and every read
   * made within `work` sees the steps it applied before. Calls from outside the batch wait for its
   * end once it holds the store (`hold`, or its first `apply`), so a batch must stay short: the
   * extraction bounds it by messages, and by milliseconds once `othersWaiting` says another call of
   * the process waits for it. A store without such a transaction may run `work` with each step
   * committed on its own (`commitsTogether` false: the PostgreSQL store): still exactly once, since
   * every step moves its watermark in its own commit. A batch started within a batch joins it.
   */
  batch<T>(work: (batch: ExtractionBatch) => Promise<T>): Promise<T>;
}

/** What a batch's work may ask of the store (`ExtractionStore.batch`). */
export interface ExtractionBatch {
  /** True while another call of the process waits for the batch to give the store back. */
  othersWaiting(): boolean;
  /**
   * Takes the store's write lock for the batch now, if it does not hold it yet: until the store
   * commits (the batch's end; without `commitsTogether`, the end of the next `apply`), every read made
   * within the batch's work runs inside the transaction that `apply` writes in, and no other writer, of
   * this process or another, commits before it. A step holds before the reads its writes are decided by
   * (the memories a fact is reconciled with), so that a fact another process wrote meanwhile is seen.
   * Calls out of the process (a chat model, an embedding model) belong before it where they can: the
   * store's other writers wait while it holds.
   */
  hold(): Promise<void>;
  /** True when the batch's steps commit together (one transaction held from the first hold or step to the end). */
  readonly commitsTogether: boolean;
}
