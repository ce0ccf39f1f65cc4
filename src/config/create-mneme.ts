import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import { createEngine } from '../core/create-engine.js';
import { recheckAudiences } from '../core/derived-audience.js';
import type { EngineContext, Logger } from '../core/engine-context.js';
import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import type { PolicyOptions } from '../core/policy.js';
import { checkPolicyRequest, openPolicy } from '../core/policy-state.js';
import type { Dreamer } from '../core/ports/dreamer.js';
import type { EpisodeSummariser } from '../core/ports/episode-summariser.js';
import type { FactExtractor } from '../core/ports/fact-extractor.js';
import type { MemoryMerger } from '../core/ports/memory-merger.js';
import { createChatDreamer } from '../models/chat/chat-dreamer.js';
import { createChatEpisodeSummariser } from '../models/chat/chat-episode-summariser.js';
import { createChatFactExtractor } from '../models/chat/chat-fact-extractor.js';
import { createChatMemoryMerger } from '../models/chat/chat-memory-merger.js';
import type { ChatModel } from '../models/chat-model.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { createOfflineEpisodeSummariser } from '../models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../models/offline/offline-memory-merger.js';
import { accessByOthers } from '../storage/make-folders.js';
import type { Storage } from '../storage/storage.js';
import type { VectorBackfillStore } from '../storage/vector-backfill-store.js';
import { createExtractionQueue } from '../workers/extraction-queue.js';
import { localDatabasePath, openStorage } from './open-storage.js';
import { packageVersion } from './package-version.js';
import { type ProviderConnections, resolveChatModel, resolveEmbedder } from './providers.js';

/** Options of `createMneme`. Everything but `path` has an offline default. */
export interface MnemeOptions {
  /**
   * The database: a SQLite file (created when missing) or `:memory:`; a PostgreSQL URL
   * (`postgres://user:password@host:5432/db`, pgvector used when the server has it); or PGlite
   * (`pglite:memory:`, `pglite:<folder>`; needs @electric-sql/pglite installed).
   */
  path: string;
  /**
   * Milliseconds a write waits for another process's write lock on the file (on a PostgreSQL server: the
   * database's write lock) before failing with STORE_BUSY: a whole number, 0 or more; 5000 by default.
   */
  busyTimeoutMs?: number;
  /**
   * Refuse at open, with STORE_FAILED saying which file and what to do, a SQLite database this process may not write
   * (the file, its -wal or -shm or its folder read-only to the user it runs as, or on a read-only mount). Left out
   * (false), such a file opens and serves reads, each write failing STORE_FAILED. `mneme serve`, `mcp` and `proxy`
   * set it: a service that would refuse every write does not start.
   */
  writable?: boolean;
  /**
   * The embedding model: an `EmbeddingModel`, or a setting: `'none'` (the default: lexical only, no
   * network), `'auto'` (Ollama on the configured URL if it has `nomic-embed-text`, else local ONNX if
   * installed and on disk, else none), `'ollama[:model]'`, `'openai:<model>'`, `'transformers[:model]'`.
   */
  embedder?: EmbeddingModel | string;
  /**
   * The chat model for fact extraction, episode summaries, merges and dream: a `ChatModel`, or
   * `'none'` (the default: offline), `'auto'`, `'ollama[:model]'`, `'openai:<model>'`. Explicit
   * `extractor`, `summariser`, `merger` and `dreamer` options win over it.
   */
  chat?: ChatModel | string;
  /** Where the providers named by `embedder` and `chat` settings are (URLs, API key, model folders). */
  providers?: ProviderConnections;
  /**
   * Re-embed, in the background, memories without a vector of the embedding model (after a model change, or stored
   * while it was down): at open, then every `backfillEveryMs` for an hour after the model failed. true by default when
   * there is an embedding model; `close` stops it, and the next run resumes.
   */
  backfill?: boolean;
  /**
   * How often the background re-embedding looks again for memories without a vector in the hour after the embedding
   * model failed (they were stored while it was down), and whether a speaker's label made vectors stale since its last
   * pass (ADR 44), in milliseconds: 600,000 (10 minutes) by default; 0 looks only at open.
   */
  backfillEveryMs?: number;
  /**
   * How long a recall (and `context`) waits for its query's embedding before it goes on lexical only, saying why, in
   * milliseconds: 15,000 by default (a provider's own time limit and retries can take minutes).
   */
  queryEmbedTimeoutMs?: number;
  /** Where time comes from; inject a fixed clock in tests. */
  clock?: Clock;
  /** Where warnings go; stderr by default. */
  logger?: Logger;
  /**
   * The preset a new database is created under (`mneme` by default; `matrix-bot`, `scoped-rest`,
   * `memo-rag`, `salience`). The database stores it: opening it again needs no preset, and asking for
   * another one is CONFLICT.
   */
  preset?: string;
  /**
   * Settings on top of the preset (decay, recall, context, ingest, maintenance), stored with a new
   * database. Opening a database whose stored policy differs from them is CONFLICT: change a stored
   * policy with `setPolicy` (or `mneme policy set`).
   */
  policy?: PolicyOptions;
  /** Writes episode memories; the offline (extractive) summariser by default. */
  summariser?: EpisodeSummariser;
  /** Merges near-duplicates during consolidation; the offline (rule-based) merger by default. */
  merger?: MemoryMerger;
  /** The reflective dream pass; none by default (needs a chat model), and dream reports skipped. */
  dreamer?: Dreamer | null;
  /**
   * Finds facts in ingested messages: the offline (pattern) extractor by default, a chat-model
   * extractor, or `'none'` to store messages and exchange memories without extracting facts.
   */
  extractor?: FactExtractor | 'none';
}

