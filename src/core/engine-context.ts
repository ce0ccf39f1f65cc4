import type { EmbeddingModel } from '../models/embedding-model.js';
import type { Storage, StoredEmbedding } from '../storage/memory-store.js';
import type { Clock } from './clock.js';
import type { MnemePolicy } from './policy.js';

/** Where mneme reports what it could not do but survived (a model that failed, a skipped leg). */
export interface Logger {
  warn(message: string): void;
}

/** What every use case works with: storage, the optional embedding model, the clock, a logger and the policy. */
export interface EngineContext {
  storage: Storage;
  embedder: EmbeddingModel | null;
  clock: Clock;
  logger: Logger;
  policy: MnemePolicy;
}

/**
 * The document vector of `text`, or null when there is no model or the model failed: the memory
 * is then stored lexical-only (and a warning logged) rather than not stored at all.
 */
export async function embedDocument(context: EngineContext, text: string): Promise<StoredEmbedding | null> {
  const { embedder } = context;
  if (!embedder) return null;
  try {
    const [vector] = await embedder.embed([text], 'document');
    return vector ? { model: embedder.modelId, vector } : null;
  } catch (error) {
    context.logger.warn(
      `embedding with ${embedder.modelId} failed, stored without a vector: ${error instanceof Error ? error.message : String(error)}`,
    );
    return null;
  }
}
