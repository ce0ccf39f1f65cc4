import type { MnemePolicy } from './policy.js';
import type { Memory } from './types.js';

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
