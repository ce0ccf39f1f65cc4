import type { StoredEmbedding } from '../storage/memory-store.js';
import type { EngineContext } from './engine-context.js';
import { errorMessage } from './errors.js';

/**
 * The document vector of each text, in order, or null for every text when there is no model or
 * the model failed: the memories are then stored lexical-only (and a warning logged) rather than
 * not stored at all. No texts: the model is not called. The context's `signal` stopping the call
 * throws its reason (the caller stops; nothing is stored).
 */
export async function embedDocuments(
  context: Pick<EngineContext, 'embedder' | 'logger' | 'signal'>,
  texts: readonly string[],
): Promise<Array<StoredEmbedding | null>> {
  const { embedder, signal } = context;
  if (!embedder || texts.length === 0) return texts.map(() => null);
  try {
    const vectors = await embedder.embed(texts, 'document', signal ? { signal } : {});
    return texts.map((_, index) => {
      const vector = vectors[index];
      return vector ? { model: embedder.modelId, vector } : null;
    });
  } catch (error) {
    signal?.throwIfAborted();
    context.logger.warn(`embedding with ${embedder.modelId} failed, stored without a vector: ${errorMessage(error)}`);
    return texts.map(() => null);
  }
}
