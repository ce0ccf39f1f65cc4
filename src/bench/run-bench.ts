import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createMneme, type Mneme, type Viewer } from '../index.js';
import type { BenchReport, RecallLeg, RecallViewer, SystemFigures } from './bench-report.js';
import { createNaiveBaseline, type NaiveBaseline } from './naive-baseline.js';
import { type LatencySummary, summariseLatencies } from './percentiles.js';
import { createPrecomputedEmbeddingModel, type PrecomputedEmbeddingModel } from './precomputed-embedding-model.js';
import type { ProgressBar } from './progress-bar.js';
import { createSyntheticCorpus, type SyntheticCorpus, type SyntheticQuery } from './synthetic-corpus.js';

/** What one `mneme bench` run does. */
export interface BenchOptions {
  /** Store sizes, in memories. */
  sizes: readonly number[];
  seed: number;
  /** Recalls timed per leg and viewer (after a few untimed ones). */
  queries: number;
  /** Messages ingested, into the store of each size, to time ingest and then a maintenance cycle. */
  messages: number;
  /** An existing folder for the databases; each is deleted when measured. */
  directory: string;
  /** A progress bar for a step of `total` units. */
  progress: (label: string, total: number) => ProgressBar;
  /** A line of progress for a step without units. */
  log: (line: string) => void;
}

const TOP_K = 10;
/** mneme's candidate pool for topK 10, `min(max(10 * 5, 20), 100)`, used by the baseline's hybrid legs too. */
const POOL = 50;
const WARM_UP = 5;
const DIMENSIONS = 768;
const MODEL_ID = 'bench-precomputed-768';
/**
 * The largest store whose first maintenance cycle is timed. That cycle links and consolidates every
 * memory of a freshly built store, one KNN and one full-text search per memory, so it grows with the
 * square of the size: minutes at 10,000, hours at 100,000 on two cores (docs/performance.md).
 */
export const MAINTENANCE_MAX_SIZE = 20_000;
/** How often (in operations) the peak RSS is sampled; sampling is a cheap read, awaiting a timer would not fire in a sync loop. */
const SAMPLE_EVERY = 50;

/**
 * Builds a store of each size twice, with the naive baseline and with mneme through its library
 * API, from the same seeded corpus, and measures both in one process: the baseline first, then
 * mneme, so mneme's peak RSS includes whatever the baseline left behind (the conservative order).
 */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const corpus = createSyntheticCorpus({ seed: options.seed, dimensions: DIMENSIONS });
  const report: BenchReport = { sizes: {} };
  for (const size of options.sizes) {
    const queries = Array.from({ length: options.queries + WARM_UP }, (_, index) => corpus.query(index, size));
    const baseline = await measureBaseline(corpus, size, queries, options);
    collectGarbage();
    const mneme = await measureMneme(corpus, size, queries, options);
    collectGarbage();
    report.sizes[String(size)] = { mneme, baseline };
  }
  return report;
}

/** Recall cases: which leg, which viewer, and the query for it. */
interface RecallCase {
  leg: RecallLeg;
  viewer: RecallViewer;
}

const cases: RecallCase[] = (['hybrid', 'lexical', 'vector'] as const).flatMap((leg) =>
  (['unscoped', 'scoped'] as const).map((viewer) => ({ leg, viewer })),
);

function viewerOf(query: SyntheticQuery, viewer: RecallViewer): Viewer {
  return viewer === 'scoped' ? { userId: query.userId } : {};
}

/** The owner keys a viewer sees, as the baseline computes them: global, plus the user's personal key. */
function ownersOf(query: SyntheticQuery, viewer: RecallViewer): string[] {
  return viewer === 'scoped' ? ['global', `user:${query.userId}`] : ['global'];
}

/** The text of a vector-only recall: a token no memory contains, so the full-text leg finds nothing. */
function vectorOnlyText(index: number): string {
  return `qv${index}`;
}

