/** Latency percentiles of one measured operation, in milliseconds. */
export interface LatencySummary {
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
}

/**
 * The `p`-th percentile (0..100) of `values` by linear interpolation between the two nearest ranks
 * (the usual "type 7" definition: the median of 1, 2, 3, 4 is 2.5). NaN for no values.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.ceil(position);
  const low = sorted[below] ?? Number.NaN;
  const high = sorted[above] ?? Number.NaN;
  return low + (high - low) * (position - below);
}

/** p50, p95 and p99 of durations in milliseconds, rounded to microseconds. */
export function summariseLatencies(durationsMs: readonly number[]): LatencySummary {
  const round = (value: number) => Math.round(value * 1000) / 1000;
  return {
    p50Ms: round(percentile(durationsMs, 50)),
    p95Ms: round(percentile(durationsMs, 95)),
    p99Ms: round(percentile(durationsMs, 99)),
  };
}
