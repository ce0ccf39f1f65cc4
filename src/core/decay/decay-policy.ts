import type { DecayDueRule, ImportanceChange } from '../../storage/maintenance-store.js';
import type { Memory } from '../types.js';

/** Milliseconds in a day. */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** What the decay policies read of a memory. */
export type DecayFields = Pick<
  Memory,
  'strength' | 'salience' | 'importance' | 'pinned' | 'lastAccessedAt' | 'createdAt'
>;

/** The fields a decay policy fades: what `get`, `list` and recall hits show as of now. */
export type DecayValues = Pick<Memory, 'strength' | 'salience' | 'importance'>;

/** What a retrieval changes besides access count and time. */
export interface Reinforcement {
  strength?: number;
  salience?: number;
  importance?: number;
}

/** Where one memory stands when maintenance runs decay. */
export interface DecayStep {
  /** The policy's signal is below its stored value now. */
  isDecayed: boolean;
  /** The memory fell below the line: archive it with the policy's `archiveReason`. */
  isExpired: boolean;
  /** What to store (the new importance and the time decay is applied up to), or null to store nothing. */
  change: Omit<ImportanceChange, 'id' | 'read'> | null;
}

/**
 * One way memories fade and are reinforced: what recall scores as recency, what a retrieval writes,
 * what a memory's signals are as of now, and what maintenance stores or archives. Pure: every answer
 * is computed from the memory and `now` (epoch milliseconds), so a missed maintenance run is caught
 * up exactly.
 */
export interface DecayPolicy {
  /** The recall score's recency term at `now`, 0..1. */
  recency(memory: DecayFields, now: number): number;
  /** What one retrieval at `now` writes besides access count and time. */
  reinforcement(memory: DecayFields, now: number): Reinforcement;
  /**
   * Strength, salience and importance as of `now`: the stored values with the decay since then applied,
   * given the time the stored changes are applied up to (`decayedAt`). A pinned memory keeps its stored
   * values. Storing what `step` asks for at any time before `now` leaves the answer unchanged.
   */
  current(memory: DecayFields, decayedAt: number | null, now: number): DecayValues;
  /** Where the memory stands at `now`, given the time its stored changes are applied up to (`decayedAt`). */
  step(memory: DecayFields, decayedAt: number | null, now: number): DecayStep;
  /**
   * When a memory next needs a run of `step` (ADR 9, session 8): before its due time `step` stores
   * nothing and archives nothing, so maintenance reads only the memories due. `never` for a policy
   * whose `step` never does anything.
   */
  readonly due: DecayDueRule | 'never';
  /** Whether `current` and `step` read `decayedAt`; when false, callers pass null instead of reading it from storage. */
  readonly usesDecayedAt: boolean;
  /** The version reason of an archive by this policy; a policy whose `step` never expires a memory has none. */
  readonly archiveReason?: string;
  /** The version reason of the changes `step` stores; a policy whose `step` stores none has none. */
  readonly changeReason?: string;
}

/**
 * The step of a policy that stores nothing: decayed when the `current` signal is below its `stored`
 * value, expired when it is below `line`, unless the memory is pinned.
 */
export function thresholdStep(memory: DecayFields, stored: number, current: number, line: number): DecayStep {
  return { isDecayed: current < stored, isExpired: !memory.pinned && current < line, change: null };
}

/** The moment a memory's decay clock last restarted: its last retrieval, else its creation. */
export function decayAnchor(memory: DecayFields): number {
  return Date.parse(memory.lastAccessedAt ?? memory.createdAt);
}

/** Whole and fractional days from `time` to `now`, never negative. */
export function daysSince(time: number, now: number): number {
  return Math.max(0, (now - time) / DAY_MS);
}

/** The stored strength, salience and importance of a memory. */
export function storedValues(memory: DecayFields): DecayValues {
  return { strength: memory.strength, salience: memory.salience, importance: memory.importance };
}

/** `value` limited to 0..1. */
export function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}
