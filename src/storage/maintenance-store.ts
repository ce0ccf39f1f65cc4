import type { Memory } from '../core/types.js';
import type { NewMemory, WriteContext } from './memory-store.js';

/** An active, unpinned memory as decay reads it. */
export interface DecayCandidate
  extends Pick<Memory, 'id' | 'strength' | 'salience' | 'importance' | 'pinned' | 'lastAccessedAt' | 'createdAt'> {
  /** Epoch milliseconds up to which importance-steps downgrades were applied, or null. */
  decayedAt: number | null;
}

/** One importance-steps downgrade: the new importance and the time up to which it is applied. */
export interface ImportanceChange {
  id: number;
  importance: number;
  decayedAt: number;
}

/** What one merge wrote. */
export interface MergeResult {
  merged: Memory;
  archived: Memory[];
}

/**
 * The queries and writes of background maintenance (decay, consolidation, linking, dream): reads
 * in pages by id so that no task loads every memory, or every vector, at once.
 */
export interface MaintenanceStore {
  /** Active, unpinned memories with an id greater than `afterId`, by id, at most `limit`. */
  decayCandidates(afterId: number, limit: number): Promise<DecayCandidate[]>;
  /**
   * Stores importance-steps downgrades in one transaction: the new importance, the time decay is
   * applied up to, and an `update` version (with `context.reason`) for each memory whose importance changed.
   */
  applyImportanceChanges(changes: readonly ImportanceChange[], context: WriteContext): Promise<number>;
  /** Active memories with an id greater than `afterId`, oldest first, at most `limit`. */
  listAfter(afterId: number, limit: number): Promise<Memory[]>;
  /** The same memories as `listAfter`, their id, owner key and text only (consolidation's read of every memory's words). */
  textsAfter(afterId: number, limit: number): Promise<MemoryText[]>;
  /** The `limit` most recently created active memories that have a vector of `model`, newest first. */
  recentWithVectors(model: string, limit: number): Promise<Memory[]>;
  /** The stored vectors of `model` of these memories; memories without one are left out. */
  vectors(ids: readonly number[], model: string): Promise<Map<number, Float32Array>>;
  /** The highest memory id, or 0 for an empty store. */
  latestMemoryId(): Promise<number>;
  /**
   * One bounded step of merging the full-text index into one part, when it is in more than a few
   * (or a merge is under way); true when the step did work: call again until false. Consolidation
   * does so before its searches: the index answers the same searches with the same scores, each term
   * looked up in one part instead of each. An index without parts (PostgreSQL's GIN) answers false.
   */
  compactTextIndex(): Promise<boolean>;
  /**
   * One bounded step of building the vector index's inverted lists of a large store (training, then
   * assigning the existing vectors; ADR 20); true when the step did work: call again until false.
   * Linking does so before its neighbour searches. A store without such lists (PostgreSQL) answers false.
   */
  indexStep(): Promise<boolean>;
  /**
   * Consolidates, in one transaction: writes `merged` (text, FTS, vector and a `merge` version)
   * first, then archives each original (vector removed, `archive` version "merged into #id"), then
   * links the merged memory to each original (`consolidated`). Memories an original superseded are
   * superseded by the merged memory instead (with a `supersedes` link from it). If any step fails,
   * nothing is written: the originals stay visible. CONFLICT when an original is already archived.
   */
  merge(merged: NewMemory, originalIds: readonly number[], context: WriteContext): Promise<MergeResult>;
}

/** A memory's id, owner key (`ownerKey` of its scope, as stored) and text. */
export interface MemoryText {
  id: number;
  owner: string;
  content: string;
}
