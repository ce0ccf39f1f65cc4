import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from '../../../test/maintenance-engine.js';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { createOfflineEpisodeSummariser } from '../../models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../../models/offline/offline-memory-merger.js';
import { ALWAYS_DUE, DUE_MARGIN_MS } from '../../storage/decay-due-sql.js';
import type { DueDecayCandidate } from '../../storage/maintenance-store.js';
import type { createFixedClock } from '../../testing.js';
import { createEngine } from '../create-engine.js';
import { type DecayPolicyName, decayPolicies, decayPolicyNames, reinforcement } from '../decay/decay.js';
import type { EngineContext } from '../engine-context.js';
import type { Mneme } from '../mneme.js';
import { resolvePolicy } from '../policy.js';
import { decayCandidatePages, duePages, runDecay } from './decay-task.js';

const start = '2024-06-01T00:00:00.000Z';
const DAY = 24 * 60 * 60 * 1000;

interface Side {
  context: EngineContext;
  mneme: Mneme;
  clock: ReturnType<typeof createFixedClock>;
}

/** An engine on its own store, with its context in reach so that a test can run decay either way. */
async function openSide(decay: DecayPolicyName): Promise<Side> {
  const { storage, clock } = await openMaintenanceEngine({ store, start, policy: { decay } });
  const context: EngineContext = {
    storage,
    embedder: null,
    clock,
    logger: { warn: () => {} },
    policy: resolvePolicy({ decay }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
  };
  return { context, mneme: createEngine(context), clock };
}

/** Every memory as stored, and every version, of one side. */
async function outcome(side: Side) {
  const ids = (await side.mneme.list({ archived: 'include', limit: 500 })).memories.map((memory) => memory.id);
  const stored = await side.context.storage.memories.get(ids);
  const decayedAt = await side.context.storage.memories.decayedAt(ids);
  const versions = [];
  for (const id of ids) {
    versions.push(
      (await side.mneme.history(id)).map((version) => [
        version.action,
        version.reason,
        version.createdAt,
        version.changes,
      ]),
    );
  }
  return {
    memories: stored
      .map((memory) => [
        memory.id,
        memory.strength,
        memory.salience,
        memory.importance,
        memory.pinned,
        memory.lastAccessedAt,
        memory.archivedAt,
        decayedAt.get(memory.id) ?? null,
      ])
      .sort((a, b) => Number(a[0]) - Number(b[0])),
    versions,
  };
}

let store: EngineStore = 'sqlite';

/** The ids of the memories whose step at `now` stores or archives something, reading every memory. */
async function idsToStep(side: Side, now: number): Promise<number[]> {
  const policy = decayPolicies[side.context.policy.decay];
  const ids: number[] = [];
  for await (const page of decayCandidatePages(side.context.storage)) {
    for (const memory of page) {
      const step = policy.step(memory, memory.decayedAt, now);
      if (step.isExpired || step.change) ids.push(memory.id);
    }
  }
  return ids;
}

/** The ids of the memories the due read gives at `now`. */
async function idsDue(side: Side, now: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const page of duePages(side.context.storage, decayPolicies[side.context.policy.decay], now)) {
    ids.push(...page.map((memory) => memory.id));
  }
  return ids;
}

/**
 * Checks that every memory's due time is its step's first effect, up to the read's margin: the step
 * a margin before it does nothing (the due time is not late: a run would miss the memory) and the step
 * a margin after it stores or archives something (not early: a run would read it for nothing).
 */
async function expectDueTimesTight(side: Side, now: number, label: string): Promise<void> {
  const policy = decayPolicies[side.context.policy.decay];
  if (policy.due === 'never') return;
  const far = now + 3650 * DAY;
  for await (const page of duePages(side.context.storage, policy, far)) {
    for (const memory of page as DueDecayCandidate[]) {
      if (memory.due === ALWAYS_DUE || memory.due > far) continue;
      const before = policy.step(memory, memory.decayedAt, memory.due - DUE_MARGIN_MS);
      const after = policy.step(memory, memory.decayedAt, memory.due + DUE_MARGIN_MS);
      const at = `${label}: memory ${memory.id} due at ${memory.due}`;
      expect(before.isExpired || before.change !== null, `${at}, a step before`).toBe(false);
      expect(after.isExpired || after.change !== null, `${at}, a step after`).toBe(true);
    }
  }
}