function ownerKeyOf(memory: { scope: string; userId?: string; channelId?: string }): string {
  if (memory.scope === 'personal') return `user:${memory.userId}`;
  if (memory.scope === 'room') return `room:${memory.channelId}`;
  return 'global';
}

async function measureBaseline(
  corpus: SyntheticCorpus,
  size: number,
  queries: readonly SyntheticQuery[],
  options: BenchOptions,
): Promise<SystemFigures> {
  const rss = createRssSampler();
  const path = join(options.directory, `baseline-${size}.db`);
  removeDatabase(path);
  let baseline: NaiveBaseline = createNaiveBaseline({ path, dimensions: DIMENSIONS });
  const build = options.progress(`baseline: storing ${size.toLocaleString('en-US')} memories`, size);
  let insertMs = 0;
  for (let index = 0; index < size; index++) {
    const memory = corpus.memory(index);
    const started = performance.now();
    baseline.insert({ content: memory.content, owner: ownerKeyOf(memory), vector: memory.vector });
    insertMs += performance.now() - started;
    if (index % SAMPLE_EVERY === 0) {
      rss.sample();
      build.update(index + 1);
    }
  }
  build.finish();
  baseline.close();
  const bytes = databaseBytes(path);
  baseline = createNaiveBaseline({ path, dimensions: DIMENSIONS });

  const recall = emptyRecall();
  const bar = options.progress('baseline: recalls', cases.length * queries.length);
  let done = 0;
  for (const { leg, viewer } of cases) {
    const durations: number[] = [];
    queries.forEach((query, index) => {
      const owners = ownersOf(query, viewer);
      const started = performance.now();
      if (leg === 'lexical') baseline.lexical(query.text, owners, TOP_K);
      else if (leg === 'vector') baseline.vector(query.vector, owners, TOP_K);
      else baseline.hybrid(query.text, query.vector, owners, TOP_K, POOL);
      if (index >= WARM_UP) durations.push(performance.now() - started);
      if (++done % SAMPLE_EVERY === 0) rss.sample();
      bar.update(done);
    });
    recall[leg][viewer] = summariseLatencies(durations);
  }
  bar.finish();
  baseline.close();
  rss.sample();
  removeDatabase(path);
  return {
    recall,
    rememberPerSecond: rate(size, insertMs),
    bytesPer10k: Math.round((bytes / Math.max(1, size)) * 10_000),
    peakRssBytes: rss.peak(),
  };
}

