import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import type { EmbeddingModel } from './embedding-model.js';
import { purposePrefix } from './embedding-model-traits.js';

/** What an embedding adapter supplies to `createBatchedEmbeddingModel`: its id, its size and one batch call. */
export interface BatchedEmbeddingModelOptions {
  /** Recorded with every vector, e.g. `ollama:nomic-embed-text`. */
  modelId: string;
  /** The model's name, which decides the purpose prefix (nomic, e5; see `purposePrefix`). */
  model: string;
  dimensions: number;
  /** Most texts passed to `embedBatch` at once. */
  batchSize: number;
  /** Embeds texts that already carry their prefix: one vector per text, in the same order. */
  embedBatch(batch: string[], signal: AbortSignal | undefined): Promise<ArrayLike<number>[]>;
  /** What to do when a vector has the wrong length; by default, set MNEME_EMBEDDER_DIMENSIONS to it. */
  wrongDimensionsAdvice?: string;
}

/**
 * An EmbeddingModel around an adapter's batch call: prefixes each text for its purpose, sends the
 * texts in batches one at a time, stops between batches when the signal aborts, checks that each batch
 * returns one vector of `dimensions` per text, and turns any other failure into MODEL_FAILED.
 */
export function createBatchedEmbeddingModel(options: BatchedEmbeddingModelOptions): EmbeddingModel {
  const { modelId, dimensions, batchSize } = options;
  return {
    modelId,
    dimensions,
    async embed(texts, purpose, embedOptions = {}) {
      const { signal } = embedOptions;
      const prefix = purposePrefix(options.model, purpose);
      const vectors: Float32Array[] = [];
      for (let start = 0; start < texts.length; start += batchSize) {
        signal?.throwIfAborted();
        const batch = texts.slice(start, start + batchSize).map((text) => prefix + text);
        const returned = await embedBatch(batch, signal);
        if (returned.length !== batch.length) {
          throw new MnemeError(
            ErrorCode.ModelFailed,
            `${modelId} returned ${returned.length} vectors for ${batch.length} texts; check that it is an embedding model`,
          );
        }
        for (const vector of returned) {
          if (vector.length !== dimensions) {
            const advice =
              options.wrongDimensionsAdvice ?? `set the dimensions to ${vector.length} (MNEME_EMBEDDER_DIMENSIONS)`;
            throw new MnemeError(
              ErrorCode.ModelFailed,
              `${modelId} returned vectors of ${vector.length} dimensions, expected ${dimensions}; ${advice}`,
            );
          }
          vectors.push(vector instanceof Float32Array ? vector : Float32Array.from(vector));
        }
      }
      return vectors;
    },
  };

  async function embedBatch(batch: string[], signal: AbortSignal | undefined): Promise<ArrayLike<number>[]> {
    try {
      return await options.embedBatch(batch, signal);
    } catch (error) {
      if (error instanceof MnemeError || signal?.aborted) throw error;
      throw new MnemeError(
        ErrorCode.ModelFailed,
        `${modelId} could not embed ${batch.length} texts (${errorMessage(error)}); check the model, or set MNEME_EMBEDDER=none to go on with lexical search`,
        { cause: error },
      );
    }
  }
}
