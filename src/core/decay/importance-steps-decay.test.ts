import { describe, expect, it } from 'vitest';
import { DAY_MS } from './decay-policy.js';
import { importanceStepsDecay } from './importance-steps-decay.js';

const created = '2024-06-01T00:00:00.000Z';
const base = { strength: 1, salience: 1, importance: 0.4, pinned: false, lastAccessedAt: null, createdAt: created };
const at = (days: number) => Date.parse(created) + days * DAY_MS;

describe('importance-steps decay', () => {
  it('raises importance one step per retrieval, capped at 5', () => {
    expect(importanceStepsDecay.reinforcement(base, at(0))).toEqual({ importance: 0.6 });
    expect(importanceStepsDecay.reinforcement({ ...base, importance: 1 }, at(0))).toEqual({ importance: 1 });
  });

  it('stores one step down per whole 7 days unused, with the time it is applied up to', () => {
    expect(importanceStepsDecay.step(base, null, at(6.9))).toEqual({
      isDecayed: false,
      isExpired: false,
      change: null,
    });
    expect(importanceStepsDecay.step(base, null, at(15))).toEqual({
      isDecayed: true,
      isExpired: false,
      change: { importance: 0, decayedAt: at(14) },
    });
    expect(importanceStepsDecay.step({ ...base, importance: 0 }, at(14), at(20.9)).isExpired).toBe(false);
    expect(importanceStepsDecay.step({ ...base, importance: 0 }, at(14), at(21))).toEqual({
      isDecayed: false,
      isExpired: true,
      change: null,
    });
  });

  it('halves the recency term every 14 days since the last retrieval, whatever the importance', () => {
    expect(importanceStepsDecay.recency({ ...base, importance: 1 }, at(14))).toBeCloseTo(0.5, 10);
    expect(importanceStepsDecay.recency({ ...base, importance: 0 }, at(14))).toBeCloseTo(0.5, 10);
  });

  it('shows the importance of now: one step less per whole 7 days since the last retrieval or stored downgrade', () => {
    expect(importanceStepsDecay.current(base, null, at(6.9))).toEqual({ strength: 1, salience: 1, importance: 0.4 });
    expect(importanceStepsDecay.current(base, null, at(7)).importance).toBe(0.2);
    expect(importanceStepsDecay.current(base, null, at(14)).importance).toBe(0);
    expect(importanceStepsDecay.current({ ...base, importance: 0.8 }, at(14), at(20.9)).importance).toBe(0.8);
    expect(importanceStepsDecay.current({ ...base, importance: 0.8 }, at(14), at(21)).importance).toBe(0.6);
    expect(importanceStepsDecay.current({ ...base, importance: 0.5 }, null, at(3)).importance).toBe(0.5);
    expect(importanceStepsDecay.current({ ...base, pinned: true }, null, at(365)).importance).toBe(0.4);
  });
});
