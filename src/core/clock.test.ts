import { describe, expect, it } from 'vitest';
import { toIso } from './clock.js';

describe('toIso', () => {
  it('writes every time as toISOString does: days around leap years and centuries, both ends, and odd values', () => {
    const day = 86_400_000;
    const times = [
      0,
      1,
      day - 1,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(2000, 2, 1),
      Date.UTC(2100, 1, 28, 12),
      Date.UTC(2100, 2, 1),
      Date.UTC(2024, 1, 29, 12, 30, 5, 7),
      Date.UTC(2024, 11, 31, 23, 59, 59, 999),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10000, 0, 1),
      -1,
      -day * 365 * 3000,
      1.5,
      1_733_097_600_000.75,
    ];
    // Every day from 1970 to 2200 at a time that moves through the day, and a spread of times to 9999.
    for (let days = 0; days < 84_000; days++) times.push(days * day + ((days * 7_919_731) % day));
    for (let index = 0; index < 20_000; index++) times.push(Math.floor(index * 12_670_115_039.99));
    expect(times.filter((time) => toIso(time) !== new Date(time).toISOString())).toEqual([]);
  });

  it('refuses an invalid time as toISOString does', () => {
    expect(() => toIso(Number.NaN)).toThrow(RangeError);
    expect(() => toIso(8.64e15 + 1)).toThrow(RangeError);
  });
});
