import { z } from 'zod';
import { CategorySchema, ContentSchema } from '../schemas.js';
import type { Scope } from '../types.js';

/** Most insights one dream pass may write for one owner. */
export const MAX_DREAM_INSIGHTS = 5;

/** A recent memory a dream reflects on. */
export interface DreamMemory {
  id: number;
  content: string;
  category: string;
  /** ISO 8601. */
  createdAt: string;
}

/** What a dreamer is given: recent memories (episodes, facts, preferences) of one owner, oldest first. */
export interface DreamInput {
  /** The scope every memory of this input shares; the insights are written in it. */
  scope: Scope;
  memories: readonly DreamMemory[];
}

/** One higher-level memory a dream found: a pattern or a recurring preference, with its evidence. */
export const DreamInsightSchema = z.object({
  content: ContentSchema,
  /** `pattern` unless the insight is a preference or a fact. */
  category: CategorySchema.default('pattern'),
  /**
   * Ids of the input memories the insight rests on (its evidence); ids not in the input are dropped, and an insight
   * naming none of the input is dropped. The insight is stored built on every input memory (ADR 46): it may say what
   * it read and name less.
   */
  sourceIds: z.array(z.number().int().positive()).min(1, 'an insight needs at least one source memory'),
});

/** What a dreamer returns (a chat model's JSON output is validated against this). */
export const DreamInsightsSchema = z.array(DreamInsightSchema).max(MAX_DREAM_INSIGHTS);

export type DreamInsight = z.output<typeof DreamInsightSchema>;

/**
 * The reflective "dream" pass: reads recent memories of one owner and proposes a few higher-level
 * ones. It needs a chat model; without one, maintenance reports the dream task as skipped.
 */
export interface Dreamer {
  /** e.g. `chat:ollama:llama3.2`. */
  readonly id: string;
  dream(input: DreamInput, options?: { signal?: AbortSignal }): Promise<DreamInsight[]>;
}
