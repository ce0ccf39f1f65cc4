import type { EmbeddingModel } from '../index.js';
import { createSeededRandom } from './seeded-random.js';

/** An embedding model that returns vectors computed beforehand, so a benchmark times mneme and not a model. */
export interface PrecomputedEmbeddingModel extends EmbeddingModel {
  /** The vector `embed` returns for `text`. */
  set(text: string, vector: Float32Array): void;
  delete(text: string): void;
}

/**
 * The model port filled from a map. A text it was not given (a fact the extractor wrote, say) gets
 * a unit vector drawn from a hash of the text: deterministic, and as cheap as a lookup, so no model
 * time enters the figures either way.
 */
export function createPrecomputedEmbeddingModel(modelId: string, dimensions: number): PrecomputedEmbeddingModel {
  const vectors = new Map<string, Float32Array>();
  return {
    modelId,
    dimensions,
    // A lookup in this process: extraction batches its steps as with an in-process model, not one call out per step.
    inProcess: true,
    set: (text, vector) => {
      vectors.set(text, vector);
    },
    delete: (text) => {
      vectors.delete(text);
    },
    async embed(texts) {
      return texts.map((text) => vectors.get(text) ?? hashedVector(text, dimensions));
    },
  };
}

function hashedVector(text: string, dimensions: number): Float32Array {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  const random = createSeededRandom(hash);
  const vector = new Float32Array(dimensions);
  let norm = 0;
  for (let index = 0; index < dimensions; index++) {
    const value = random.normal();
    vector[index] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let index = 0; index < dimensions; index++) vector[index] = (vector[index] ?? 0) * scale;
  return vector;
}
