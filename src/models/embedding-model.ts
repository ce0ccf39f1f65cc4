/** Why a text is embedded: some models (nomic) embed documents and queries with different prefixes. */
export type EmbeddingPurpose = 'document' | 'query';

/** Turns text into vectors. */
export interface EmbeddingModel {
  /** Stable id recorded with every vector, e.g. `ollama:nomic-embed-text`. */
  readonly modelId: string;
  readonly dimensions: number;
  embed(
    texts: readonly string[],
    purpose: EmbeddingPurpose,
    options?: { signal?: AbortSignal },
  ): Promise<Float32Array[]>;
}
