import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import { createBatchedEmbeddingModel } from '../batched-embedding-model.js';
import type { EmbeddingModel } from '../embedding-model.js';
import { knownEmbeddingDimensions } from '../embedding-model-traits.js';

/** A tensor as `@huggingface/transformers` returns it: flat data (int64 masks are BigInt64Array) and its shape. */
export interface TransformersTensor {
  data: ArrayLike<number | bigint>;
  dims: readonly number[];
}

/** The tokenizer: texts in, `input_ids` and `attention_mask` tensors of shape [batch, tokens] out. */
export type TransformersTokenizer = (
  texts: string[],
  options: { padding: boolean; truncation: boolean },
) => Record<string, TransformersTensor> & { attention_mask: TransformersTensor };

/** The model: tokenizer output in, `last_hidden_state` [batch, tokens, hidden] (or a pooled `sentence_embedding`) out. */
export interface TransformersModel {
  (inputs: Record<string, TransformersTensor>): Promise<Record<string, TransformersTensor | undefined>>;
  config?: { hidden_size?: number };
}

interface PretrainedOptions {
  cache_dir?: string;
  local_files_only?: boolean;
}

/**
 * The part of `@huggingface/transformers` mneme uses, typed structurally so the package stays an
 * optional dependency: tests hand in a small module of their own.
 */
export interface TransformersModule {
  env: { localModelPath?: string; allowRemoteModels?: boolean; allowLocalModels?: boolean; cacheDir?: string | null };
  AutoTokenizer: { from_pretrained(model: string, options?: PretrainedOptions): Promise<TransformersTokenizer> };
  AutoModel: { from_pretrained(model: string, options?: PretrainedOptions): Promise<TransformersModel> };
}

/** Options of `createTransformersEmbeddingModel`. */
export interface TransformersEmbeddingModelOptions {
  /** A Hugging Face model with ONNX weights; `Xenova/all-MiniLM-L6-v2` (384 dimensions) by default. */
  model?: string;
  /**
   * A folder of models for air-gapped use (`<folder>/<model>/config.json`, `tokenizer.json`,
   * `onnx/model.onnx`). When set, nothing is downloaded.
   */
  localModelPath?: string;
  /**
   * Where downloaded models are kept. transformers.js defaults to `.cache/` inside its own package
   * folder (`node_modules/@huggingface/transformers/.cache`), which `npm ci` wipes; set this to keep them.
   */
  cacheDir?: string;
  /** false: use only files already in the cache or the local folder (detection never downloads). */
  allowDownloads?: boolean;
  /** Most texts run through the model at once; 32 by default. */
  batchSize?: number;
  /** Loads the module; `import('@huggingface/transformers')` by default. Tests pass their own. */
  loadModule?: () => Promise<TransformersModule>;
}

/** The default local embedding model. */
export const DEFAULT_TRANSFORMERS_MODEL = 'Xenova/all-MiniLM-L6-v2';

const PACKAGE = '@huggingface/transformers';

/**
 * Imports `@huggingface/transformers`, or throws a CONFIG_INVALID error that says how to add it: it
 * is an optional dependency, not installed with mneme.
 */
export async function importTransformers(): Promise<TransformersModule> {
  const name: string = PACKAGE;
  return loadTransformers(async () => (await import(name)) as TransformersModule);
}

async function loadTransformers(load: () => Promise<TransformersModule>): Promise<TransformersModule> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof MnemeError) throw error;
    if (isNotInstalled(error)) {
      throw new MnemeError(
        ErrorCode.ConfigInvalid,
        `local embeddings need ${PACKAGE}, an optional dependency that is not installed: run \`npm install ${PACKAGE}\` next to mneme, or set MNEME_EMBEDDER=ollama or MNEME_EMBEDDER=none`,
        { cause: error },
      );
    }
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `${PACKAGE} is installed but failed to load (${errorMessage(error)}); reinstall it, or set MNEME_EMBEDDER=none`,
      { cause: error },
    );
  }
}

function isNotInstalled(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  const message = errorMessage(error);
  return (
    code === 'ERR_MODULE_NOT_FOUND' ||
    code === 'MODULE_NOT_FOUND' ||
    (message.includes(PACKAGE) && /cannot find|failed to (load|resolve)|not found/i.test(message))
  );
}