const stderrLogger: Logger = {
  warn: (message) => process.stderr.write(`mneme: ${message}\n`),
  info: (message) => process.stderr.write(`mneme: ${message}\n`),
};

/**
 * Opens (or creates) a mneme database and returns the engine over it.
 *
 * ```ts
 * const mneme = await createMneme({ path: './mneme.db' });
 * await mneme.remember({ content: 'Oz prefers dark mode', scope: 'personal', userId: 'oz' });
 * ```
 */
export async function createMneme(options: MnemeOptions): Promise<Mneme> {
  if (typeof options?.path !== 'string' || options.path.trim() === '') {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      'createMneme needs a path: a database file, ":memory:", or a postgres:// URL',
    );
  }
  const { busyTimeoutMs } = options;
  if (busyTimeoutMs !== undefined && !(Number.isInteger(busyTimeoutMs) && busyTimeoutMs >= 0)) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `busyTimeoutMs must be a whole number of milliseconds, 0 or more (5000 by default), not ${String(busyTimeoutMs)}`,
    );
  }
  const { backfillEveryMs, queryEmbedTimeoutMs } = options;
  checkDelay('queryEmbedTimeoutMs', queryEmbedTimeoutMs, 1, 15_000);
  checkDelay('backfillEveryMs', backfillEveryMs, 0, DEFAULT_BACKFILL_EVERY_MS);
  const policyRequest = { preset: options.preset, policy: options.policy };
  checkPolicyRequest(policyRequest);
  const logger = options.logger ?? stderrLogger;
  // Opened before the models only when a model mneme does not know needs the dimensions its index holds.
  let opened: Storage | undefined;
  const open = async () => {
    opened ??= await openStorage({
      path: options.path,
      ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }),
      ...(options.writable === undefined ? {} : { writable: options.writable }),
    });
    return opened;
  };
  let embedder: EmbeddingModel | null;
  let chat: ChatModel | null;
  try {
    embedder = await chooseEmbedder(options, logger, async (modelId) => {
      const index = await (await open()).vectorIndex();
      return index?.model === modelId ? index.dimensions : undefined;
    });
    chat = await chooseChat(options);
  } catch (error) {
    await opened?.close();
    throw error;
  }
  const storage = await open();
  // A service's store readable by other accounts of the machine (made so before mneme made its files private).
  const local = options.writable === true ? localDatabasePath(options.path) : null;
  const exposed = local && accessByOthers(local.path, local.kind);
  if (exposed) logger.warn(exposed);
  if (storage.textSearchLimit) logger.warn(storage.textSearchLimit);
  const clock = options.clock ?? systemClock;
  let policy: Awaited<ReturnType<typeof openPolicy>>['policy'];
  try {
    ({ policy } = await openPolicy(storage.policy, policyRequest, clock.now()));
    const previous = await storage.vectorIndex();
    const isReset =
      embedder !== null &&
      (await storage.configureVectors({ model: embedder.modelId, dimensions: embedder.dimensions }));
    if (isReset && options.backfill === false) {
      logger.warn(
        `the vector index held vectors of ${previous?.model}; they were dropped for ${embedder?.modelId}, and memories are found lexically until re-embedded (mneme reembed, or reembed())`,
      );
    }
  } catch (error) {
    await storage.close();
    throw error;
  }
  const backfill = embedder !== null && options.backfill !== false;
  // When the model last failed (a write then stored a memory without a vector): the background re-embedding looks again.
  const modelFailures: ModelFailures = { last: null };
  const context: EngineContext = {
    storage,
    embedder: embedder && backfill ? noteFailures(embedder, modelFailures) : embedder,
    ...(queryEmbedTimeoutMs === undefined ? {} : { queryEmbedTimeoutMs }),
    clock,
    logger,
    policy,
    summariser:
      options.summariser ?? (chat ? createChatEpisodeSummariser(chat, { logger }) : createOfflineEpisodeSummariser()),
    merger: options.merger ?? (chat ? createChatMemoryMerger(chat) : createOfflineMemoryMerger()),
    dreamer: options.dreamer !== undefined ? options.dreamer : chat ? createChatDreamer(chat) : null,
    extractor:
      options.extractor === 'none'
        ? null
        : (options.extractor ?? (chat ? createChatFactExtractor(chat, { logger }) : createOfflineExtractor())),
    extractionScheduler: (work) => createExtractionQueue(work, { logger }),
    version: packageVersion(),
  };
  const engine = createEngine(context);
  // Audience marks due at once (a database upgraded from before 2026-12-03: migration 26, PostgreSQL's 6) and those
  // a process left when it died: checked before the first read, so no memory is read wider than its sources
  // meanwhile (ADR 5), however young (a process killed after its write and started again at once, session 19); kept
  // until this engine has known them for a minute. A failure (the store busy) leaves them to the next look.
  try {
    await recheckAudiences(context);
  } catch (error) {
    logger.warn(
      `the audience checks left by an upgrade or a stopped process wait for the next maintain: ${errorMessage(error)}`,
    );
  }
  return backfill
    ? withBackfill(engine, storage.vectorBackfill, logger, backfillEveryMs ?? DEFAULT_BACKFILL_EVERY_MS, modelFailures)
    : engine;
}

