import { describe, expect, it } from 'vitest';
import { currentSalience, DAY_MS, recencyScore, reinforcement, retention } from './decay.js';

const created = '2024-06-01T00:00:00.000Z';
const base = { strength: 1, salience: 1, importance: 0.4, pinned: false, lastAccessedAt: null, createdAt: created };
const at = (days: number) => Date.parse(created) + days * DAY_MS;

describe('decay', () => {
  it('halves Ebbinghaus retention every 14 days since the last retrieval', () => {
    expect(retention(base, at(14))).toBeCloseTo(0.5, 10);
    expect(retention(base, at(28))).toBeCloseTo(0.25, 10);
    expect(retention({ ...base, lastAccessedAt: new Date(at(14)).toISOString() }, at(28))).toBeCloseTo(0.5, 10);
    expect(retention({ ...base, pinned: true }, at(365))).toBe(1);
  });

  it('leaves salience alone for 24 hours, then multiplies it by 0.98 a day', () => {
    expect(currentSalience(base, at(1))).toBe(1);
    expect(currentSalience(base, at(11))).toBeCloseTo(0.98 ** 10, 10);
  });

  it('gives a recency term in 0..1 for every policy', () => {
    for (const decay of ['ebbinghaus', 'salience', 'importance-steps'] as const) {
      const fresh = recencyScore(base, { decay }, at(0));
      const old = recencyScore(base, { decay }, at(60));
      expect(fresh).toBeGreaterThan(old);
      expect(fresh).toBeLessThanOrEqual(1);
      expect(old).toBeGreaterThanOrEqual(0);
    }
  });

  it('reinforces per policy: clock reset, +0.1 salience capped at 5, one importance step capped at 5', () => {
    expect(reinforcement(base, { decay: 'ebbinghaus' }, at(30))).toEqual({ strength: 1 });
    expect(reinforcement(base, { decay: 'salience' }, at(0)).salience).toBeCloseTo(1.1, 10);
    expect(reinforcement({ ...base, salience: 4.95 }, { decay: 'salience' }, at(0))).toEqual({ salience: 5 });
    expect(reinforcement(base, { decay: 'importance-steps' }, at(0))).toEqual({ importance: 0.6 });
    expect(reinforcement({ ...base, importance: 1 }, { decay: 'importance-steps' }, at(0))).toEqual({ importance: 1 });
  });
});
