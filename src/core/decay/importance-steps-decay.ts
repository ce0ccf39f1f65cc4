import {
  clamp01,
  DAY_MS,
  type DecayFields,
  type DecayPolicy,
  daysSince,
  decayAnchor,
  storedValues,
} from './decay-policy.js';
import { HALF_LIFE_DAYS } from './ebbinghaus-decay.js';

/** The importance-steps policy works on a 0..5 scale; importance 0..1 is stored as step / 5. */
export const IMPORTANCE_STEPS = 5;
/** Importance steps: one step down for each 7 days without a retrieval. */
export const IMPORTANCE_STEP_DAYS = 7;
/** Importance steps: a memory that has spent 7 days at step 0 without a retrieval is soft-deleted. */
export const IMPORTANCE_EXPIRY_DAYS = 7;

/** The 0..5 step of an importance stored as 0..1. */
export function importanceStep(importance: number): number {
  return Math.round(importance * IMPORTANCE_STEPS);
}

/** Where the importance-steps policy stands for one memory at a given time. */
export interface ImportanceDecay {
  /** The step now, 0..5. */
  step: number;
  /** Epoch milliseconds up to which downgrades are applied; store it with the step so none is applied twice. */
  decayedAt: number | null;
  /** True once the memory has spent 7 days at step 0 without a retrieval: soft-delete it. */
  isExpired: boolean;
}

/**
 * The importance-steps policy at `now`: one step down for each whole 7 days without a retrieval,
 * counted from the later of the decay anchor and `decayedAt` (the time up to which earlier
 * downgrades were applied), so running it every day or once after a missed week gives the same
 * steps. 7 days at step 0 expire the memory. Pinned memories keep their step.
 */
export function importanceDecay(memory: DecayFields, decayedAt: number | null, now: number): ImportanceDecay {
  const stored = importanceStep(memory.importance);
  if (memory.pinned) return { step: stored, decayedAt, isExpired: false };
  const stepMs = IMPORTANCE_STEP_DAYS * DAY_MS;
  const start = Math.max(decayAnchor(memory), decayedAt ?? Number.NEGATIVE_INFINITY);
  const steps = Math.min(stored, Math.max(0, Math.floor((now - start) / stepMs)));
  const step = stored - steps;
  const zeroSince = start + stored * stepMs;
  return {
    step,
    decayedAt: steps > 0 ? start + steps * stepMs : decayedAt,
    isExpired: step === 0 && now - zeroSince >= IMPORTANCE_EXPIRY_DAYS * DAY_MS,
  };
}

/**
 * Importance on a 0..5 scale: a retrieval raises it one step (at most 5), each 7 days unused lower it
 * one step (stored, with the time applied up to), and 7 days at 0 soft-delete the memory. Pinned
 * memories never move. The recency term halves every 14 days since the last retrieval.
 */
export const importanceStepsDecay: DecayPolicy = {
  recency: (memory, now) => clamp01(2 ** (-daysSince(decayAnchor(memory), now) / HALF_LIFE_DAYS)),
  reinforcement: (memory) => ({
    importance: Math.min(IMPORTANCE_STEPS, importanceStep(memory.importance) + 1) / IMPORTANCE_STEPS,
  }),
  current(memory, decayedAt, now) {
    const { step } = importanceDecay(memory, decayedAt, now);
    const importance = step === importanceStep(memory.importance) ? memory.importance : step / IMPORTANCE_STEPS;
    return { ...storedValues(memory), importance };
  },
  step(memory, decayedAt, now) {
    const state = importanceDecay(memory, decayedAt, now);
    const appliedUpTo = state.decayedAt === decayedAt ? null : state.decayedAt;
    return {
      isDecayed: state.step < importanceStep(memory.importance),
      isExpired: state.isExpired,
      change: appliedUpTo === null ? null : { importance: state.step / IMPORTANCE_STEPS, decayedAt: appliedUpTo },
    };
  },
  // The next step down, or the expiry of a memory at step 0, from the later of the last retrieval and
  // the time the stored steps are applied up to.
  due: { kind: 'every', periodMs: Math.min(IMPORTANCE_STEP_DAYS, IMPORTANCE_EXPIRY_DAYS) * DAY_MS },
  usesDecayedAt: true,
  archiveReason: `decay: importance 0 for ${IMPORTANCE_EXPIRY_DAYS} days without a retrieval`,
  changeReason: `decay: importance steps, one step down per ${IMPORTANCE_STEP_DAYS} days without a retrieval`,
};
