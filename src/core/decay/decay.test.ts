import { describe, expect, it } from 'vitest';
import { decayPolicies } from './decay.js';
import { DAY_MS, type DecayFields, type DecayPolicy, decayAnchor } from './decay-policy.js';

const created = '2024-06-01T00:00:00.000Z';
const at = (days: number) => Date.parse(created) + days * DAY_MS;
const days = [0, 0.5, 1, 3, 7, 14, 30, 100, 400, 3650];

/** Memories across the range of every signal, retrieved or not, pinned or not. */
const memories: DecayFields[] = [1, 0.5, 0.05].flatMap((strength) =>
  [0.05, 1, 4.95, 5].flatMap((salience) =>
    [0, 0.2, 0.6, 1].flatMap((importance) =>
      [null, new Date(at(3)).toISOString()].flatMap((lastAccessedAt) =>
        [false, true].map((pinned) => ({ strength, salience, importance, pinned, lastAccessedAt, createdAt: created })),
      ),
    ),
  ),
);
const unpinned = memories.filter((memory) => !memory.pinned);

/** The memory as a retrieval at `now` leaves it. */
function retrieved(policy: DecayPolicy, memory: DecayFields, now: number): DecayFields {
  return { ...memory, ...policy.reinforcement(memory, now), lastAccessedAt: new Date(now).toISOString() };
}

/** What maintenance at `now` stores for one memory, and whether it archives it. */
function maintain(policy: DecayPolicy, state: { memory: DecayFields; decayedAt: number | null }, now: number) {
  const step = policy.step(state.memory, state.decayedAt, now);
  if (step.change === null) return { ...state, isExpired: step.isExpired };
  return {
    memory: { ...state.memory, importance: step.change.importance },
    decayedAt: step.change.decayedAt,
    isExpired: step.isExpired,
  };
}

describe.each(Object.entries(decayPolicies))('the %s decay policy', (_name, policy: DecayPolicy) => {
  it('keeps the recency term within 0..1 and never raises it as time passes', () => {
    for (const memory of memories) {
      const recencies = days.map((day) => policy.recency(memory, at(day)));
      for (const recency of recencies) expect(recency).toBeGreaterThanOrEqual(0);
      for (const recency of recencies) expect(recency).toBeLessThanOrEqual(1);
      recencies.slice(1).forEach((recency, index) => {
        expect(recency).toBeLessThanOrEqual(recencies[index] ?? 1);
      });
    }
  });

  it('never lowers the recency term by a retrieval, then or later', () => {
    for (const memory of memories) {
      for (const day of days.filter((day) => at(day) >= decayAnchor(memory))) {
        const after = retrieved(policy, memory, at(day));
        for (const later of [0, 1, 30]) {
          expect(policy.recency(after, at(day + later))).toBeGreaterThanOrEqual(
            policy.recency(memory, at(day + later)),
          );
        }
      }
    }
  });

  it('reinforces within range: strength 0..1, salience 0..5, importance 0..1', () => {
    for (const memory of memories) {
      const { strength = 1, salience = 0, importance = 0 } = policy.reinforcement(memory, at(30));
      expect([strength, salience / 5, importance].every((value) => value >= 0 && value <= 1)).toBe(true);
    }
  });

  it('never decays, changes or archives a pinned memory', () => {
    for (const memory of memories.filter((memory) => memory.pinned)) {
      for (const day of days) {
        expect(policy.step(memory, null, at(day))).toEqual({ isDecayed: false, isExpired: false, change: null });
      }
    }
  });

  it('archives a memory left unretrieved long enough (if it archives at all), but never one just made or just retrieved', () => {
    for (const memory of unpinned) {
      expect(policy.step(memory, null, at(3650)).isExpired).toBe(policy.archiveReason !== undefined);
      const made = { ...memory, strength: 1, salience: 1, lastAccessedAt: null };
      expect(policy.step(made, null, at(0)).isExpired).toBe(false);
      for (const day of days.filter((day) => at(day) >= decayAnchor(memory))) {
        expect(policy.step(retrieved(policy, memory, at(day)), null, at(day)).isExpired).toBe(false);
      }
    }
  });

  it('catches up missed runs exactly: one step ends where steps at uneven intervals do', () => {
    for (const memory of unpinned) {
      let stepped = { memory, decayedAt: null as number | null, isExpired: false };
      for (let day = 1, gap = 1; day <= 120; day += gap++) {
        stepped = maintain(policy, stepped, at(day));
        const once = maintain(policy, { memory, decayedAt: null }, at(day));
        expect([once.memory.importance, once.isExpired]).toEqual([stepped.memory.importance, stepped.isExpired]);
      }
    }
  });

  it('names the reason of an archive, and of every change it stores', () => {
    const archives = unpinned.some((memory) => days.some((day) => policy.step(memory, null, at(day)).isExpired));
    if (archives) expect(policy.archiveReason).toMatch(/^decay: /);
    const storesChanges = unpinned.some((memory) => days.some((day) => policy.step(memory, null, at(day)).change));
    if (storesChanges) expect(policy.changeReason).toMatch(/^decay: /);
  });

  it('shows a pinned memory with its stored values, whenever asked', () => {
    for (const memory of memories.filter((memory) => memory.pinned)) {
      for (const day of days) {
        expect(policy.current(memory, null, at(day))).toEqual({
          strength: memory.strength,
          salience: memory.salience,
          importance: memory.importance,
        });
      }
    }
  });

  it('shows the same current values before and after maintenance stores what it asks for', () => {
    for (const memory of unpinned) {
      let stepped = { memory, decayedAt: null as number | null, isExpired: false };
      for (let day = 1, gap = 1; day <= 120; day += gap++) {
        const before = policy.current(stepped.memory, stepped.decayedAt, at(day));
        stepped = maintain(policy, stepped, at(day));
        expect(policy.current(stepped.memory, stepped.decayedAt, at(day))).toEqual(before);
        expect(policy.current(stepped.memory, stepped.decayedAt, at(day + 10))).toEqual(
          policy.current(memory, null, at(day + 10)),
        );
      }
    }
  });

  it('shows current values within range that never rise as time passes without a retrieval', () => {
    for (const memory of unpinned) {
      const values = days.map((day) => policy.current(memory, null, at(day)));
      for (const { strength, salience, importance } of values) {
        expect([strength, salience / 5, importance].every((value) => value >= 0 && value <= 1)).toBe(true);
      }
      values.slice(1).forEach((value, index) => {
        const earlier = values[index];
        expect(value.strength).toBeLessThanOrEqual(earlier?.strength ?? 1);
        expect(value.salience).toBeLessThanOrEqual(earlier?.salience ?? 5);
        expect(value.importance).toBeLessThanOrEqual(earlier?.importance ?? 1);
      });
    }
  });

  it('ignores decayedAt unless it says it reads it', () => {
    if (policy.usesDecayedAt) return;
    for (const memory of memories) {
      for (const day of days) {
        expect(policy.current(memory, at(day / 2), at(day))).toEqual(policy.current(memory, null, at(day)));
        expect(policy.step(memory, at(day / 2), at(day))).toEqual(policy.step(memory, null, at(day)));
      }
    }
  });
});
