import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ProgressBar } from '../cli/progress-bar.js';
import {
  benchMessage,
  collectGarbage,
  DIMENSIONS,
  MODEL_ID,
  openBenchMneme,
  rate,
  rememberOne,
  vectorOnlyText,
  viewerOf,
} from './bench-engine.js';
import { recallViewers } from './bench-report.js';
import { peakRssBytes, resetPeakRss } from './peak-rss.js';
import { createPrecomputedEmbeddingModel } from './precomputed-embedding-model.js';
import { createSyntheticCorpus } from './synthetic-corpus.js';

/** Memories remembered after the first maintenance cycle, before the steady-state one (fewer in a smaller store). */
export const STEADY_MEMORIES = 1000;
/** Messages per `ingestMany` call when ingest is timed in batches (the most it takes, as `mneme ingest` of a file batches). */
const INGEST_BATCH = 1_000;
/** How often (in operations) a bar is updated. */
const SAMPLE_EVERY = 25;
/**
 * Queries the phase's engine recalls first, hybrid and vector-only, for each viewer (80 recalls): a served engine's
 * state (past its first 32 vector searches it holds the lists' codes and its estimates in memory, ADR 10).
 */
const SERVED_QUERIES = 20;

/** The store the phase works on, and how much: the bench's seeded corpus gives its messages and memories. */
export interface IngestPhaseInput {
  /** The store's path or URL (as `createMneme` takes it), built by the bench from the corpus of `seed`. */
  path: string;
  seed: number;
  /** Memories in the store. */
  size: number;
  /** Messages ingested each way. */
  messages: number;
}

/** What the phase measures (mneme's alone). */
export interface IngestPhaseFigures {
  ingestPerSecond: number;
  ingestBatchedPerSecond: number;
  /** The first cycle's milliseconds. */
  firstCycleMs: number;
  maintenanceSteadyMs: number;
  /** The peak resident set from the phase's start (after the engine's recalls) to its end. */
  maintenancePeakRssBytes: number;
}

/** Where the phase tells its progress (the bench's bars and lines). */
export interface PhaseReporter {
  progress: (label: string, total: number) => Pick<ProgressBar, 'update' | 'finish'>;
  log: (line: string) => void;
}

/** Messages from the phase's own process to the bench. */
export type PhaseMessage =
  | { type: 'bar'; label: string; total: number }
  | { type: 'update'; done: number }
  | { type: 'finish' }
  | { type: 'log'; line: string }
  | { type: 'done'; figures: IngestPhaseFigures }
  | { type: 'failed'; message: string };

/**
 * Ingest through the offline extractor (one `ingest()` a message, then other messages in `ingestMany` batches, as
 * an importer does) and two maintenance cycles (the first over the whole store, a steady one after
 * `STEADY_MEMORIES` new memories) on the store at `input.path`, by an engine that has served recalls first.
 *
 * Run from the built package, the phase runs in a process of its own (`ingest-phase-process.js`), as `mneme serve`
 * or `mneme ingest` would: its peak resident set is mneme's, not what the bench's process keeps from building the
 * stores, the baseline's scans and its other engines (issue 17: 244 MiB resident at the phase's start in one
 * process, where a process of its own starts from about 150). From the sources (a test runner) it runs in this
 * process. The store must not be open elsewhere in this process (a PGlite folder allows one opener).
 */