/**
 * The embedding model `options.embedder` names; a setting is resolved (and `auto` detected) here, the dimensions of a
 * model mneme does not know taken from the database's index when it holds that model (`indexedDimensions`).
 */
async function chooseEmbedder(
  options: MnemeOptions,
  logger: Logger,
  indexedDimensions: (modelId: string) => Promise<number | undefined>,
): Promise<EmbeddingModel | null> {
  const { embedder } = options;
  if (embedder === undefined) return null;
  if (typeof embedder !== 'string') return embedder;
  const resolved = await resolveEmbedder(embedder, options.providers, { indexedDimensions });
  if (!resolved.model && resolved.setting.trim().toLowerCase() === 'auto') logger.info?.(resolved.reason);
  return resolved.model;
}

/** The chat model `options.chat` names, or null (offline). */
async function chooseChat(options: MnemeOptions): Promise<ChatModel | null> {
  const { chat } = options;
  if (chat === undefined) return null;
  if (typeof chat !== 'string') return chat;
  return (await resolveChatModel(chat, options.providers)).model;
}

/**
 * Refuses an option in milliseconds that is not a whole number from `min` to 2^31 - 1, the longest delay of a timer (a
 * longer one would fire at once, again and again).
 */
function checkDelay(name: string, value: number | undefined, min: 0 | 1, byDefault: number): void {
  if (value === undefined || (Number.isInteger(value) && value >= min && value < 2 ** 31)) return;
  throw new MnemeError(
    ErrorCode.ConfigInvalid,
    `${name} must be a whole number of milliseconds from ${min} to 2147483647 (${byDefault} by default), not ${String(value)}`,
  );
}

