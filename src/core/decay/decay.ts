import type { DecayFields, DecayPolicy, Reinforcement } from './decay-policy.js';
import { ebbinghausDecay } from './ebbinghaus-decay.js';
import { importanceStepsDecay } from './importance-steps-decay.js';
import { recencyOnlyDecay } from './recency-only-decay.js';
import { salienceDecay } from './salience-decay.js';

export { DAY_MS } from './decay-policy.js';
export { importanceStep } from './importance-steps-decay.js';

/** The decay policies by the name `policy.decay` gives: a new policy is one file and one entry here. */
export const decayPolicies = {
  ebbinghaus: ebbinghausDecay,
  salience: salienceDecay,
  'importance-steps': importanceStepsDecay,
  'recency-only': recencyOnlyDecay,
} as const satisfies Record<string, DecayPolicy>;

/** The name of a decay policy. */
export type DecayPolicyName = keyof typeof decayPolicies;

/** Every decay policy name, in the record's order. */
export const decayPolicyNames = Object.keys(decayPolicies) as [DecayPolicyName, ...DecayPolicyName[]];

/** The recall score's recency term, 0..1, from the active decay policy. */
export function recencyScore(memory: DecayFields, policy: { decay: DecayPolicyName }, now: number): number {
  return decayPolicies[policy.decay].recency(memory, now);
}

/** What one retrieval at `now` changes besides access count and time, per the active decay policy. */
export function reinforcement(memory: DecayFields, policy: { decay: DecayPolicyName }, now: number): Reinforcement {
  return decayPolicies[policy.decay].reinforcement(memory, now);
}