export async function measureIngestPhase(
  input: IngestPhaseInput,
  reporter: PhaseReporter,
): Promise<IngestPhaseFigures> {
  const entry = fileURLToPath(new URL('./ingest-phase-process.js', import.meta.url));
  if (!existsSync(entry)) return runIngestPhase(input, reporter);
  return new Promise((resolve, reject) => {
    const child = fork(entry, [], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let bar: Pick<ProgressBar, 'update' | 'finish'> | null = null;
    let answer: { figures: IngestPhaseFigures } | { failed: string } | null = null;
    child.on('message', (message: PhaseMessage) => {
      if (message.type === 'bar') bar = reporter.progress(message.label, message.total);
      else if (message.type === 'update') bar?.update(message.done);
      else if (message.type === 'finish') bar?.finish();
      else if (message.type === 'log') reporter.log(message.line);
      else if (message.type === 'done') answer = { figures: message.figures };
      else answer = { failed: message.message };
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (answer && 'figures' in answer) resolve(answer.figures);
      else if (answer) reject(new Error(`the ingest and maintenance phase failed: ${answer.failed}`));
      else reject(new Error(`the ingest and maintenance phase's process ended (${signal ?? `exit code ${code}`})`));
    });
    reporter.log(`mneme: ingest and maintenance in a process of its own (pid ${child.pid})`);
    child.send(input);
  });
}

/** The phase in this process (see `measureIngestPhase`). */
export async function runIngestPhase(input: IngestPhaseInput, reporter: PhaseReporter): Promise<IngestPhaseFigures> {
  const { size, messages } = input;
  const corpus = createSyntheticCorpus({ seed: input.seed, dimensions: DIMENSIONS });
  const model = createPrecomputedEmbeddingModel(MODEL_ID, DIMENSIONS);
  const mneme = await openBenchMneme(input.path, model);
  try {
    for (let index = 0; index < SERVED_QUERIES; index++) {
      const query = corpus.query(index, size);
      model.set(query.text, query.vector);
      model.set(vectorOnlyText(index), query.vector);
      for (const viewer of recallViewers) {
        await mneme.recall({ query: query.text, viewer: viewerOf(query, viewer), topK: 10 });
        await mneme.recall({ query: vectorOnlyText(index), viewer: viewerOf(query, viewer), topK: 10 });
      }
    }
    // From here the kernel's peak resident set is that of ingest and the two cycles (Linux; elsewhere the
    // process's peak so far, an upper bound).
    collectGarbage();
    resetPeakRss();
    const asInput = (index: number) => benchMessage(corpus, index);
    const ingestBar = reporter.progress('mneme: ingesting messages, one ingest() each', messages);
    let started = performance.now();
    for (let index = 0; index < messages; index++) {
      await mneme.ingest(asInput(index));
      if ((index + 1) % SAMPLE_EVERY === 0) ingestBar.update(index + 1);
    }
    ingestBar.finish();
    reporter.log('mneme: waiting until extraction is idle');
    await mneme.whenIdle();
    const ingestMs = performance.now() - started;
    const batchedBar = reporter.progress('mneme: ingesting messages in ingestMany batches', messages);
    started = performance.now();
    for (let start = 0; start < messages; start += INGEST_BATCH) {
      const end = Math.min(messages, start + INGEST_BATCH);
      const inputs = [];
      for (let index = start; index < end; index++) inputs.push(asInput(messages + index));
      await mneme.ingestMany(inputs);
      batchedBar.update(end);
    }
    batchedBar.finish();
    reporter.log('mneme: waiting until extraction is idle');
    await mneme.whenIdle();
    const ingestBatchedMs = performance.now() - started;
    reporter.log(`mneme: the first maintenance cycle over ${size.toLocaleString('en-US')} memories`);
    started = performance.now();
    await mneme.maintain();
    const firstCycleMs = performance.now() - started;
    const added = Math.min(STEADY_MEMORIES, size);
    const steadyBar = reporter.progress(`mneme: ${added.toLocaleString('en-US')} new memories`, added);
    for (let index = size; index < size + added; index++) {
      await rememberOne(mneme, model, corpus.memory(index));
      if ((index - size + 1) % SAMPLE_EVERY === 0) steadyBar.update(index - size + 1);
    }
    steadyBar.finish();
    reporter.log('mneme: a maintenance cycle after them');
    started = performance.now();
    await mneme.maintain();
    const maintenanceSteadyMs = Math.round((performance.now() - started) * 10) / 10;
    return {
      ingestPerSecond: rate(messages, ingestMs),
      ingestBatchedPerSecond: rate(messages, ingestBatchedMs),
      firstCycleMs,
      maintenanceSteadyMs,
      maintenancePeakRssBytes: peakRssBytes(),
    };
  } finally {
    await mneme.close();
  }
}
