import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Logger } from '../core/engine-context.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import { createEngine, type Mneme } from '../core/mneme.js';
import { type PolicyOptions, resolvePolicy } from '../core/policy.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';

/** Options of `createMneme`. Everything but `path` has an offline default. */
export interface MnemeOptions {
  /** SQLite database file (created when missing), or `:memory:`. */
  path: string;
  /** The embedding model, or `'none'` (the default) for lexical-only memory with no network. */
  embedder?: EmbeddingModel | 'none';
  /** Where time comes from; inject a fixed clock in tests. */
  clock?: Clock;
  /** Where warnings go; stderr by default. */
  logger?: Logger;
  /** Decay, recall, context and ingest policies; every field has a default. */
  policy?: PolicyOptions;
}

const stderrLogger: Logger = { warn: (message) => process.stderr.write(`mneme: ${message}\n`) };

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
    throw new MnemeError(ErrorCode.ConfigInvalid, 'createMneme needs a path: a database file, or ":memory:"');
  }
  const policy = resolvePolicy(options.policy);
  const storage = createSqliteStorage({ path: options.path });
  const embedder = options.embedder === undefined || options.embedder === 'none' ? null : options.embedder;
  try {
    if (embedder) await storage.configureVectors({ model: embedder.modelId, dimensions: embedder.dimensions });
  } catch (error) {
    await storage.close();
    throw error;
  }
  return createEngine({
    storage,
    embedder,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? stderrLogger,
    policy,
  });
}
