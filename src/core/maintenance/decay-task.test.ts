import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  daysAfter,
  type EngineStore,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from '../../../test/maintenance-engine.js';
import { decayPolicies, decayPolicyNames } from '../decay/decay.js';
import { retention } from '../decay/ebbinghaus-decay.js';
import { importanceDecay } from '../decay/importance-steps-decay.js';
import { currentSalience, SALIENCE_MAX } from '../decay/salience-decay.js';
import type { MnemePolicy } from '../policy.js';

const start = '2024-06-01T00:00:00.000Z';
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});
afterAll(closeEngineStores);
let store: EngineStore = 'sqlite';

async function open(decay: MnemePolicy['decay']) {
  const engine = await openMaintenanceEngine({ store, start, policy: { decay } });
  engines.push(engine);
  return engine;
}

async function decayAt(engine: MaintenanceEngine, days: number) {
  const report = await engine.mneme.maintain({ tasks: ['decay'], now: daysAfter(start, days) });
  if (!report.decay) throw new Error('no decay report');
  return report.decay;
}

async function activeIds(engine: MaintenanceEngine): Promise<number[]> {
  return (await engine.mneme.list({ limit: 500 })).memories.map((memory) => memory.id).sort((a, b) => a - b);
}

const fresh = { strength: 1, salience: 1, importance: 0.6, pinned: false, lastAccessedAt: null, createdAt: start };