/**
 * In-process embeddings with ONNX Runtime through `@huggingface/transformers` (optional: install it
 * yourself). Token vectors are mean-pooled over the attention mask and L2-normalised. Loads the
 * tokenizer and the model once, here, so a missing package or model fails now and clearly.
 * The model id is `transformers:<model>`.
 */
export async function createTransformersEmbeddingModel(
  options: TransformersEmbeddingModelOptions = {},
): Promise<EmbeddingModel> {
  const model = options.model ?? DEFAULT_TRANSFORMERS_MODEL;
  const transformers = options.loadModule ? await loadTransformers(options.loadModule) : await importTransformers();
  if (options.localModelPath !== undefined) {
    transformers.env.localModelPath = options.localModelPath;
    transformers.env.allowLocalModels = true;
  }
  const isLocalOnly = options.allowDownloads === false || options.localModelPath !== undefined;
  const pretrained: PretrainedOptions = {
    ...(options.cacheDir === undefined ? {} : { cache_dir: options.cacheDir }),
    ...(isLocalOnly ? { local_files_only: true } : {}),
  };
  let tokenizer: TransformersTokenizer;
  let network: TransformersModel;
  try {
    [tokenizer, network] = await Promise.all([
      transformers.AutoTokenizer.from_pretrained(model, pretrained),
      transformers.AutoModel.from_pretrained(model, pretrained),
    ]);
  } catch (error) {
    const where = options.localModelPath
      ? `in ${options.localModelPath}/${model}`
      : isLocalOnly
        ? 'in the cache (downloads are off)'
        : 'locally or from the Hugging Face hub';
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `could not load the ONNX model ${model} ${where}: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  const dimensions = network.config?.hidden_size ?? knownEmbeddingDimensions(model);
  if (!dimensions) {
    throw new MnemeError(ErrorCode.ConfigInvalid, `model ${model} does not say its hidden size; use another model`);
  }
  const modelId = `transformers:${model}`;
  return createBatchedEmbeddingModel({
    modelId,
    model,
    dimensions,
    batchSize: options.batchSize ?? 32,
    wrongDimensionsAdvice: 'its pooled output does not match its hidden size; use another model',
    async embedBatch(batch) {
      const inputs = tokenizer(batch, { padding: true, truncation: true });
      const outputs = await network(inputs);
      const pooled = outputs.sentence_embedding
        ? rows(outputs.sentence_embedding)
        : meanPool(
            requireTensor(outputs.last_hidden_state ?? outputs.token_embeddings, modelId),
            inputs.attention_mask,
          );
      return pooled.map(normalize);
    },
  });
}

function requireTensor(tensor: TransformersTensor | undefined, modelId: string): TransformersTensor {
  if (tensor?.dims.length !== 3) {
    throw new MnemeError(ErrorCode.ModelFailed, `${modelId} returned no token embeddings (last_hidden_state)`);
  }
  return tensor;
}

/**
 * Mean of the token vectors of each text, counting only tokens the attention mask marks (padding is
 * left out). `hidden` is [batch, tokens, size]; `mask` is [batch, tokens].
 */
export function meanPool(hidden: TransformersTensor, mask: TransformersTensor): Float32Array[] {
  const [batch = 0, tokens = 0, size = 0] = hidden.dims;
  const pooled: Float32Array[] = [];
  for (let row = 0; row < batch; row++) {
    const sum = new Float32Array(size);
    let count = 0;
    for (let token = 0; token < tokens; token++) {
      if (Number(mask.data[row * tokens + token] ?? 0) === 0) continue;
      count++;
      const offset = (row * tokens + token) * size;
      for (let slot = 0; slot < size; slot++) sum[slot] = (sum[slot] ?? 0) + Number(hidden.data[offset + slot] ?? 0);
    }
    if (count > 0) for (let slot = 0; slot < size; slot++) sum[slot] = (sum[slot] ?? 0) / count;
    pooled.push(sum);
  }
  return pooled;
}

/** Scales a vector to length 1 (a zero vector stays zero). */
export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (norm === 0) return vector;
  const scale = 1 / Math.sqrt(norm);
  return vector.map((value) => value * scale);
}

function rows(tensor: TransformersTensor): Float32Array[] {
  const [batch = 0, size = 0] = tensor.dims;
  return Array.from({ length: batch }, (_, row) =>
    Float32Array.from({ length: size }, (_, slot) => Number(tensor.data[row * size + slot] ?? 0)),
  );
}