/** How often the background re-embedding looks again, by default (`MnemeOptions.backfillEveryMs`). */
const DEFAULT_BACKFILL_EVERY_MS = 600_000;

/**
 * How long after the embedding model last failed the background re-embedding keeps looking: an exchange's chunks are
 * embedded before a chat model extracts its facts, which can take minutes, so a memory without a vector may be
 * written long after the failure.
 */
const BACKFILL_WATCH_MS = 3_600_000;

/** When the embedding model last failed (`performance.now()`), or null. */
interface ModelFailures {
  last: number | null;
}

/** `model`, noting in `failures` when a call fails. */
function noteFailures(model: EmbeddingModel, failures: ModelFailures): EmbeddingModel {
  return {
    modelId: model.modelId,
    dimensions: model.dimensions,
    ...(model.inProcess === undefined ? {} : { inProcess: model.inProcess }),
    async embed(texts, purpose, options) {
      try {
        return await model.embed(texts, purpose, options);
      } catch (error) {
        failures.last = performance.now();
        throw error;
      }
    },
  };
}

/**
 * Re-embeds memories that lack a vector of the current model, in the background: at once, then every `everyMs` for as
 * long as the model failed within `BACKFILL_WATCH_MS` (0: only at once), so that what was stored while the model was
 * down gets its vector without a restart, and a store whose model never fails is not counted again. Every `everyMs` it
 * also reads how many vectors labels made stale (`clearedVectors`, one row, any process's labels: ADR 44): when that
 * moved, the labelled memories get their new text's vector without a restart either. `close` stops it first. A
 * failure is logged; the next pass (or `mneme reembed`) resumes.
 */
function withBackfill(
  engine: Mneme,
  backfill: VectorBackfillStore,
  logger: Logger,
  everyMs: number,
  failures: ModelFailures,
): Mneme {
  const controller = new AbortController();
  let running: Promise<void> | null = null;
  // The stale vectors counted before the last pass started: a label written after it is seen by the next look.
  let cleared: Promise<number | null> = backfill.clearedVectors().catch(() => null);
  const pass = () => {
    running ??= engine
      .reembed({
        signal: controller.signal,
        onProgress: (progress) => {
          if (progress.done === 0 && progress.total > 0) {
            logger.info?.(`re-embedding ${progress.total} memories with ${progress.model} in the background`);
          }
        },
      })
      .then(
        (progress) => {
          if (progress.total > 0) {
            logger.info?.(
              `re-embedded ${progress.embedded} memories with ${progress.model} (${progress.failed} failed)`,
            );
          }
        },
        (error: unknown) => {
          if (controller.signal.aborted) return;
          logger.warn(`background re-embedding stopped: ${errorMessage(error)}`);
        },
      )
      .finally(() => {
        running = null;
      });
  };
  pass();
  let looking = false;
  const watch = async () => {
    if (looking || running !== null) return;
    looking = true;
    try {
      const seen = await cleared;
      const now = await backfill.clearedVectors().catch(() => seen);
      const failed = failures.last !== null && performance.now() - failures.last < BACKFILL_WATCH_MS;
      if (controller.signal.aborted || !(failed || (now !== null && now !== seen))) return;
      cleared = Promise.resolve(now);
      pass();
    } finally {
      looking = false;
    }
  };
  const timer = everyMs > 0 ? setInterval(() => void watch(), everyMs).unref() : undefined;
  return {
    ...engine,
    async close() {
      clearInterval(timer);
      controller.abort(new MnemeError(ErrorCode.Conflict, 'mneme is closing'));
      await running;
      await engine.close();
    },
  };
}
