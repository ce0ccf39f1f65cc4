import { z } from 'zod';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { createBatchedEmbeddingModel } from '../batched-embedding-model.js';
import type { EmbeddingModel } from '../embedding-model.js';
import { canonicalModelName, knownEmbeddingDimensions } from '../embedding-model-traits.js';
import type { ProviderClient } from '../provider-http.js';
import { createOpenAiCompatibleClient, type OpenAiCompatibleConnection } from './openai-compatible-client.js';

/** Options of `createOpenAiCompatibleEmbeddingModel`. */
export interface OpenAiCompatibleEmbeddingModelOptions extends OpenAiCompatibleConnection {
  /** The model, e.g. `text-embedding-3-small`. */
  model: string;
  /**
   * Vector length. For a model that can shorten its vectors (OpenAI's `text-embedding-3-*`), a value
   * below its native length is sent as `dimensions`; for a model mneme does not know, it only declares
   * the length.
   */
  dimensions?: number;
  /** Most texts sent in one request; 96 by default (OpenAI accepts up to 2048). */
  batchSize?: number;
}

const EmbeddingsResponseSchema = z.object({
  data: z.array(z.object({ embedding: z.array(z.number()), index: z.number().int().optional() })),
});

async function requestEmbeddings(
  client: ProviderClient,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<number[][]> {
  const parsed = EmbeddingsResponseSchema.safeParse(await client.postJson('/embeddings', body, { signal }));
  if (!parsed.success) {
    throw new MnemeError(
      ErrorCode.ModelFailed,
      `the OpenAI-compatible server at ${client.baseUrl} answered POST /embeddings without a "data" list of embeddings`,
    );
  }
  const { data } = parsed.data;
  // The protocol lets the server answer in any order, each item naming its input by `index`: the indexes must then
  // name each input once, or a vector would be stored with a text it was not made of. Without indexes, the order given.
  if (data.every((item) => item.index === undefined)) return data.map((item) => item.embedding);
  const ordered: number[][] = [];
  for (const item of data) {
    const { index } = item;
    if (index === undefined || index < 0 || index >= data.length || ordered[index] !== undefined) {
      throw new MnemeError(
        ErrorCode.ModelFailed,
        `the OpenAI-compatible server at ${client.baseUrl} answered POST /embeddings with index fields that do not name each of its ${data.length} embeddings once (${data
          .slice(0, 10)
          .map((entry) => entry.index ?? 'none')
          .join(', ')}${data.length > 10 ? ', ...' : ''}); check the server`,
      );
    }
    ordered[index] = item.embedding;
  }
  return ordered;
}

/**
 * Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, llama.cpp, LM Studio,
 * Ollama's `/v1`): batched, with the model's purpose prefixes (nomic, e5). The model id is `openai:<model>`.
 */
export function createOpenAiCompatibleEmbeddingModel(options: OpenAiCompatibleEmbeddingModelOptions): EmbeddingModel {
  const model = canonicalModelName(options.model);
  const native = knownEmbeddingDimensions(model);
  const dimensions = options.dimensions ?? native;
  if (dimensions === undefined || !Number.isInteger(dimensions) || dimensions <= 0) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `the dimensions of model ${model} are not known; pass dimensions (or set MNEME_EMBEDDER_DIMENSIONS)`,
    );
  }
  const isShortened = native !== undefined && options.dimensions !== undefined && options.dimensions < native;
  const client = createOpenAiCompatibleClient(options, 'MNEME_EMBEDDER');
  return createBatchedEmbeddingModel({
    modelId: `openai:${model}`,
    model,
    dimensions,
    batchSize: options.batchSize ?? 96,
    embedBatch: (batch, signal) =>
      requestEmbeddings(
        client,
        { model, input: batch, encoding_format: 'float', ...(isShortened ? { dimensions } : {}) },
        signal,
      ),
  });
}

/** Asks the server for one vector and returns its length: the dimensions of a model mneme does not know. */
export async function probeOpenAiCompatibleEmbeddingDimensions(
  options: Omit<OpenAiCompatibleEmbeddingModelOptions, 'dimensions' | 'batchSize'>,
): Promise<number> {
  const model = canonicalModelName(options.model);
  const client = createOpenAiCompatibleClient(options, 'MNEME_EMBEDDER');
  const [vector] = await requestEmbeddings(client, { model, input: ['dimensions'], encoding_format: 'float' });
  if (!vector?.length) throw new MnemeError(ErrorCode.ModelFailed, `model ${model} returned an empty vector`);
  return vector.length;
}
