import type { EmbeddingModel } from '../models/embedding-model.js';
import { ErrorCode, MnemeError } from './errors.js';

/**
 * What is wrong with a vector no index can rank by, or null: a value that is not a finite float32 (a
 * provider's `1e39` is valid JSON and a finite double, but Infinity once stored as float32; NaN), or no
 * direction at all (every value 0: its cosine with anything is 0/0).
 */
export function unusableVector(vector: ArrayLike<number>): string | null {
  let nonZero = false;
  for (let index = 0; index < vector.length; index++) {
    const value = Math.fround(vector[index] ?? Number.NaN);
    if (!Number.isFinite(value)) return `value ${vector[index]} at position ${index} is not a finite float32`;
    if (value !== 0) nonZero = true;
  }
  return nonZero ? null : 'every value is 0';
}

/**
 * The model, with what it returns checked: one vector a text, each of the model's dimensions, and none the index
 * could not rank by (`unusableVector`). A call that returns otherwise fails with MODEL_FAILED, as a provider's error
 * does, so the memory is stored without a vector (and re-embedded later), and recall goes lexical, instead of a
 * refused write or a vector that breaks every later search through it. (The adapters of `models/` check count and
 * length already; a model the library user passes in may not.)
 */
export function checkedEmbedder(model: EmbeddingModel): EmbeddingModel {
  return {
    modelId: model.modelId,
    dimensions: model.dimensions,
    ...(model.inProcess === undefined ? {} : { inProcess: model.inProcess }),
    async embed(texts, purpose, options) {
      const vectors = await model.embed(texts, purpose, options);
      if (vectors.length !== texts.length) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `${model.modelId} returned ${vectors.length} vectors for ${texts.length} texts; check the model`,
        );
      }
      for (const [index, vector] of vectors.entries()) {
        if (vector.length !== model.dimensions) {
          throw new MnemeError(
            ErrorCode.ModelFailed,
            `${model.modelId} returned a vector of ${vector.length} dimensions, expected ${model.dimensions}; check the model`,
          );
        }
        const problem = unusableVector(vector);
        if (problem !== null) {
          throw new MnemeError(
            ErrorCode.ModelFailed,
            `${model.modelId} returned an unusable vector for text ${index + 1} of ${texts.length} (${problem}); check the model`,
          );
        }
      }
      return vectors;
    },
  };
}
