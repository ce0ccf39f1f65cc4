import type { StoredEmbedding } from './memory-store.js';

/**
 * The `service_state` row counting the memories whose vector a write made stale while keeping the memory: a label of
 * ADR 44 changes the text (`Bob` becomes `Bob (eve)`) and clears `embedding_model`.
 */
export const VECTORS_CLEARED = 'vectors_cleared';

/** An active memory that has no vector of the current model yet. */
export interface MemoryWithoutVector {
  id: number;
  content: string;
}

/** A vector computed for a memory, with the content it was computed from. */
export interface BackfilledVector {
  id: number;
  /** The content that was embedded: the vector is stored only if the memory still has it. */
  content: string;
  embedding: StoredEmbedding;
}

/**
 * The reads and writes of re-embedding: after a model change, and for memories stored while no model
 * was available. Pages by id, so a run can stop at any point and resume where it left off.
 */
export interface VectorBackfillStore {
  /** How many active memories have no vector of `model`. */
  countMissing(model: string): Promise<number>;
  /** Active memories with no vector of `model` and an id greater than `afterId`, by id, at most `limit`. */
  listMissing(model: string, afterId: number, limit: number): Promise<MemoryWithoutVector[]>;
  /**
   * Stores vectors in one transaction, each only if its memory is still active and its content is
   * still the embedded one (an edit in between has re-embedded it already). Returns the ids written.
   * No version row: the memory itself did not change.
   */
  putVectors(vectors: readonly BackfilledVector[]): Promise<number[]>;
  /**
   * How many times a write has made a memory's vector stale while keeping the memory (`VECTORS_CLEARED`: the labels of
   * ADR 44), since the database was made: a background re-embedding that sees it move looks again. One row read.
   */
  clearedVectors(): Promise<number>;
}