describe.each(serverEngineStores)('the decay policies, on %s', (name) => {
  beforeAll(async () => {
    store = name;
    await prepareEngineStore(name);
  }, 120_000);

  describe('ebbinghaus (the default)', () => {
    it('halves retention at 14 days and archives a memory once it falls below 0.10, not before', async () => {
      expect(retention(fresh, daysAfter(start, 14))).toBeCloseTo(0.5, 12);
      const engine = await open('ebbinghaus');
      const memory = await engine.mneme.remember({ content: 'The build server is called kestrel' });

      // Not due before its retention crosses 0.10 (ADR 9, session 8): a run reads nothing.
      expect(await decayAt(engine, 14)).toEqual({
        policy: 'ebbinghaus',
        checked: 0,
        decayed: 0,
        archived: 0,
        skipped: null,
      });
      expect(retention(fresh, daysAfter(start, 46.5))).toBeGreaterThan(0.1);
      expect((await decayAt(engine, 46.5)).archived).toBe(0);
      expect(retention(fresh, daysAfter(start, 46.51))).toBeLessThan(0.1);
      expect(await decayAt(engine, 46.51)).toMatchObject({ checked: 1, decayed: 1, archived: 1 });

      expect(await activeIds(engine)).toEqual([]);
      const history = await engine.mneme.history(memory.id);
      expect(history.at(-1)).toMatchObject({
        action: 'archive',
        actor: 'maintenance',
        reason: 'decay: Ebbinghaus retention fell below 0.10',
        createdAt: new Date(daysAfter(start, 46.51)).toISOString(),
      });
    });

    it('restarts the clock at a retrieval', async () => {
      const engine = await open('ebbinghaus');
      const memory = await engine.mneme.remember({ content: 'Oz reads the release notes' });
      await engine.storage.memories.touch([{ id: memory.id, strength: 1 }], daysAfter(start, 40));
      expect((await decayAt(engine, 60)).archived).toBe(0);
      expect((await decayAt(engine, 40 + 46.51)).archived).toBe(1);
    });
  });

  describe('salience', () => {
    it('multiplies salience by 0.98 a day after the first 24 hours and removes it below 0.1', async () => {
      expect(currentSalience(fresh, daysAfter(start, 1 + 113))).toBeCloseTo(0.98 ** 113, 12);
      const engine = await open('salience');
      const memory = await engine.mneme.remember({ content: 'Oz always says good morning' });

      expect((await decayAt(engine, 1)).decayed).toBe(0);
      expect((await decayAt(engine, 1 + 113)).archived).toBe(0);
      expect((await decayAt(engine, 1 + 114)).archived).toBe(1);
      expect((await engine.mneme.history(memory.id)).at(-1)).toMatchObject({
        action: 'archive',
        reason: 'decay: salience fell below 0.1',
      });
    });

    it('starts from at most 5, however often a memory was hit, so a capped memory is removed after 195 days', async () => {
      const engine = await open('salience');
      const memory = await engine.mneme.remember({ content: 'Oz prefers tea' });
      await engine.storage.memories.touch([{ id: memory.id, salience: SALIENCE_MAX }], Date.parse(start));
      const capped = { ...fresh, salience: SALIENCE_MAX, lastAccessedAt: start };
      expect(currentSalience(capped, daysAfter(start, 1 + 193))).toBeCloseTo(5 * 0.98 ** 193, 12);

      expect((await decayAt(engine, 1 + 193)).archived).toBe(0);
      expect((await decayAt(engine, 1 + 194)).archived).toBe(1);
    });
  });

  describe('importance steps', () => {
    it('goes down one step per 7 days unused, and soft-deletes after 7 days at 0', async () => {
      const engine = await open('importance-steps');
      const memory = await engine.mneme.remember({ content: 'The staging database is on port 5433', importance: 0.6 });
      const importanceAt = async (days: number) => {
        await decayAt(engine, days);
        return (await engine.mneme.get(memory.id)).importance;
      };

      expect(await importanceAt(6.9)).toBe(0.6);
      expect(await importanceAt(7)).toBe(0.4);
      expect(await importanceAt(14)).toBe(0.2);
      expect(await importanceAt(21)).toBe(0);
      expect((await decayAt(engine, 27.9)).archived).toBe(0);
      expect((await decayAt(engine, 28)).archived).toBe(1);

      const history = await engine.mneme.history(memory.id);
      expect(history.map((version) => [version.action, version.changes.importance?.to ?? null])).toEqual([
        ['create', null],
        ['update', 0.4],
        ['update', 0.2],
        ['update', 0],
        ['archive', null],
      ]);
      expect(history[1]?.reason).toBe('decay: importance steps, one step down per 7 days without a retrieval');
      expect(history.at(-1)?.reason).toBe('decay: importance 0 for 7 days without a retrieval');
    });

    it('counts the 7 days from the last retrieval, which also raised the step', async () => {
      const engine = await open('importance-steps');
      const memory = await engine.mneme.remember({ content: 'Oz deploys on Fridays', importance: 0.6 });
      await decayAt(engine, 7);
      await engine.storage.memories.touch([{ id: memory.id, importance: 0.6 }], daysAfter(start, 10));
      expect((await decayAt(engine, 16.9)).decayed).toBe(0);
      expect((await decayAt(engine, 17)).decayed).toBe(1);
      expect((await engine.mneme.get(memory.id)).importance).toBe(0.4);
    });

    it('soft-deletes a memory stored at importance 0 after 7 unused days', async () => {
      const engine = await open('importance-steps');
      await engine.mneme.remember({ content: 'a throwaway remark', importance: 0 });
      expect(importanceDecay({ ...fresh, importance: 0 }, null, daysAfter(start, 7)).isExpired).toBe(true);
      expect((await decayAt(engine, 6.9)).archived).toBe(0);
      expect((await decayAt(engine, 7)).archived).toBe(1);
    });
  });

  describe('recency-only', () => {
    it('archives nothing and stores nothing, even a year after the last retrieval', async () => {
      const engine = await open('recency-only');
      const memory = await engine.mneme.remember({ content: 'the API answers on port 8443', importance: 0 });
      await engine.mneme.recall({ query: 'port' });
      for (const days of [7, 30, 365]) {
        expect(await decayAt(engine, days)).toEqual({
          policy: 'recency-only',
          checked: 0,
          decayed: 0,
          archived: 0,
          skipped: null,
        });
      }
      engine.clock.set(daysAfter(start, 365));
      expect(await engine.mneme.get(memory.id)).toMatchObject({
        archivedAt: null,
        strength: 1,
        salience: 1,
        importance: 0,
        accessCount: 1,
      });
      expect((await engine.mneme.history(memory.id)).map((version) => version.action)).toEqual(['create']);
      expect((await engine.mneme.stats()).expiring).toBe(0);
    });
  });

  it('never decays a pinned memory, under any policy', async () => {
    for (const decay of decayPolicyNames) {
      const engine = await open(decay);
      const pinned = await engine.mneme.remember({ content: 'Oz is allergic to peanuts', pinned: true, importance: 1 });
      const note = await engine.mneme.remember({ content: 'an unpinned note', importance: 0.2 });
      const archives = decayPolicies[decay].archiveReason !== undefined;
      const report = await decayAt(engine, 3650);
      // Recency-only's step never does anything: no memory is ever due under it.
      expect(report, decay).toMatchObject({ checked: archives ? 1 : 0, archived: archives ? 1 : 0 });
      expect(await activeIds(engine), decay).toEqual(archives ? [pinned.id] : [pinned.id, note.id]);
      expect((await engine.mneme.get(pinned.id)).importance).toBe(1);
    }
  });

  it('catches up a missed week exactly: the same result as running every day', { timeout: 120_000 }, async () => {
    for (const decay of decayPolicyNames) {
      const daily = await open(decay);
      const missed = await open(decay);
      for (const engine of [daily, missed]) {
        for (const [content, importance, day] of [
          ['Oz likes hiking', 0.6, 0],
          ['Mia uses vim', 1, 3],
          ['the office plant needs water', 0.2, 5],
          ['the printer is broken', 0, 9],
        ] as const) {
          engine.clock.set(daysAfter(start, day));
          await engine.mneme.remember({ content, importance });
        }
      }
      const outcome = async (engine: MaintenanceEngine) =>
        (await engine.mneme.list({ archived: 'include', limit: 50 })).memories.map((memory) => [
          memory.id,
          memory.importance,
          memory.archivedAt === null,
        ]);

      for (let day = 10; day <= 200; day++) {
        await decayAt(daily, day);
        // The other engine misses every run but one a week.
        if (day % 7 === 0) await decayAt(missed, day);
        if (day % 7 === 0) expect(await outcome(missed), `${decay} day ${day}`).toEqual(await outcome(daily));
      }
    }
  });
});
