import type { VectorIndexInfo, VectorSearchSupport } from '../storage/storage.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, errorMessage, MnemeError } from './errors.js';

/** Where a re-embedding run stands. `done` counts memories handled (embedded, failed or skipped as edited). */
export interface ReembedProgress {
  /** The model whose vectors are being written. */
  model: string;
  /** Memories that lacked a vector when the run started: the run handles these, not later arrivals. */
  total: number;
  done: number;
  embedded: number;
  /** Memories the model could not embed; they stay lexical-only and are tried again next run. */
  failed: number;
}

/** Options of a re-embedding run. */
export interface ReembedOptions {
  /** Memories embedded per model call; 64 by default. */
  batchSize?: number;
  /** Stops the run between batches (and inside a model call); what was written stays written. */
  signal?: AbortSignal;
  /** Called after each batch, and once at the start. */
  onProgress?: (progress: ReembedProgress) => void;
}

/** The vector state of a database: which model the index holds and how many memories lack its vector. */
export interface VectorStatus {
  /** The engine's embedding model, or null (lexical only). */
  embedder: string | null;
  /** The model and dimensions the vector index holds, or null before any model was configured. */
  index: VectorIndexInfo | null;
  /** Active memories without a vector of the embedder's model (or, without an embedder, of the indexed one). */
  missing: number;
  /** Whether the database can search vectors (PostgreSQL without pgvector cannot), and if not why and how to change that. */
  search: VectorSearchSupport;
}

/** A batch failure is retried text by text; this many failures in a row (across batches) mean the model is down. */
const FAILURES_BEFORE_STOPPING = 3;

/**
 * Gives every active memory without a vector of the current model one: after a model change (the
 * index was emptied) and for memories stored while no model was available. It handles the memories
 * that lack a vector when it starts (later ones were embedded when stored). Works in batches by id
 * and writes each batch at once, so it can stop anywhere and the next run resumes where this one
 * ended. Searches meanwhile see only vectors of the current model; the rest is found lexically.
 * Throws MODEL_FAILED when the model keeps failing (what was written stays written).
 */
export async function reembedMissing(context: EngineContext, options: ReembedOptions = {}): Promise<ReembedProgress> {
  const { embedder, storage } = context;
  if (!embedder) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      'there is no embedding model to re-embed with; set MNEME_EMBEDDER or pass `embedder` to createMneme',
    );
  }
  const batchSize = options.batchSize ?? 64;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new MnemeError(ErrorCode.InvalidInput, 'batchSize must be a positive integer');
  }
  const { signal } = options;
  const embedOptions = signal ? { signal } : {};
  const progress: ReembedProgress = {
    model: embedder.modelId,
    total: await storage.vectorBackfill.countMissing(embedder.modelId),
    done: 0,
    embedded: 0,
    failed: 0,
  };
  options.onProgress?.({ ...progress });
  let afterId = 0;
  const streak = { failures: 0 };
  for (;;) {
    signal?.throwIfAborted();
    const limit = Math.min(batchSize, progress.total - progress.done);
    if (limit <= 0) break;
    const batch = await storage.vectorBackfill.listMissing(embedder.modelId, afterId, limit);
    const last = batch.at(-1);
    if (!last) break;
    afterId = last.id;
    signal?.throwIfAborted();

    let vectors: Array<Float32Array | null>;
    try {
      vectors = await embedder.embed(
        batch.map((memory) => memory.content),
        'document',
        embedOptions,
      );
      streak.failures = 0;
    } catch (error) {
      signal?.throwIfAborted();
      vectors = await embedOneByOne(context, batch, progress, streak, error, embedOptions);
    }
    const written = await storage.vectorBackfill.putVectors(
      batch.flatMap((memory, index) => {
        const vector = vectors[index];
        return vector
          ? [{ id: memory.id, content: memory.content, embedding: { model: embedder.modelId, vector } }]
          : [];
      }),
    );
    progress.embedded += written.length;
    progress.failed += vectors.filter((vector) => !vector).length;
    progress.done += batch.length;
    options.onProgress?.({ ...progress });
  }
  return progress;
}

/** After a batch failed: each text on its own, so one text the model refuses does not block the rest. */
async function embedOneByOne(
  context: EngineContext,
  batch: ReadonlyArray<{ id: number; content: string }>,
  progress: ReembedProgress,
  streak: { failures: number },
  batchError: unknown,
  embedOptions: { signal?: AbortSignal },
): Promise<Array<Float32Array | null>> {
  const embedder = context.embedder;
  if (!embedder) return batch.map(() => null);
  const vectors: Array<Float32Array | null> = [];
  let lastError = batchError;
  for (const memory of batch) {
    try {
      const [vector] = await embedder.embed([memory.content], 'document', embedOptions);
      vectors.push(vector ?? null);
      streak.failures = 0;
    } catch (error) {
      embedOptions.signal?.throwIfAborted();
      vectors.push(null);
      lastError = error;
      context.logger.warn(`could not embed memory ${memory.id} with ${embedder.modelId}: ${errorMessage(error)}`);
      if (++streak.failures >= FAILURES_BEFORE_STOPPING) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `re-embedding with ${embedder.modelId} stopped with ${progress.embedded} of ${progress.total} memories embedded: ${errorMessage(lastError)}; run it again (mneme reembed) once the model works`,
          { cause: lastError },
        );
      }
    }
  }
  return vectors;
}

/** Which model the vector index holds and how many active memories still lack its vectors. */
export async function vectorStatus(context: EngineContext): Promise<VectorStatus> {
  const index = await context.storage.vectorIndex();
  const model = context.embedder?.modelId ?? index?.model ?? '';
  return {
    embedder: context.embedder?.modelId ?? null,
    index,
    missing: await context.storage.vectorBackfill.countMissing(model),
    search: { available: context.storage.vectorSearch.available, reason: context.storage.vectorSearch.reason },
  };
}
