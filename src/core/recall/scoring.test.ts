import { describe, expect, it } from 'vitest';
import { DAY_MS } from '../decay/decay.js';
import { resolvePolicy } from '../policy.js';
import type { Scope } from '../types.js';
import { accessFrequencyScore, scoreBreakdown, weightedScore } from './scoring.js';

const created = '2024-06-01T00:00:00.000Z';
const now = Date.parse(created);
const memory = {
  scope: 'global' as Scope,
  importance: 0.5,
  accessCount: 0,
  pinned: false,
  strength: 1,
  salience: 1,
  lastAccessedAt: null,
  createdAt: created,
  supersededBy: null as number | null,
  fadedAt: null as string | null,
};

describe('the recall score', () => {
  it('ranks scope bonuses session > project > personal > room > global by default', () => {
    const policy = resolvePolicy();
    const bonus = (scope: Scope) => scoreBreakdown({ ...memory, scope }, 0.5, policy, now).scope;
    const ordered = (['session', 'project', 'personal', 'room', 'global'] as const).map(bonus);
    expect(ordered).toEqual([...ordered].sort((a, b) => b - a));
    expect(new Set(ordered).size).toBe(5);
  });

  it('keeps every term in 0..1 and the score a weighted mean of them', () => {
    const policy = resolvePolicy({
      recall: { weights: { relevance: 2, importance: 1, recency: 1, accessFrequency: 0, scope: 0, pinned: 0 } },
    });
    const breakdown = scoreBreakdown({ ...memory, importance: 1, accessCount: 10_000 }, 1.7, policy, now + 14 * DAY_MS);
    for (const value of Object.values(breakdown)) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThanOrEqual(1);
    }
    expect(breakdown).toMatchObject({ relevance: 1, importance: 1, accessFrequency: 1, pinned: 0 });
    expect(scoreBreakdown({ ...memory, pinned: true }, 0, policy, now + 14 * DAY_MS)).toMatchObject({
      pinned: 1,
      recency: 1,
    });
    expect(breakdown.recency).toBeCloseTo(0.5, 10);
    expect(weightedScore(breakdown, policy.recall.weights)).toBeCloseTo((2 * 1 + 1 * 1 + 1 * 0.5) / 4, 10);
  });

  it('ranks the fresher memory first when relevance ties', () => {
    const policy = resolvePolicy();
    const fresh = weightedScore(scoreBreakdown(memory, 0.8, policy, now), policy.recall.weights);
    const stale = weightedScore(scoreBreakdown(memory, 0.8, policy, now + 60 * DAY_MS), policy.recall.weights);
    expect(fresh).toBeGreaterThan(stale);
  });

  it('multiplies the score of a superseded memory by supersededWeight, so the newer statement ranks first', () => {
    const policy = resolvePolicy();
    expect(policy.recall.supersededWeight).toBe(0.8);
    const current = scoreBreakdown(memory, 0.9, policy, now);
    const superseded = scoreBreakdown({ ...memory, supersededBy: 42 }, 1, policy, now);
    expect(current.superseded).toBe(1);
    expect(superseded.superseded).toBe(0.8);
    const unpenalised = weightedScore({ ...superseded, superseded: 1 }, policy.recall.weights);
    expect(weightedScore(superseded, policy.recall.weights)).toBeCloseTo(unpenalised * 0.8, 12);
    // The older statement matched the query better, and still ranks below the newer one.
    expect(weightedScore(current, policy.recall.weights)).toBeGreaterThan(
      weightedScore(superseded, policy.recall.weights),
    );
    const equals = resolvePolicy({ recall: { supersededWeight: 1 } });
    expect(weightedScore(scoreBreakdown({ ...memory, supersededBy: 42 }, 1, equals, now), equals.recall.weights)).toBe(
      weightedScore(scoreBreakdown(memory, 1, equals, now), equals.recall.weights),
    );
  });

  it('refuses a supersededWeight outside 0..1', () => {
    expect(() => resolvePolicy({ recall: { supersededWeight: 1.5 } })).toThrow(
      /supersededWeight must be between 0 and 1/,
    );
    expect(() => resolvePolicy({ recall: { supersededWeight: -0.1 } })).toThrow(
      /supersededWeight must be between 0 and 1/,
    );
  });

  it('multiplies the score by the otherSpeaker factor, and refuses an otherSpeakerWeight outside 0..1', () => {
    const policy = resolvePolicy();
    expect(policy.recall.otherSpeakerWeight).toBe(0.9);
    const breakdown = scoreBreakdown(memory, 0.9, policy, now);
    expect(weightedScore({ ...breakdown, otherSpeaker: 0.85 }, policy.recall.weights)).toBeCloseTo(
      weightedScore(breakdown, policy.recall.weights) * 0.85,
      12,
    );
    expect(() => resolvePolicy({ recall: { otherSpeakerWeight: 1.2 } })).toThrow(
      /otherSpeakerWeight must be between 0 and 1/,
    );
  });

  it('grows the access-frequency term with the logarithm of the count, reaching 1 at 50', () => {
    expect(accessFrequencyScore(0)).toBe(0);
    expect(accessFrequencyScore(5)).toBeGreaterThan(accessFrequencyScore(1));
    expect(accessFrequencyScore(50)).toBeCloseTo(1, 12);
    expect(accessFrequencyScore(500)).toBe(1);
  });

  it('refuses a policy whose weights are all zero or negative', () => {
    const zero = { relevance: 0, importance: 0, recency: 0, accessFrequency: 0, scope: 0, pinned: 0 };
    expect(() => resolvePolicy({ recall: { weights: zero } })).toThrow(/at least one recall weight/);
    expect(() => resolvePolicy({ recall: { weights: { importance: -1 } } })).toThrow(/must not be negative/);
    expect(() => resolvePolicy({ recall: { candidatePool: { min: 50, max: 10 } } })).toThrow(/must not exceed/);
  });
});
