import { describe, expect, it } from 'vitest';
import { DAY_MS } from './decay-policy.js';
import { currentSalience, salienceDecay } from './salience-decay.js';

const created = '2024-06-01T00:00:00.000Z';
const base = { strength: 1, salience: 1, importance: 0.4, pinned: false, lastAccessedAt: null, createdAt: created };
const at = (days: number) => Date.parse(created) + days * DAY_MS;

describe('salience decay', () => {
  it('leaves salience alone for 24 hours, then multiplies it by 0.98 a day', () => {
    expect(currentSalience(base, at(1))).toBe(1);
    expect(currentSalience(base, at(11))).toBeCloseTo(0.98 ** 10, 10);
  });

  it('adds 0.1 salience per retrieval, capped at 5', () => {
    expect(salienceDecay.reinforcement(base, at(0)).salience).toBeCloseTo(1.1, 10);
    expect(salienceDecay.reinforcement({ ...base, salience: 4.95 }, at(0))).toEqual({ salience: 5 });
  });

  it('scores recency as the share of the largest salience', () => {
    expect(salienceDecay.recency({ ...base, salience: 2.5 }, at(1))).toBe(0.5);
  });

  it('shows salience as of now, and strength and importance as stored', () => {
    expect(salienceDecay.current(base, null, at(1))).toEqual({ strength: 1, salience: 1, importance: 0.4 });
    expect(salienceDecay.current(base, null, at(15)).salience).toBeCloseTo(0.98 ** 14, 10);
    expect(salienceDecay.current({ ...base, pinned: true }, null, at(15)).salience).toBe(1);
  });

  it('expires exactly when the salience it shows falls below 0.1', () => {
    for (const day of [1 + 113, 1 + 114]) {
      const shown = salienceDecay.current(base, null, at(day)).salience;
      expect(salienceDecay.step(base, null, at(day)).isExpired).toBe(shown < 0.1);
    }
  });
});
