import type { EmbeddingModel } from '../models/embedding-model.js';
import type { Storage } from '../storage/storage.js';
import type { Clock } from './clock.js';
import type { ExtractionSchedulerFactory } from './ingest/extraction-scheduler.js';
import type { MnemePolicy } from './policy.js';
import type { Dreamer } from './ports/dreamer.js';
import type { EpisodeSummariser } from './ports/episode-summariser.js';
import type { FactExtractor } from './ports/fact-extractor.js';
import type { MemoryMerger } from './ports/memory-merger.js';

/** Where mneme reports what it could not do but survived (a model that failed, a skipped leg). */
export interface Logger {
  warn(message: string): void;
  /** Notices that are not problems (lexical-only mode, a background re-embed); dropped when absent. */
  info?(message: string): void;
}

/** What every use case works with: storage, the optional embedding model, the clock, a logger and the policy. */
export interface EngineContext {
  storage: Storage;
  embedder: EmbeddingModel | null;
  clock: Clock;
  logger: Logger;
  policy: MnemePolicy;
  /** Writes episode memories (offline: extractive). */
  summariser: EpisodeSummariser;
  /** Writes the memory that replaces a cluster of near-duplicates (offline: rule-based). */
  merger: MemoryMerger;
  /** The reflective dream pass; null without a chat model, and dream is skipped. */
  dreamer: Dreamer | null;
  /** Finds facts in user messages; null or left out: no fact extraction (exchange memories and commands still work). */
  extractor?: FactExtractor | null;
  /** Starts the background extraction worker; left out, extraction runs when `whenIdle()` is awaited. */
  extractionScheduler?: ExtractionSchedulerFactory;
  /** The mneme version an export's header names (`createMneme` passes the package's); left out, `unknown`. */
  version?: string;
  /**
   * Stops the model calls (extractor, embeddings) made with this context: the extraction worker's stop, so a
   * provider that never answers does not hold the close. A call it stops fails, and its step is not applied.
   */
  signal?: AbortSignal;
  /**
   * How long a recall waits for its query's embedding before it goes on lexical only, in milliseconds (15,000 when
   * left out): a provider that hangs must not hold the recall for its time limit and retries (minutes).
   */
  queryEmbedTimeoutMs?: number;
}
