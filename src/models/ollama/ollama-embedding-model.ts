import { z } from 'zod';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { createBatchedEmbeddingModel } from '../batched-embedding-model.js';
import type { EmbeddingModel } from '../embedding-model.js';
import { canonicalModelName, knownEmbeddingDimensions, purposePrefix } from '../embedding-model-traits.js';
import type { ProviderClient, ProviderHttpOptions } from '../provider-http.js';
import { createOllamaClient, DEFAULT_OLLAMA_URL } from './ollama-client.js';

/** Options of `createOllamaEmbeddingModel`. */
export interface OllamaEmbeddingModelOptions extends ProviderHttpOptions {
  /** Ollama's address; `http://127.0.0.1:11434` by default. */
  baseUrl?: string;
  /** The model; `nomic-embed-text` (768 dimensions) by default. */
  model?: string;
  /** Vector length; needed only for a model mneme does not know (see `probeOllamaEmbeddingDimensions`). */
  dimensions?: number;
  /** Most texts sent in one request; 64 by default. */
  batchSize?: number;
}

/** The default Ollama embedding model. */
export const DEFAULT_OLLAMA_EMBEDDING_MODEL = 'nomic-embed-text';

const EmbedResponseSchema = z.object({ embeddings: z.array(z.array(z.number())) });

async function requestEmbeddings(
  client: ProviderClient,
  model: string,
  texts: readonly string[],
  signal?: AbortSignal,
): Promise<number[][]> {
  const body = await client.postJson('/api/embed', { model, input: texts }, { signal });
  const parsed = EmbedResponseSchema.safeParse(body);
  if (!parsed.success) {
    throw new MnemeError(
      ErrorCode.ModelFailed,
      `Ollama at ${client.baseUrl} answered POST /api/embed without an "embeddings" array; is this an Ollama server?`,
    );
  }
  return parsed.data.embeddings;
}

/**
 * Embeddings from Ollama's `/api/embed`: texts are sent in batches, with the `search_document: ` and
 * `search_query: ` prefixes nomic models expect. The model id is `ollama:<model>`.
 *
 * ```ts
 * const embedder = createOllamaEmbeddingModel(); // nomic-embed-text on 127.0.0.1:11434
 * const mneme = await createMneme({ path: './mneme.db', embedder });
 * ```
 */
export function createOllamaEmbeddingModel(options: OllamaEmbeddingModelOptions = {}): EmbeddingModel {
  const model = canonicalModelName(options.model ?? DEFAULT_OLLAMA_EMBEDDING_MODEL);
  const dimensions = options.dimensions ?? knownEmbeddingDimensions(model);
  if (dimensions === undefined || !Number.isInteger(dimensions) || dimensions <= 0) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `the dimensions of Ollama model ${model} are not known; pass dimensions (or set MNEME_EMBEDDER_DIMENSIONS)`,
    );
  }
  const client = createOllamaClient(options.baseUrl ?? DEFAULT_OLLAMA_URL, model, 'MNEME_EMBEDDER', options);
  return createBatchedEmbeddingModel({
    modelId: `ollama:${model}`,
    model,
    dimensions,
    batchSize: options.batchSize ?? 64,
    embedBatch: (batch, signal) => requestEmbeddings(client, model, batch, signal),
  });
}

/** Asks Ollama for one vector and returns its length: the dimensions of a model mneme does not know. */
export async function probeOllamaEmbeddingDimensions(
  options: OllamaEmbeddingModelOptions & { model: string },
): Promise<number> {
  const model = canonicalModelName(options.model);
  const client = createOllamaClient(options.baseUrl ?? DEFAULT_OLLAMA_URL, model, 'MNEME_EMBEDDER', options);
  const [vector] = await requestEmbeddings(client, model, [`${purposePrefix(model, 'query')}dimensions`]);
  if (!vector?.length) throw new MnemeError(ErrorCode.ModelFailed, `Ollama model ${model} returned an empty vector`);
  return vector.length;
}
