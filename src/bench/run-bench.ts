import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ProgressBar } from '../cli/progress-bar.js';
import { isDatabaseUrl, openStorage } from '../config/open-storage.js';
import type { Mneme } from '../index.js';
import {
  collectGarbage,
  DIMENSIONS,
  MODEL_ID,
  openBenchMneme,
  rate,
  rememberOne,
  TOP_K,
  vectorOnlyText,
  viewerOf,
} from './bench-engine.js';
import {
  type BenchReport,
  type RecallLeg,
  type RecallViewer,
  recallViewers,
  type SystemFigures,
} from './bench-report.js';
import { measureIngestPhase, STEADY_MEMORIES } from './ingest-phase.js';
import { createNaiveBaseline, type NaiveBaseline } from './naive-baseline.js';
import { type LatencySummary, summariseLatencies } from './percentiles.js';
import { createPostgresBenchDatabase, type PostgresBenchDatabase } from './postgres-bench-database.js';
import { createPrecomputedEmbeddingModel, type PrecomputedEmbeddingModel } from './precomputed-embedding-model.js';
import { createSyntheticCorpus, type SyntheticCorpus, type SyntheticQuery } from './synthetic-corpus.js';

/** What one `mneme bench` run does. */
export interface BenchOptions {
  /** Store sizes, in memories. */
  sizes: readonly number[];
  seed: number;
  /** Recalls timed per leg and viewer (after a few untimed ones). */
  queries: number;
  /** Messages ingested, into the store of each size, to time ingest. */
  messages: number;
  /** An existing folder for the databases; each is deleted when measured. */
  directory: string;
  /** A progress bar for a step of `total` units. */
  progress: (label: string, total: number) => Pick<ProgressBar, 'update' | 'finish'>;
  /** A line of progress for a step without units. */
  log: (line: string) => void;
  /**
   * A `postgres://` URL: mneme's stores are databases the bench creates on that server (one per size,
   * dropped after it; the user needs CREATEDB) instead of SQLite files. The baseline stays SQLite.
   */
  server?: string;
  /**
   * Measure mneme on PGlite (in-process PostgreSQL with pgvector): its stores are PGlite folders in
   * `directory` instead of SQLite files. The baseline stays SQLite.
   */
  pglite?: boolean;
}

/** mneme's candidate pool for topK 10, `min(max(10 * 5, 20), 100)`, used by the baseline's hybrid legs too. */
const POOL = 50;
/**
 * Queries each system answers in every case, untimed, before any case is timed: enough recalls for a served store's
 * state (its first 32 vector searches go through SQL, then recall reads the lists' codes and its estimates into
 * memory: ADR 10, 2026-12-02, session 12), so that each case is timed in that state, not the first case alone
 * paying for it. What a first recall costs is reported beside the bench in docs/performance.md.
 */
const WARM_UP = 10;
/** Memories stored by one system before the other takes its turn. */
const BUILD_CHUNK = 1_000;
/** Recalls per case in each system's solo pass, where its peak RSS is sampled. */
const RSS_QUERIES = 20;
/** How often (in operations) the RSS is sampled: a cheap read (a timer would not fire in these loops). */
const SAMPLE_EVERY = 25;

/**
 * Measures mneme (through its library API) and the naive baseline on stores of each size built from
 * the same seeded corpus, in one process (ingest and the maintenance cycles aside). Timings are interleaved so that a noisy machine slows
 * both alike: the stores are built a chunk at a time in turn, and each query is recalled by both
 * systems one after the other (which goes first alternates). Peak RSS is sampled in a pass of
 * recalls per system with only that system open, the baseline's first (and after a collection, when
 * node runs with --expose-gc). Ingest and the maintenance cycles are mneme's alone, measured in a process
 * of their own (`measureIngestPhase`, ADR 28).
 */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const corpus = createSyntheticCorpus({ seed: options.seed, dimensions: DIMENSIONS });
  const report: BenchReport = { sizes: {} };
  for (const size of options.sizes) {
    report.sizes[String(size)] = await measureSize(corpus, size, options);
    collectGarbage();
  }
  return report;
}

