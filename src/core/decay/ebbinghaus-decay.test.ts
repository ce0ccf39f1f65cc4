import { describe, expect, it } from 'vitest';
import { DAY_MS } from './decay-policy.js';
import { ebbinghausDecay, retention } from './ebbinghaus-decay.js';

const created = '2024-06-01T00:00:00.000Z';
const base = { strength: 1, salience: 1, importance: 0.4, pinned: false, lastAccessedAt: null, createdAt: created };
const at = (days: number) => Date.parse(created) + days * DAY_MS;

describe('ebbinghaus decay', () => {
  it('halves retention every 14 days since the last retrieval', () => {
    expect(retention(base, at(14))).toBeCloseTo(0.5, 10);
    expect(retention(base, at(28))).toBeCloseTo(0.25, 10);
    expect(retention({ ...base, lastAccessedAt: new Date(at(14)).toISOString() }, at(28))).toBeCloseTo(0.5, 10);
    expect(retention({ ...base, pinned: true }, at(365))).toBe(1);
  });

  it('restarts the clock at full strength on a retrieval', () => {
    expect(ebbinghausDecay.reinforcement(base, at(30))).toEqual({ strength: 1 });
  });

  it('archives below a retention of 0.10 and stores nothing before', () => {
    expect(ebbinghausDecay.step(base, null, at(46.5))).toEqual({ isDecayed: true, isExpired: false, change: null });
    expect(ebbinghausDecay.step(base, null, at(46.51))).toEqual({ isDecayed: true, isExpired: true, change: null });
  });

  it('shows strength as the retention of now, and salience and importance as stored', () => {
    expect(ebbinghausDecay.current(base, null, at(14))).toEqual({ strength: 0.5, salience: 1, importance: 0.4 });
    expect(ebbinghausDecay.current({ ...base, pinned: true }, null, at(14)).strength).toBe(1);
  });

  it('expires exactly when the strength it shows falls below 0.10', () => {
    for (const day of [46.5, 46.51, 60]) {
      const shown = ebbinghausDecay.current(base, null, at(day)).strength;
      expect(ebbinghausDecay.step(base, null, at(day)).isExpired).toBe(shown < 0.1);
    }
  });
});
