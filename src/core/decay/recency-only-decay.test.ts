import { describe, expect, it } from 'vitest';
import { DAY_MS } from './decay-policy.js';
import { recencyOnlyDecay } from './recency-only-decay.js';

const created = '2024-06-01T00:00:00.000Z';
const base = { strength: 1, salience: 1, importance: 0.4, pinned: false, lastAccessedAt: null, createdAt: created };
const at = (days: number) => Date.parse(created) + days * DAY_MS;

describe('recency-only decay', () => {
  it('halves the recency term every 14 days since the last retrieval, or the creation', () => {
    expect(recencyOnlyDecay.recency(base, at(0))).toBe(1);
    expect(recencyOnlyDecay.recency(base, at(14))).toBeCloseTo(0.5, 10);
    expect(recencyOnlyDecay.recency(base, at(28))).toBeCloseTo(0.25, 10);
    expect(recencyOnlyDecay.recency({ ...base, lastAccessedAt: new Date(at(14)).toISOString() }, at(28))).toBeCloseTo(
      0.5,
      10,
    );
  });

  it('writes nothing on a retrieval beyond its access count and time', () => {
    expect(recencyOnlyDecay.reinforcement(base, at(30))).toEqual({});
  });

  it('shows the stored values, stores nothing and expires nothing, even ten years unused', () => {
    for (const day of [0, 14, 365, 3650]) {
      expect(recencyOnlyDecay.current(base, null, at(day))).toEqual({ strength: 1, salience: 1, importance: 0.4 });
      expect(recencyOnlyDecay.step({ ...base, importance: 0 }, null, at(day))).toEqual({
        isDecayed: false,
        isExpired: false,
        change: null,
      });
    }
    expect(recencyOnlyDecay.archiveReason).toBeUndefined();
  });
});
