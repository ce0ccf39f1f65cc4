import {
  clamp01,
  DAY_MS,
  type DecayFields,
  type DecayPolicy,
  daysSince,
  decayAnchor,
  storedValues,
  thresholdStep,
} from './decay-policy.js';

/** Salience bounds and steps of the salience policy. */
export const SALIENCE_MAX = 5;
export const SALIENCE_HIT = 0.1;
export const SALIENCE_DAILY_FACTOR = 0.98;
/** Salience: a memory whose salience falls below this is removed (archived, with a version saying why). */
export const SALIENCE_REMOVE_BELOW = 0.1;

/** Salience now: x0.98 per day, counted from the anchor but never for a memory's first 24 hours. */
export function currentSalience(memory: DecayFields, now: number): number {
  if (memory.pinned) return memory.salience;
  const start = Math.max(decayAnchor(memory), Date.parse(memory.createdAt) + DAY_MS);
  return memory.salience * SALIENCE_DAILY_FACTOR ** daysSince(start, now);
}

/**
 * Salience fades x0.98 a day after a memory's first 24 hours; each retrieval adds 0.1 to its current
 * value (at most 5); below 0.1 the memory is removed. Nothing is stored until then.
 */
export const salienceDecay: DecayPolicy = {
  recency: (memory, now) => clamp01(currentSalience(memory, now) / SALIENCE_MAX),
  reinforcement: (memory, now) => ({ salience: Math.min(SALIENCE_MAX, currentSalience(memory, now) + SALIENCE_HIT) }),
  current: (memory, _decayedAt, now) => ({ ...storedValues(memory), salience: currentSalience(memory, now) }),
  step: (memory, _decayedAt, now) =>
    thresholdStep(memory, memory.salience, currentSalience(memory, now), SALIENCE_REMOVE_BELOW),
  due: {
    kind: 'fades',
    signal: 'salience',
    perDay: SALIENCE_DAILY_FACTOR,
    below: SALIENCE_REMOVE_BELOW,
    graceMs: DAY_MS,
  },
  usesDecayedAt: false,
  archiveReason: `decay: salience fell below ${SALIENCE_REMOVE_BELOW}`,
};
