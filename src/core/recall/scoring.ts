import { recencyScore } from '../decay/decay.js';
import type { MnemePolicy } from '../policy.js';
import type { Memory } from '../types.js';
import { type RecallWeights, type ScoreTerm, scoreTerms } from './recall-policy.js';

/**
 * Each score term of one hit, in 0..1, and the factors their weighted mean is multiplied by: the score
 * is `weighted mean x superseded x faded`.
 */
export type ScoreBreakdown = Record<ScoreTerm, number> & {
  /**
   * 1, or the policy's `recall.supersededWeight` (0.8 by default) for a memory a newer statement
   * supersedes, so the newer ranks first while the older stays findable. Left out: 1.
   */
  superseded?: number;
  /** 1, or the policy's `recall.fadedWeight` (0.95 by default) for a memory that faded (ADR 9). Left out: 1. */
  faded?: number;
  /**
   * 1, or the policy's `recall.otherSpeakerWeight` (0.9 by default) for a conversation turn of another
   * user when the query names a speaker (ADR 23), or `recall.otherSpeakerWeakWeight` (0.8) for another user's
   * fact, event or preference that covers less than half of the query's word weight (ADR 26). Left out: 1.
   */
  otherSpeaker?: number;
};

/** The access count at which the access-frequency term reaches 1 (it grows with the logarithm). */
export const ACCESS_SATURATION = 50;

type ScoredFields = Pick<
  Memory,
  | 'scope'
  | 'importance'
  | 'accessCount'
  | 'pinned'
  | 'strength'
  | 'salience'
  | 'lastAccessedAt'
  | 'createdAt'
  | 'supersededBy'
  | 'fadedAt'
>;

/** The access-frequency term: log(1 + count) / log(1 + 50), capped at 1. */
export function accessFrequencyScore(accessCount: number): number {
  return Math.min(1, Math.log1p(Math.max(0, accessCount)) / Math.log1p(ACCESS_SATURATION));
}

/**
 * The per-term breakdown of a memory found with `relevance` (0..1): importance as stored, recency from
 * the active decay policy, access frequency, the scope bonus of its scope, 1 when pinned; and
 * `superseded`, `recall.supersededWeight` when a newer memory supersedes it, else 1; `faded`,
 * `recall.fadedWeight` when decay put it to rest, else 1.
 */
export function scoreBreakdown(
  memory: ScoredFields,
  relevance: number,
  policy: Pick<MnemePolicy, 'decay' | 'recall'>,
  now: number,
): ScoreBreakdown {
  return {
    relevance: clamp01(relevance),
    importance: clamp01(memory.importance),
    recency: recencyScore(memory, policy, now),
    accessFrequency: accessFrequencyScore(memory.accessCount),
    scope: policy.recall.scopeBonus[memory.scope],
    pinned: memory.pinned ? 1 : 0,
    superseded: memory.supersededBy === null ? 1 : policy.recall.supersededWeight,
    faded: memory.fadedAt === null ? 1 : policy.recall.fadedWeight,
  };
}

/** The weighted mean of the terms, times the breakdown's `superseded`, `faded` and `otherSpeaker` factors: 0..1, never stored. */
export function weightedScore(breakdown: ScoreBreakdown, weights: RecallWeights): number {
  let total = 0;
  let weightSum = 0;
  for (const term of scoreTerms) {
    total += weights[term] * breakdown[term];
    weightSum += weights[term];
  }
  const factors = (breakdown.superseded ?? 1) * (breakdown.faded ?? 1) * (breakdown.otherSpeaker ?? 1);
  return weightSum === 0 ? 0 : (total / weightSum) * factors;
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}