/** Recall cases: which leg, for which viewer. */
const cases: Array<{ leg: RecallLeg; viewer: RecallViewer }> = (['hybrid', 'lexical', 'vector'] as const).flatMap(
  (leg) => (['unscoped', 'scoped'] as const).map((viewer) => ({ leg, viewer })),
);

/** The owner keys a viewer sees, as the baseline computes them: global, plus the user's personal key. */
function ownersOf(query: SyntheticQuery, viewer: RecallViewer): string[] {
  return viewer === 'scoped' ? ['global', `user:${query.userId}`] : ['global'];
}

function ownerKeyOf(memory: { scope: string; userId?: string; channelId?: string }): string {
  if (memory.scope === 'personal') return `user:${memory.userId}`;
  if (memory.scope === 'room') return `room:${memory.channelId}`;
  return 'global';
}

/**
 * The settings that rank by the vector leg alone: every neighbour with a cosine of 0 or more kept,
 * relevance the only score term, so a vector-only recall returns the leg's own order. The measurement
 * sets them on the database's policy (a database runs under one policy) and puts them back after.
 */
const vectorLegOnly = {
  'recall.minSimilarity': 0,
  'recall.weights': { relevance: 1, importance: 0, recency: 0, accessFrequency: 0, scope: 0, pinned: 0 },
};

/**
 * Opens the two systems over their files: the baseline, and mneme with and without the embedding model.
 */
function systems(paths: { baseline: string; mneme: string }, model: PrecomputedEmbeddingModel) {
  return {
    baseline: () => createNaiveBaseline({ path: paths.baseline, dimensions: DIMENSIONS }),
    mneme: () => openBenchMneme(paths.mneme, model),
    mnemeLexical: () => openBenchMneme(paths.mneme, 'none'),
  };
}

/** Builds a SQLite store's inverted vector lists (ADR 20) as maintenance does; a PostgreSQL store has none. */
async function buildVectorLists(path: string): Promise<void> {
  if (isDatabaseUrl(path)) return;
  const storage = await openStorage({ path });
  try {
    while (await storage.maintenance.indexStep());
  } finally {
    await storage.close();
  }
}

/** One timed recall of each system: the baseline's SQL, and mneme's `recall()`. */
function recallers(baseline: NaiveBaseline, mneme: Mneme, mnemeLexical: Mneme) {
  return {
    baseline(leg: RecallLeg, viewer: RecallViewer, query: SyntheticQuery): number {
      const owners = ownersOf(query, viewer);
      const started = performance.now();
      if (leg === 'lexical') baseline.lexical(query.text, owners, TOP_K);
      else if (leg === 'vector') baseline.vector(query.vector, owners, TOP_K);
      else baseline.hybrid(query.text, query.vector, owners, TOP_K, POOL);
      return performance.now() - started;
    },
    async mneme(leg: RecallLeg, viewer: RecallViewer, query: SyntheticQuery, index: number): Promise<number> {
      const engine = leg === 'lexical' ? mnemeLexical : mneme;
      const input = { query: leg === 'vector' ? vectorOnlyText(index) : query.text, viewer: viewerOf(query, viewer) };
      const started = performance.now();
      const result = await engine.recall({ ...input, topK: TOP_K });
      const elapsed = performance.now() - started;
      const expected = leg === 'lexical' ? 'no-model' : 'used';
      if (result.vectorLeg !== expected) {
        throw new Error(`a ${leg} recall ran with vector leg "${result.vectorLeg}", expected "${expected}"`);
      }
      return elapsed;
    },
  };
}

