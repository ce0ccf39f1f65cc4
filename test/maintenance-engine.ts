import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { type PolicyOptions, resolvePolicy } from '../src/core/policy.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import type { EpisodeSummariser } from '../src/core/ports/episode-summariser.js';
import type { MemoryMerger } from '../src/core/ports/memory-merger.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

/** An engine over real SQLite, with its storage in reach so that tests can append messages and look inside. */
export interface MaintenanceEngine {
  mneme: Mneme;
  storage: Storage;
  clock: ReturnType<typeof createFixedClock>;
  warnings: string[];
}

export interface MaintenanceEngineOptions {
  path?: string;
  start?: string;
  policy?: PolicyOptions;
  embedder?: EmbeddingModel;
  summariser?: EpisodeSummariser;
  merger?: MemoryMerger;
  dreamer?: Dreamer;
}

/** Opens an engine the way `createMneme` does, on `:memory:` unless told otherwise, with a fixed clock. */
export async function openMaintenanceEngine(options: MaintenanceEngineOptions = {}): Promise<MaintenanceEngine> {
  const storage = createSqliteStorage({ path: options.path ?? ':memory:' });
  const embedder = options.embedder ?? null;
  if (embedder) await storage.configureVectors({ model: embedder.modelId, dimensions: embedder.dimensions });
  const clock = createFixedClock(options.start ?? '2024-06-01T00:00:00.000Z');
  const warnings: string[] = [];
  const mneme = createEngine({
    storage,
    embedder,
    clock,
    logger: { warn: (message) => warnings.push(message) },
    policy: resolvePolicy(options.policy),
    summariser: options.summariser ?? createOfflineEpisodeSummariser(),
    merger: options.merger ?? createOfflineMemoryMerger(),
    dreamer: options.dreamer ?? null,
  });
  return { mneme, storage, clock, warnings };
}

/** Epoch milliseconds of `start` plus `days` days. */
export function daysAfter(start: string, days: number): number {
  return Date.parse(start) + days * 24 * 60 * 60 * 1000;
}
