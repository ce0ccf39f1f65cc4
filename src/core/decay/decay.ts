import type { MnemePolicy } from '../policy.js';
import type { Memory } from '../types.js';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** Ebbinghaus half-life: retention halves every 14 days without a retrieval. */
export const HALF_LIFE_DAYS = 14;
/** Salience bounds and steps of the salience policy. */
export const SALIENCE_MAX = 5;
export const SALIENCE_HIT = 0.1;
export const SALIENCE_DAILY_FACTOR = 0.98;
/** The importance-steps policy works on a 0..5 scale; importance 0..1 is stored as step / 5. */
export const IMPORTANCE_STEPS = 5;

type DecayFields = Pick<Memory, 'strength' | 'salience' | 'importance' | 'pinned' | 'lastAccessedAt' | 'createdAt'>;

/** The moment a memory's decay clock last restarted: its last retrieval, else its creation. */
export function decayAnchor(memory: DecayFields): number {
  return Date.parse(memory.lastAccessedAt ?? memory.createdAt);
}

function daysSince(time: number, now: number): number {
  return Math.max(0, (now - time) / DAY_MS);
}

/** Ebbinghaus retention now: `strength * 2^(-days since the anchor / 14)`; pinned memories keep theirs. */
export function retention(memory: DecayFields, now: number): number {
  if (memory.pinned) return memory.strength;
  return memory.strength * 2 ** (-daysSince(decayAnchor(memory), now) / HALF_LIFE_DAYS);
}

/** Salience now: x0.98 per day, counted from the anchor but never for a memory's first 24 hours. */
export function currentSalience(memory: DecayFields, now: number): number {
  if (memory.pinned) return memory.salience;
  const start = Math.max(decayAnchor(memory), Date.parse(memory.createdAt) + DAY_MS);
  return memory.salience * SALIENCE_DAILY_FACTOR ** daysSince(start, now);
}

/** The recall score's recency term, 0..1, from the active decay policy. */
export function recencyScore(memory: DecayFields, policy: Pick<MnemePolicy, 'decay'>, now: number): number {
  switch (policy.decay) {
    case 'ebbinghaus':
      return clamp01(retention(memory, now));
    case 'salience':
      return clamp01(currentSalience(memory, now) / SALIENCE_MAX);
    case 'importance-steps':
      return clamp01(2 ** (-daysSince(decayAnchor(memory), now) / HALF_LIFE_DAYS));
  }
}

/** What a retrieval changes besides access count and time, per policy. */
export interface Reinforcement {
  strength?: number;
  salience?: number;
  importance?: number;
}

/**
 * The reinforcement of one retrieval at `now`: Ebbinghaus restarts the clock at full strength,
 * salience adds 0.1 to its current value (cap 5), importance steps go up one step (cap 5).
 */
export function reinforcement(memory: DecayFields, policy: Pick<MnemePolicy, 'decay'>, now: number): Reinforcement {
  switch (policy.decay) {
    case 'ebbinghaus':
      return { strength: 1 };
    case 'salience':
      return { salience: Math.min(SALIENCE_MAX, currentSalience(memory, now) + SALIENCE_HIT) };
    case 'importance-steps':
      return { importance: Math.min(IMPORTANCE_STEPS, importanceStep(memory.importance) + 1) / IMPORTANCE_STEPS };
  }
}

/** The 0..5 step of an importance stored as 0..1. */
export function importanceStep(importance: number): number {
  return Math.round(importance * IMPORTANCE_STEPS);
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}

/** Ebbinghaus: a memory whose retention falls below this is archived. */
export const RETENTION_ARCHIVE_BELOW = 0.1;
/** Salience: a memory whose salience falls below this is removed (archived, with a version saying why). */
export const SALIENCE_REMOVE_BELOW = 0.1;
/** Importance steps: one step down for each 7 days without a retrieval. */
export const IMPORTANCE_STEP_DAYS = 7;
/** Importance steps: a memory that has spent 7 days at step 0 without a retrieval is soft-deleted. */
export const IMPORTANCE_EXPIRY_DAYS = 7;

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