async function measureSize(
  corpus: SyntheticCorpus,
  size: number,
  options: BenchOptions,
): Promise<{ mneme: SystemFigures; baseline: SystemFigures }> {
  const sizeText = size.toLocaleString('en-US');
  const server: PostgresBenchDatabase | null = options.server
    ? await createPostgresBenchDatabase(options.server, `mneme_bench_${size}_${process.pid}`)
    : null;
  // A PGlite folder is opened by every engine of this process at once: they share one PGlite.
  const pgliteFolder = !server && options.pglite ? join(options.directory, `mneme-${size}.pglite`) : null;
  const paths = {
    baseline: join(options.directory, `baseline-${size}.db`),
    mneme: server ? server.url : pgliteFolder ? `pglite:${pgliteFolder}` : join(options.directory, `mneme-${size}.db`),
  };
  removeDatabase(paths.baseline);
  if (pgliteFolder) rmSync(pgliteFolder, { recursive: true, force: true });
  else if (!server) removeDatabase(paths.mneme);
  const model = createPrecomputedEmbeddingModel(MODEL_ID, DIMENSIONS);
  const open = systems(paths, model);
  const queries = Array.from({ length: options.queries + WARM_UP }, (_, index) => corpus.query(index, size));
  queries.forEach((query, index) => {
    model.set(query.text, query.vector);
    model.set(vectorOnlyText(index), query.vector);
  });

  // 1. Both stores, a chunk at a time in turn.
  let baseline = open.baseline();
  let mneme = await open.mneme();
  const build = options.progress(`storing ${sizeText} memories in each system`, size * 2);
  const buildMs = { baseline: 0, mneme: 0 };
  let stored = 0;
  for (let start = 0; start < size; start += BUILD_CHUNK) {
    const end = Math.min(size, start + BUILD_CHUNK);
    const storeBaseline = () => {
      for (let index = start; index < end; index++) {
        const memory = corpus.memory(index);
        const started = performance.now();
        baseline.insert({ content: memory.content, owner: ownerKeyOf(memory), vector: memory.vector });
        buildMs.baseline += performance.now() - started;
        if (++stored % SAMPLE_EVERY === 0) build.update(stored);
      }
    };
    const storeMneme = async () => {
      for (let index = start; index < end; index++) {
        const memory = corpus.memory(index);
        model.set(memory.content, memory.vector);
        const started = performance.now();
        await mneme.remember({
          content: memory.content,
          scope: memory.scope,
          ...(memory.userId ? { userId: memory.userId } : {}),
          ...(memory.channelId ? { channelId: memory.channelId } : {}),
        });
        buildMs.mneme += performance.now() - started;
        model.delete(memory.content);
        if (++stored % SAMPLE_EVERY === 0) build.update(stored);
      }
    };
    if ((start / BUILD_CHUNK) % 2 === 0) {
      storeBaseline();
      await storeMneme();
    } else {
      await storeMneme();
      storeBaseline();
    }
  }
  build.finish();
  baseline.close();
  await mneme.close();

  // The vector index's inverted lists (ADR 20), which a served store of this size has once its first
  // maintenance cycle ran: recall reads them (ADR 10), so they are built before the recalls are timed.
  // Their time is counted in the first cycle's below, which no longer builds them.
  const started = performance.now();
  await buildVectorLists(paths.mneme);
  const listsMs = performance.now() - started;
  // The files as a served store has them: with the lists (measured before them until session 11).
  const bytes = {
    baseline: databaseBytes(paths.baseline),
    mneme: server ? await server.bytes() : pgliteFolder ? folderBytes(pgliteFolder) : databaseBytes(paths.mneme),
  };

  // 2. Recalls, each query by both systems in turn.
  baseline = open.baseline();
  mneme = await open.mneme();
  let mnemeLexical = await open.mnemeLexical();
  let recall = recallers(baseline, mneme, mnemeLexical);
  const latencies = { baseline: emptyRecall(), mneme: emptyRecall() };
  const bar = options.progress('recalls in each system', cases.length * queries.length);
  let done = 0;
  const both = async (leg: RecallLeg, viewer: RecallViewer, query: SyntheticQuery, index: number) => {
    if (index % 2 === 0) {
      const baselineMs = recall.baseline(leg, viewer, query);
      return { baselineMs, mnemeMs: await recall.mneme(leg, viewer, query, index) };
    }
    const mnemeMs = await recall.mneme(leg, viewer, query, index);
    return { baselineMs: recall.baseline(leg, viewer, query), mnemeMs };
  };
  for (const { leg, viewer } of cases) {
    for (const [index, query] of queries.slice(0, WARM_UP).entries()) {
      await both(leg, viewer, query, index);
      if (++done % SAMPLE_EVERY === 0) bar.update(done);
    }
  }
  for (const { leg, viewer } of cases) {
    const durations = { baseline: [] as number[], mneme: [] as number[] };
    for (const [index, query] of queries.entries()) {
      if (index < WARM_UP) continue;
      const { baselineMs, mnemeMs } = await both(leg, viewer, query, index);
      durations.baseline.push(baselineMs);
      durations.mneme.push(mnemeMs);
      if (++done % SAMPLE_EVERY === 0) bar.update(done);
    }
    latencies.baseline[leg][viewer] = summariseLatencies(durations.baseline);
    latencies.mneme[leg][viewer] = summariseLatencies(durations.mneme);
  }
  bar.finish();

  // The vector leg against exact search, untimed: the 10 best of mneme's vector-only recall (as deep a
  // search as the timed ones, ranked by the vector leg alone) beside the baseline's brute-force KNN. On `mneme`
  // itself, the engine that goes on to ingest and the cycles: a third engine read its own copy of the lists' codes,
  // 25-35 MiB the allocator kept after its close, counted in their peak below (issue 17, session 12).
  const { recall: usual } = (await mneme.policy()).policy;
  await mneme.setPolicy({ settings: vectorLegOnly, actor: 'bench' });
  const recallBar = options.progress('vector leg recall against exact search', 2 * queries.length);
  const vectorRecallVsExact = { unscoped: 0, scoped: 0 };
  let compared = 0;
  for (const viewer of ['unscoped', 'scoped'] as const) {
    let share = 0;
    let counted = 0;
    for (const [index, query] of queries.entries()) {
      if (index < WARM_UP) continue;
      // The exact neighbours with a cosine of 0 or more: the engine's minSimilarity can go no lower.
      const exact = new Set(
        baseline
          .vector(query.vector, ownersOf(query, viewer), TOP_K)
          .filter((hit) => (hit.distance ?? 0) <= 1)
          .map((hit) => hit.content),
      );
      const result = await mneme.recall({
        query: vectorOnlyText(index),
        viewer: viewerOf(query, viewer),
        topK: TOP_K,
      });
      const ranked = result.hits.filter((hit) => hit.ranks.vector !== null && hit.ranks.vector <= TOP_K);
      if (exact.size > 0) {
        share += ranked.filter((hit) => exact.has(hit.memory.content)).length / exact.size;
        counted++;
      }
      if (++compared % SAMPLE_EVERY === 0) recallBar.update(compared);
    }
    vectorRecallVsExact[viewer] = counted === 0 ? Number.NaN : Math.round((share / counted) * 1000) / 1000;
  }
  recallBar.finish();
  await mneme.setPolicy({
    settings: { 'recall.minSimilarity': usual.minSimilarity, 'recall.weights': usual.weights },
    actor: 'bench',
  });

  // Hybrid recall right after a write, as a served store recalls while it remembers and ingests (session 13): each
  // timed recall follows one new memory written to both systems (mneme's `remember()`, the baseline's insert), after
  // the steady phase's memories in the corpus; only the recall is timed, the order of the systems alternating.
  const afterWrite = {
    baseline: { unscoped: [] as number[], scoped: [] as number[] },
    mneme: { unscoped: [] as number[], scoped: [] as number[] },
  };
  const writeBar = options.progress('hybrid recalls right after a write, in each system', 2 * options.queries);
  let written = 0;
  for (const viewer of recallViewers) {
    for (const [index, query] of queries.entries()) {
      if (index < WARM_UP) continue;
      const memory = corpus.memory(size + STEADY_MEMORIES + written);
      await rememberOne(mneme, model, memory);
      baseline.insert({ content: memory.content, owner: ownerKeyOf(memory), vector: memory.vector });
      const { baselineMs, mnemeMs } = await both('hybrid', viewer, query, index);
      afterWrite.baseline[viewer].push(baselineMs);
      afterWrite.mneme[viewer].push(mnemeMs);
      if (++written % SAMPLE_EVERY === 0) writeBar.update(written);
    }
  }
  writeBar.finish();
  const recallAfterWrite = (durations: Record<RecallViewer, number[]>) => ({
    unscoped: summariseLatencies(durations.unscoped),
    scoped: summariseLatencies(durations.scoped),
  });
  baseline.close();
  await mnemeLexical.close();
  await mneme.close();

  // 3. Ingest through the offline extractor and two maintenance cycles, mneme's alone: in a process of their own
  // (`measureIngestPhase`), whose peak resident set is what issue 17 asks about.
  const phase = await measureIngestPhase(
    { path: paths.mneme, seed: options.seed, size, messages: options.messages },
    options,
  );
  const maintenanceMs = Math.round((phase.firstCycleMs + listsMs) * 10) / 10;

  // 4. Peak RSS: a pass of recalls per system with only that system open.
  options.log('peak RSS: a pass of recalls in each system alone');
  collectGarbage();
  baseline = open.baseline();
  const baselineRss = createRssSampler();
  recall = recallers(baseline, mneme, mnemeLexical);
  for (const { leg, viewer } of cases) {
    for (const query of queries.slice(0, RSS_QUERIES)) {
      recall.baseline(leg, viewer, query);
      baselineRss.sample();
    }
  }
  baseline.close();
  collectGarbage();
  mneme = await open.mneme();
  mnemeLexical = await open.mnemeLexical();
  const mnemeRss = createRssSampler();
  recall = recallers(baseline, mneme, mnemeLexical);
  for (const { leg, viewer } of cases) {
    for (const [index, query] of queries.slice(0, RSS_QUERIES).entries()) {
      await recall.mneme(leg, viewer, query, index);
      mnemeRss.sample();
    }
  }
  await mnemeLexical.close();
  await mneme.close();
  removeDatabase(paths.baseline);
  if (server) await server.drop();
  else if (pgliteFolder) rmSync(pgliteFolder, { recursive: true, force: true });
  else removeDatabase(paths.mneme);

  const per10k = (total: number) => Math.round((total / Math.max(1, size)) * 10_000);
  return {
    mneme: {
      recall: latencies.mneme,
      rememberPerSecond: rate(size, buildMs.mneme),
      ingestPerSecond: phase.ingestPerSecond,
      ingestBatchedPerSecond: phase.ingestBatchedPerSecond,
      maintenanceMs,
      maintenanceSteadyMs: phase.maintenanceSteadyMs,
      maintenancePeakRssBytes: phase.maintenancePeakRssBytes,
      vectorRecallVsExact,
      recallAfterWrite: recallAfterWrite(afterWrite.mneme),
      bytesPer10k: per10k(bytes.mneme),
      peakRssBytes: mnemeRss.peak(),
    },
    baseline: {
      recall: latencies.baseline,
      rememberPerSecond: rate(size, buildMs.baseline),
      recallAfterWrite: recallAfterWrite(afterWrite.baseline),
      bytesPer10k: per10k(bytes.baseline),
      peakRssBytes: baselineRss.peak(),
    },
  };
}

