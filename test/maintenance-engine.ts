import { createEngine } from '../src/core/create-engine.js';
import type { EngineContext } from '../src/core/engine-context.js';
import { type ConsolidateOptions, runConsolidate } from '../src/core/maintenance/consolidate-task.js';
import type { Mneme } from '../src/core/mneme.js';
import { type PolicyOptions, resolvePolicy } from '../src/core/policy.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import type { EpisodeSummariser } from '../src/core/ports/episode-summariser.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import type { MemoryMerger } from '../src/core/ports/memory-merger.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createPgPoolDatabase, type PostgresDatabase } from '../src/storage/postgres/postgres-database.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import { hasPostgresBinaries, startTestPostgresServer } from '../src/storage/postgres/postgres-server.fixture.js';
import { freshPostgresStorage } from '../src/storage/postgres/postgres-test-database.fixture.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

/** An engine over real SQLite (or PostgreSQL), with its storage in reach so that tests can append messages and look inside. */
export interface MaintenanceEngine {
  mneme: Mneme;
  storage: Storage;
  clock: ReturnType<typeof createFixedClock>;
  warnings: string[];
}

/**
 * The stores engine tests run on: SQLite; PostgreSQL through PGlite with pgvector; and a real
 * PostgreSQL 15 the tests start (`serverEngineStores`: without pgvector, and only when its programs are
 * installed), for tests that need no vector search.
 */
export type EngineStore = 'sqlite' | 'pglite' | 'postgres';
export const engineStores: readonly EngineStore[] = ['sqlite', 'pglite'];
export const serverEngineStores: readonly EngineStore[] = hasPostgresBinaries
  ? ['sqlite', 'pglite', 'postgres']
  : engineStores;

interface SharedDatabase {
  database: Promise<PostgresDatabase>;
  stop(): Promise<void>;
}

const shared = new Map<EngineStore, SharedDatabase>();

function sharedDatabase(store: 'pglite' | 'postgres'): SharedDatabase {
  let open = shared.get(store);
  if (!open) {
    if (store === 'pglite') {
      const database = createPgliteDatabase('pglite:memory:');
      open = { database, stop: async () => (await database).close() };
    } else {
      const server = startTestPostgresServer();
      const database = server.then((started) => createPgPoolDatabase(started.url));
      open = {
        database,
        async stop() {
          await (await database).close();
          await (await server).stop();
        },
      };
    }
    shared.set(store, open);
  }
  return open;
}

/** One database per store for the test file, each engine on an empty schema of it (a new one takes seconds). */
async function postgresStorage(store: 'pglite' | 'postgres'): Promise<Storage> {
  const database = await sharedDatabase(store).database;
  return freshPostgresStorage(() => database)();
}

/** Starts what `store` needs before the first engine (PGlite or a server takes seconds: call it in a `beforeAll` with room). */
export async function prepareEngineStore(store: EngineStore): Promise<void> {
  if (store !== 'sqlite') await sharedDatabase(store).database;
}

/** Closes the databases of PGlite and server engines, and stops the server (call it in `afterAll`). */
export async function closeEngineStores(): Promise<void> {
  const open = [...shared.values()];
  shared.clear();
  for (const { stop } of open) await stop();
}

export interface MaintenanceEngineOptions {
  /** SQLite (the default), PGlite or the test server; a file `path` is SQLite's. */
  store?: EngineStore;
  path?: string;
  start?: string;
  policy?: PolicyOptions;
  embedder?: EmbeddingModel;
  summariser?: EpisodeSummariser;
  merger?: MemoryMerger;
  dreamer?: Dreamer;
  /** Finds facts in user messages; none when left out (exchange memories and commands still work). */
  extractor?: FactExtractor;
  /** SQLite's: stores with fewer vectors get no inverted lists. */
  vectorListMinVectors?: number;
  /** SQLite's: quiet full-text searches before the owner index is held in memory (0: at once; negative: never). */
  textSnapshotAfter?: number;
}

/** Opens an engine the way `createMneme` does, on `:memory:` unless told otherwise, with a fixed clock. */
export async function openMaintenanceEngine(options: MaintenanceEngineOptions = {}): Promise<MaintenanceEngine> {
  const storage =
    options.store === undefined || options.store === 'sqlite'
      ? createSqliteStorage({
          path: options.path ?? ':memory:',
          ...(options.vectorListMinVectors === undefined ? {} : { vectorListMinVectors: options.vectorListMinVectors }),
          ...(options.textSnapshotAfter === undefined ? {} : { textSnapshotAfter: options.textSnapshotAfter }),
        })
      : await postgresStorage(options.store);
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
    ...(options.extractor === undefined ? {} : { extractor: options.extractor }),
  });
  return { mneme, storage, clock, warnings };
}

/**
 * One consolidation of `engine`'s store as a task of maintenance runs it, with the offline merger and summariser, no
 * embedder and the default policy, and `options` (the near-duplicate index, the word blocks...).
 */
export async function consolidateOffline(engine: MaintenanceEngine, options: ConsolidateOptions) {
  const merger = createOfflineMemoryMerger();
  const context: EngineContext = {
    storage: engine.storage,
    embedder: null,
    clock: engine.clock,
    logger: { warn: () => {} },
    policy: resolvePolicy(),
    summariser: createOfflineEpisodeSummariser(),
    merger,
    dreamer: null,
  };
  return runConsolidate(context, merger, engine.clock.now(), options);
}

/** Epoch milliseconds of `start` plus `days` days. */
export function daysAfter(start: string, days: number): number {
  return Date.parse(start) + days * 24 * 60 * 60 * 1000;
}
