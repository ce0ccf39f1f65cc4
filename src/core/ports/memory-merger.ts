import { z } from 'zod';
import { ContentSchema } from '../schemas.js';

/** One memory of a cluster consolidation found, as the merger sees it. */
export interface MergeCandidate {
  id: number;
  content: string;
  category: string;
  importance: number;
  /** ISO 8601. */
  createdAt: string;
}

/** What a merger is given: two or more near-duplicate memories of one owner, oldest first. */
export interface MergeInput {
  memories: readonly MergeCandidate[];
}

/** What a merger returns (a chat model's JSON output is validated against this). */
export const MergedMemorySchema = z.object({
  /** One statement that keeps every distinct detail of the originals, attributed by name. */
  content: ContentSchema,
});

export type MergedMemory = z.output<typeof MergedMemorySchema>;

/**
 * Writes the one memory that replaces a cluster of near-duplicates. The offline merger (keeps the
 * most complete statement, adds the others' distinct details) is the default; a chat-model merger
 * implements the same interface.
 */
export interface MemoryMerger {
  /** e.g. `offline` or `chat:ollama:llama3.2`. */
  readonly id: string;
  merge(input: MergeInput, options?: { signal?: AbortSignal }): Promise<MergedMemory>;
}