function emptyRecall(): SystemFigures['recall'] {
  const empty = (): Record<RecallViewer, LatencySummary> => ({
    unscoped: { p50Ms: Number.NaN, p95Ms: Number.NaN, p99Ms: Number.NaN },
    scoped: { p50Ms: Number.NaN, p95Ms: Number.NaN, p99Ms: Number.NaN },
  });
  return { hybrid: empty(), lexical: empty(), vector: empty() };
}

/** The bytes of a closed SQLite database: the file, plus a WAL file if one was left. */
function databaseBytes(path: string): number {
  return [path, `${path}-wal`].reduce((total, file) => total + (existsSync(file) ? statSync(file).size : 0), 0);
}

/** The bytes of the files in a folder and its subfolders (a closed PGlite database). */
function folderBytes(folder: string): number {
  return readdirSync(folder, { withFileTypes: true }).reduce((total, entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return total + folderBytes(path);
    return total + (entry.isFile() ? statSync(path).size : 0);
  }, 0);
}

function removeDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) rmSync(file, { force: true });
}

/** The largest resident set size sampled since it was created (current RSS, not the process's all-time peak). */
function createRssSampler() {
  let peak = process.memoryUsage.rss();
  return {
    sample() {
      peak = Math.max(peak, process.memoryUsage.rss());
    },
    peak: () => peak,
  };
}