describe.each(engineStores)('decay that reads only the memories due, on %s', (name) => {
  beforeAll(async () => {
    store = name;
    await prepareEngineStore(name);
  }, 120_000);
  afterAll(closeEngineStores);

  it('does what reading every memory does, across retrievals, edits, pins, forgets, restores, preset changes and clock jumps', {
    timeout: 300_000,
  }, async () => {
    // PostgreSQL's test stores are one at a time: there, each run checks the due read against every
    // memory's step on the one store instead of running a second store the old way.
    const twoStores = name === 'sqlite';
    for (const seed of twoStores ? [1, 2, 3] : [4]) {
      const { next } = createSeededRandom(seed);
      const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(next() * items.length)];
      let decay: DecayPolicyName = decayPolicyNames[seed % decayPolicyNames.length] ?? 'ebbinghaus';
      const due = await openSide(decay);
      const every = twoStores ? await openSide(decay) : due;
      const sides = twoStores ? [every, due] : [due];
      let now = Date.parse(start);
      let runs = 0;
      for (let round = 0; round < 60; round++) {
        // The clock moves on by up to 12 days, and now and then back by up to 5.
        now += Math.round(next() < 0.1 ? -next() * 5 * DAY : next() * 12 * DAY);
        for (const side of sides) side.clock.set(now);
        const active = (await every.mneme.list({ limit: 500 })).memories.map((memory) => memory.id);
        const archived = (await every.mneme.list({ archived: 'only', limit: 500 })).memories.map((m) => m.id);
        const action = next();
        const importance = Math.round(next() * 10) / 10;
        if (action < 0.3 || active.length === 0) {
          const pinned = next() < 0.1;
          const count = 1 + Math.floor(next() * 3);
          for (let i = 0; i < count; i++) {
            for (const side of sides) {
              await side.mneme.remember({ content: `memory ${round}.${i} of seed ${seed}`, importance, pinned });
            }
          }
        } else if (action < 0.55) {
          // A retrieval, as recall writes it: the policy's reinforcement of the stored memory.
          const id = pick(active) ?? 0;
          for (const side of sides) {
            const [memory] = await side.context.storage.memories.get([id]);
            if (!memory) throw new Error(`memory ${id} is missing`);
            await side.context.storage.memories.touch(
              [{ id, ...reinforcement(memory, side.context.policy, now) }],
              now,
            );
          }
        } else if (action < 0.65) {
          const id = pick(active) ?? 0;
          const change = next() < 0.5 ? { importance } : { pinned: next() < 0.5 };
          for (const side of sides) await side.mneme.update({ id, ...change });
        } else if (action < 0.72) {
          const id = pick(active) ?? 0;
          for (const side of sides) await side.mneme.forget({ id });
        } else if (action < 0.82 && archived.length > 0) {
          const id = pick(archived) ?? 0;
          for (const side of sides) await side.mneme.restore({ id });
        } else if (action < 0.88) {
          // A preset change: another decay policy, whose due times the next run must use.
          decay = pick(decayPolicyNames) ?? 'ebbinghaus';
          for (const side of sides) side.context.policy = resolvePolicy({ decay });
        }
        if (next() < 0.6) {
          await expectDueTimesTight(due, now, `seed ${seed} round ${round}`);
          const dueIds = await idsDue(due, now);
          for (const id of await idsToStep(due, now)) expect(dueIds, `seed ${seed} round ${round}`).toContain(id);
          if (twoStores) {
            const before = await runDecay(every.context, now, { everyMemory: true });
            const after = await runDecay(due.context, now);
            expect(after.archived, `seed ${seed} round ${round}`).toBe(before.archived);
            expect(after.checked).toBeLessThanOrEqual(before.checked);
          } else {
            await runDecay(due.context, now);
          }
          runs++;
        }
        if (twoStores) {
          expect(await outcome(due), `seed ${seed} round ${round} (${decay})`).toEqual(await outcome(every));
        }
      }
      expect(runs).toBeGreaterThan(20);
      for (const side of sides) await side.mneme.close();
    }
  });
});