async function measureMneme(
  corpus: SyntheticCorpus,
  size: number,
  queries: readonly SyntheticQuery[],
  options: BenchOptions,
): Promise<SystemFigures> {
  const rss = createRssSampler();
  const path = join(options.directory, `mneme-${size}.db`);
  removeDatabase(path);
  const model = createPrecomputedEmbeddingModel(MODEL_ID, DIMENSIONS);
  const quiet = { warn: () => {}, info: () => {} };
  const open = (embedder: PrecomputedEmbeddingModel | 'none') =>
    createMneme({ path, embedder, backfill: false, logger: quiet });

  let mneme: Mneme = await open(model);
  const build = options.progress(`mneme: remembering ${size.toLocaleString('en-US')} memories`, size);
  let rememberMs = 0;
  for (let index = 0; index < size; index++) {
    const memory = corpus.memory(index);
    model.set(memory.content, memory.vector);
    const started = performance.now();
    await mneme.remember({
      content: memory.content,
      scope: memory.scope,
      ...(memory.userId ? { userId: memory.userId } : {}),
      ...(memory.channelId ? { channelId: memory.channelId } : {}),
    });
    rememberMs += performance.now() - started;
    model.delete(memory.content);
    if (index % SAMPLE_EVERY === 0) {
      rss.sample();
      build.update(index + 1);
    }
  }
  build.finish();
  await mneme.close();
  const bytes = databaseBytes(path);

  queries.forEach((query, index) => {
    model.set(query.text, query.vector);
    model.set(vectorOnlyText(index), query.vector);
  });
  mneme = await open(model);
  const lexicalOnly = await open('none');
  const recall = emptyRecall();
  const bar = options.progress('mneme: recalls', cases.length * queries.length);
  let done = 0;
  for (const { leg, viewer } of cases) {
    const durations: number[] = [];
    const engine = leg === 'lexical' ? lexicalOnly : mneme;
    for (const [index, query] of queries.entries()) {
      const input = {
        query: leg === 'vector' ? vectorOnlyText(index) : query.text,
        viewer: viewerOf(query, viewer),
        topK: TOP_K,
      };
      const started = performance.now();
      const result = await engine.recall(input);
      if (index >= WARM_UP) durations.push(performance.now() - started);
      const expected = leg === 'lexical' ? 'no-model' : 'used';
      if (result.vectorLeg !== expected) {
        throw new Error(`a ${leg} recall ran with vector leg "${result.vectorLeg}", expected "${expected}"`);
      }
      if (++done % SAMPLE_EVERY === 0) rss.sample();
      bar.update(done);
    }
    recall[leg][viewer] = summariseLatencies(durations);
  }
  bar.finish();
  await lexicalOnly.close();

  const ingestBar = options.progress('mneme: ingesting messages', options.messages);
  const ingestStarted = performance.now();
  for (let index = 0; index < options.messages; index++) {
    const message = corpus.message(index);
    await mneme.ingest({
      channelId: message.channelId,
      sender: message.userId,
      senderName: message.userName,
      content: message.content,
    });
    if (index % SAMPLE_EVERY === 0) rss.sample();
    ingestBar.update(index + 1);
  }
  ingestBar.finish();
  options.log('mneme: waiting until extraction is idle');
  await mneme.whenIdle();
  const ingestMs = performance.now() - ingestStarted;
  rss.sample();

  let maintenanceMs: number | undefined;
  if (size <= MAINTENANCE_MAX_SIZE) {
    options.log(`mneme: one maintenance cycle over ${size.toLocaleString('en-US')} memories`);
    const maintenanceStarted = performance.now();
    await mneme.maintain();
    maintenanceMs = Math.round((performance.now() - maintenanceStarted) * 10) / 10;
    rss.sample();
  }
  await mneme.close();
  removeDatabase(path);
  return {
    recall,
    rememberPerSecond: rate(size, rememberMs),
    ingestPerSecond: rate(options.messages, ingestMs),
    ...(maintenanceMs === undefined ? {} : { maintenanceMs }),
    bytesPer10k: Math.round((bytes / Math.max(1, size)) * 10_000),
    peakRssBytes: rss.peak(),
  };
}

function emptyRecall(): SystemFigures['recall'] {
  const empty = (): Record<RecallViewer, LatencySummary> => ({
    unscoped: { p50Ms: Number.NaN, p95Ms: Number.NaN, p99Ms: Number.NaN },
    scoped: { p50Ms: Number.NaN, p95Ms: Number.NaN, p99Ms: Number.NaN },
  });
  return { hybrid: empty(), lexical: empty(), vector: empty() };
}

function rate(count: number, milliseconds: number): number {
  return milliseconds > 0 ? Math.round((count / milliseconds) * 1000 * 10) / 10 : 0;
}

/** The bytes of a closed SQLite database: the file, plus a WAL file if one was left. */
function databaseBytes(path: string): number {
  return [path, `${path}-wal`].reduce((total, file) => total + (existsSync(file) ? statSync(file).size : 0), 0);
}

function removeDatabase(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) rmSync(file, { force: true });
}

/** The process's peak resident set size over the samples taken since it was created. */
function createRssSampler() {
  let peak = process.memoryUsage.rss();
  return {
    sample() {
      peak = Math.max(peak, process.memoryUsage.rss());
    },
    peak: () => peak,
  };
}

/** Runs a full garbage collection between phases when node was started with --expose-gc. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
