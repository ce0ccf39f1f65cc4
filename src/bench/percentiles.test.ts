import { describe, expect, it } from 'vitest';
import { percentile, summariseLatencies } from './percentiles.js';

describe('percentiles', () => {
  it('interpolates between the two nearest ranks', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([10, 20, 30, 40, 50], 25)).toBe(20);
    expect(percentile([0, 100], 95)).toBeCloseTo(95, 10);
  });

  it('does not depend on the order of the values', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
  });

  it('gives the extremes at 0 and 100, and the only value for a single sample', () => {
    expect(percentile([3, 9, 1], 0)).toBe(1);
    expect(percentile([3, 9, 1], 100)).toBe(9);
    expect(percentile([7], 99)).toBe(7);
  });

  it('is not a number for no values', () => {
    expect(percentile([], 50)).toBeNaN();
  });

  it('summarises p50, p95 and p99 of 1..100 ms', () => {
    const durations = Array.from({ length: 100 }, (_, index) => index + 1);
    expect(summariseLatencies(durations)).toEqual({ p50Ms: 50.5, p95Ms: 95.05, p99Ms: 99.01 });
  });
});
