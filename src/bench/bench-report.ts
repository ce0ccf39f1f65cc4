import type { LatencySummary } from './percentiles.js';

export type RecallLeg = 'lexical' | 'vector' | 'hybrid';
export type RecallViewer = 'unscoped' | 'scoped';
export const recallLegs: readonly RecallLeg[] = ['hybrid', 'lexical', 'vector'];
export const recallViewers: readonly RecallViewer[] = ['unscoped', 'scoped'];

/** The figures of one system at one size; the baseline fills what it measures. */
export interface SystemFigures {
  recall: Record<RecallLeg, Record<RecallViewer, LatencySummary>>;
  rememberPerSecond: number;
  /**
   * Messages per second through one `ingest()` call each (one durable commit each) and the offline
   * extractor, until extraction is idle (mneme only).
   */
  ingestPerSecond?: number;
  /**
   * Messages per second through `ingestMany` batches of 1,000 (as `mneme ingest` of a file imports) and
   * the offline extractor, until extraction is idle: other messages, after those of `ingestPerSecond` (mneme only).
   */
  ingestBatchedPerSecond?: number;
  /** The first `maintain()` cycle (all tasks) over the store, after the ingest; mneme only. */
  maintenanceMs?: number;
  /** A `maintain()` cycle after 1,000 more memories were remembered (as many as the store's size below 1,000; mneme only). */
  maintenanceSteadyMs?: number;
  /**
   * The peak resident set size during the ingest phase and the two cycles (mneme only): on Linux the kernel's
   * high-water mark reset after the recall phases; elsewhere the process's peak so far, an upper bound.
   */
  maintenancePeakRssBytes?: number;
  /**
   * mneme only: the share of the exact 10 nearest visible memories (the baseline's brute-force KNN) that
   * mneme's vector leg ranks in its 10 best, averaged over the queries, per viewer.
   */
  vectorRecallVsExact?: Record<RecallViewer, number>;
  /**
   * Hybrid recall right after a write (session 13): each timed recall follows one new memory written to the same
   * store (mneme's `remember()`, the baseline's insert), as a served store recalls while it remembers and ingests.
   */
  recallAfterWrite?: Record<RecallViewer, LatencySummary>;
  bytesPer10k: number;
  peakRssBytes: number;
}

/** What `mneme bench --json` writes. */
export interface BenchReport {
  sizes: Record<string, { mneme: SystemFigures; baseline: SystemFigures }>;
}

/** What the table says about the run besides the figures. */
export interface BenchRunInfo {
  seed: number;
  queries: number;
  messages: number;
  machine: string;
}

type Row = [
  label: string,
  mneme: number | undefined,
  baseline: number | undefined,
  kind: 'ms' | 'rate' | 'bytes' | 'share',
];

/**
 * The report as a table per size: each figure for mneme and the baseline, and mneme / baseline
 * (below 1 is better for times and sizes, above 1 for rates).
 */
export function formatBenchTable(report: BenchReport, info: BenchRunInfo): string {
  const lines = [
    `mneme bench: seed ${info.seed}, ${info.queries} recalls per case (topK 10), ${info.messages} messages ingested; ${info.machine}`,
    'ratio = mneme / baseline: below 1 is better for latencies and sizes, above 1 for rates. Timings interleave the two systems.',
  ];
  for (const [size, { mneme, baseline }] of Object.entries(report.sizes)) {
    const rows: Row[] = [];
    for (const leg of recallLegs) {
      for (const viewer of recallViewers) {
        const ours = mneme.recall[leg][viewer];
        const theirs = baseline.recall[leg][viewer];
        rows.push([`recall ${leg}, ${viewer}: p50 ms`, ours.p50Ms, theirs.p50Ms, 'ms']);
        rows.push([`recall ${leg}, ${viewer}: p95 ms`, ours.p95Ms, theirs.p95Ms, 'ms']);
        rows.push([`recall ${leg}, ${viewer}: p99 ms`, ours.p99Ms, theirs.p99Ms, 'ms']);
      }
    }
    for (const viewer of recallViewers) {
      const ours = mneme.recallAfterWrite?.[viewer];
      const theirs = baseline.recallAfterWrite?.[viewer];
      rows.push([`recall hybrid after a write, ${viewer}: p50 ms`, ours?.p50Ms, theirs?.p50Ms, 'ms']);
      rows.push([`recall hybrid after a write, ${viewer}: p95 ms`, ours?.p95Ms, theirs?.p95Ms, 'ms']);
    }
    for (const viewer of recallViewers) {
      const share = mneme.vectorRecallVsExact?.[viewer];
      rows.push([`vector leg recall@10 vs exact, ${viewer}`, share, share === undefined ? undefined : 1, 'share']);
    }
    rows.push(['remember: memories/s', mneme.rememberPerSecond, baseline.rememberPerSecond, 'rate']);
    rows.push(['ingest, one ingest() each: messages/s', mneme.ingestPerSecond, baseline.ingestPerSecond, 'rate']);
    rows.push([
      'ingest, ingestMany batches: messages/s',
      mneme.ingestBatchedPerSecond,
      baseline.ingestBatchedPerSecond,
      'rate',
    ]);
    rows.push(['first maintenance cycle: ms', mneme.maintenanceMs, baseline.maintenanceMs, 'ms']);
    rows.push(['steady maintenance cycle: ms', mneme.maintenanceSteadyMs, baseline.maintenanceSteadyMs, 'ms']);
    rows.push([
      'peak RSS bytes, ingest and cycles',
      mneme.maintenancePeakRssBytes,
      baseline.maintenancePeakRssBytes,
      'bytes',
    ]);
    rows.push(['database bytes per 10,000 memories', mneme.bytesPer10k, baseline.bytesPer10k, 'bytes']);
    rows.push(['peak RSS bytes', mneme.peakRssBytes, baseline.peakRssBytes, 'bytes']);

    const header: string[] = [`${Number(size).toLocaleString('en-US')} memories`, 'mneme', 'baseline', 'ratio'];
    const cells = rows.map(([label, ours, theirs, kind]) => [
      label,
      formatValue(ours, kind),
      formatValue(theirs, kind),
      ours !== undefined && theirs !== undefined && theirs > 0 ? (ours / theirs).toFixed(2) : '-',
    ]);
    const widths = header.map((title, column) =>
      Math.max(title.length, ...cells.map((row) => (row[column] ?? '').length)),
    );
    const render = (row: string[]) =>
      row
        .map((cell, column) => (column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0)))
        .join('  ');
    lines.push('', render(header), render(widths.map((width) => '-'.repeat(width))), ...cells.map(render));
  }
  return lines.join('\n');
}

function formatValue(value: number | undefined, kind: Row[3]): string {
  if (value === undefined || Number.isNaN(value)) return '-';
  if (kind === 'bytes') return formatBytes(value);
  if (kind === 'rate') return value.toFixed(0);
  if (kind === 'share') return value.toFixed(3);
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(0)} KiB`;
  return `${bytes} B`;
}
