/** Why a text is embedded: some models (nomic) embed documents and queries with different prefixes. */
export type EmbeddingPurpose = 'document' | 'query';

/** Turns text into vectors. */
export interface EmbeddingModel {
  /** Stable id recorded with every vector, e.g. `ollama:nomic-embed-text`. */
  readonly modelId: string;
  readonly dimensions: number;
  /**
   * True for a model that answers within the process, with no I/O (the fake one): extraction may then embed while it
   * holds the store (several messages a transaction, ADR 19). Left out: every vector is made before the store is held,
   * one message a transaction, so a provider that is slow or never answers does not hold every other call.
   */
  readonly inProcess?: boolean;
  embed(
    texts: readonly string[],
    purpose: EmbeddingPurpose,
    options?: { signal?: AbortSignal },
  ): Promise<Float32Array[]>;
}
