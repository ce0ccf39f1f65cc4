import type { EmbeddingModel } from '../embedding-model.js';

export interface FakeEmbeddingModelOptions {
  /** Vector length; 64 by default. */
  dimensions?: number;
  /** Changes the model id (and nothing else), to test a model change. */
  modelId?: string;
}

/**
 * A deterministic embedding model for tests: each lower-cased word is hashed to a few
 * dimensions and the sum is normalised, so texts that share words have a high cosine.
 * No network, no weights; the same text always gives the same vector. An aborted signal rejects.
 */
export function createFakeEmbeddingModel(options: FakeEmbeddingModelOptions = {}): EmbeddingModel & {
  readonly calls: ReadonlyArray<{ texts: readonly string[]; purpose: string }>;
} {
  const dimensions = options.dimensions ?? 64;
  const calls: Array<{ texts: readonly string[]; purpose: string }> = [];
  return {
    modelId: options.modelId ?? `fake-${dimensions}`,
    dimensions,
    inProcess: true,
    calls,
    async embed(texts, purpose, embedOptions = {}) {
      embedOptions.signal?.throwIfAborted();
      calls.push({ texts: [...texts], purpose });
      return texts.map((text) => embedText(text, dimensions));
    },
  };
}

function embedText(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    let hash = 2166136261;
    for (let index = 0; index < word.length; index++) {
      hash = Math.imul(hash ^ word.charCodeAt(index), 16777619);
    }
    for (let round = 0; round < 3; round++) {
      hash = Math.imul(hash ^ (hash >>> 13), 0x5bd1e995);
      const slot = (hash >>> 0) % dimensions;
      vector[slot] = (vector[slot] ?? 0) + ((hash & 0x10000) === 0 ? 1 : -1);
    }
  }
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let index = 0; index < dimensions; index++) vector[index] = (vector[index] ?? 0) * scale;
  return vector;
}
