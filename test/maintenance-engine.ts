import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { type PolicyOptions, resolvePolicy } from '../src/core/policy.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import type { EpisodeSummariser } from '../src/core/ports/episode-summariser.js';
import type { MemoryMerger } from '../src/core/ports/memory-merger.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { PostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import { freshPostgresStorage } from '../src/storage/postgres/postgres-test-database.fixture.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

/** An engine over real SQLite (or PGlite), with its storage in reach so that tests can append messages and look inside. */
export interface MaintenanceEngine {
  mneme: Mneme;
  storage: Storage;
  clock: ReturnType<typeof createFixedClock>;
  warnings: string[];
}

/** The stores engine tests run on: SQLite, and PostgreSQL through PGlite with pgvector. */
export type EngineStore = 'sqlite' | 'pglite';
export const engineStores: readonly EngineStore[] = ['sqlite', 'pglite'];

let pglite: Promise<PostgresDatabase> | null = null;

/** One PGlite database for the test file, each engine on an empty schema of it (a new PGlite takes seconds). */
async function pgliteStorage(): Promise<Storage> {
  pglite ??= createPgliteDatabase('pglite:memory:');
  const database = await pglite;
  return freshPostgresStorage(() => database)();
}

/** Starts what `store` needs before the first engine (PGlite takes seconds: call it in a `beforeAll` with room). */
export async function prepareEngineStore(store: EngineStore): Promise<void> {
  if (store === 'pglite') {
    pglite ??= createPgliteDatabase('pglite:memory:');
    await pglite;
  }
}

/** Closes the PGlite database of `store: 'pglite'` engines (call it in `afterAll`). */
export async function closeEngineStores(): Promise<void> {
  const open = pglite;
  pglite = null;
  if (open) await (await open).close();
}

export interface MaintenanceEngineOptions {
  /** SQLite (the default) or PGlite; a file `path` is SQLite's. */
  store?: EngineStore;
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
  const storage =
    options.store === 'pglite' ? await pgliteStorage() : createSqliteStorage({ path: options.path ?? ':memory:' });
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
