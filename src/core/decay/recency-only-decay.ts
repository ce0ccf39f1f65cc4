import { clamp01, type DecayPolicy, daysSince, decayAnchor, storedValues } from './decay-policy.js';
import { HALF_LIFE_DAYS } from './ebbinghaus-decay.js';

/**
 * The scoped REST design's decay: nothing fades in storage and nothing is ever archived; only the
 * recall score's recency term halves every 14 days since the last retrieval (or the creation), as
 * under importance steps. A retrieval writes nothing beyond its access count and time, which restart
 * that clock.
 */
export const recencyOnlyDecay: DecayPolicy = {
  recency: (memory, now) => clamp01(2 ** (-daysSince(decayAnchor(memory), now) / HALF_LIFE_DAYS)),
  reinforcement: () => ({}),
  current: (memory) => storedValues(memory),
  step: () => ({ isDecayed: false, isExpired: false, change: null }),
  due: 'never',
  usesDecayedAt: false,
};
