import {
  clamp01,
  type DecayFields,
  type DecayPolicy,
  daysSince,
  decayAnchor,
  storedValues,
  thresholdStep,
} from './decay-policy.js';

/** Ebbinghaus half-life: retention halves every 14 days without a retrieval. */
export const HALF_LIFE_DAYS = 14;
/** Ebbinghaus: a memory whose retention falls below this is archived. */
export const RETENTION_ARCHIVE_BELOW = 0.1;

/** Ebbinghaus retention now: `strength * 2^(-days since the anchor / 14)`; pinned memories keep theirs. */
export function retention(memory: DecayFields, now: number): number {
  if (memory.pinned) return memory.strength;
  return memory.strength * 2 ** (-daysSince(decayAnchor(memory), now) / HALF_LIFE_DAYS);
}

/**
 * Strength fades as `strength * 2^(-days / 14)` from the last retrieval, which restarts the clock at
 * full strength; below 0.10 the memory is archived. Nothing is stored until then.
 */
export const ebbinghausDecay: DecayPolicy = {
  recency: (memory, now) => clamp01(retention(memory, now)),
  reinforcement: () => ({ strength: 1 }),
  current: (memory, _decayedAt, now) => ({ ...storedValues(memory), strength: retention(memory, now) }),
  step: (memory, _decayedAt, now) =>
    thresholdStep(memory, memory.strength, retention(memory, now), RETENTION_ARCHIVE_BELOW),
  due: {
    kind: 'fades',
    signal: 'strength',
    perDay: 2 ** (-1 / HALF_LIFE_DAYS),
    below: RETENTION_ARCHIVE_BELOW,
    graceMs: 0,
  },
  usesDecayedAt: false,
  archiveReason: `decay: Ebbinghaus retention fell below ${RETENTION_ARCHIVE_BELOW.toFixed(2)}`,
};
