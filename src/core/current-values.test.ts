import { afterEach, describe, expect, it } from 'vitest';
import { daysAfter, type MaintenanceEngine, openMaintenanceEngine } from '../../test/maintenance-engine.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import type { MnemePolicy } from './policy.js';

const start = '2024-06-01T00:00:00.000Z';
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(decay: MnemePolicy['decay']) {
  const engine = await openMaintenanceEngine({ start, policy: { decay }, embedder: createFakeEmbeddingModel() });
  engines.push(engine);
  return engine;
}

describe('values as of now', () => {
  it('shows strength 0.5 in get, list and search hits 14 days after creation under Ebbinghaus', async () => {
    const engine = await open('ebbinghaus');
    const memory = await engine.mneme.remember({ content: 'kestrel is the staging server', importance: 0.6 });
    engine.clock.set(daysAfter(start, 14));

    expect(await engine.mneme.get(memory.id)).toMatchObject({ strength: 0.5, salience: 1, importance: 0.6 });
    expect((await engine.mneme.list()).memories[0]).toMatchObject({ strength: 0.5 });
    const inspected = await engine.mneme.recall({ query: 'kestrel', inspect: true });
    expect(inspected.hits[0]?.memory).toMatchObject({ strength: 0.5, accessCount: 0 });
    const context = await engine.mneme.context({ query: 'kestrel', inspect: true });
    expect(context.hits[0]?.memory).toMatchObject({ strength: 0.5, accessCount: 0 });

    const searched = await engine.mneme.recall({ query: 'kestrel' });
    expect(searched.hits[0]?.breakdown.recency).toBeCloseTo(0.5, 10);
    expect(searched.hits[0]?.memory).toMatchObject({ strength: 1, accessCount: 1 });
    engine.clock.set(daysAfter(start, 28));
    expect(await engine.mneme.get(memory.id)).toMatchObject({ strength: 0.5 });
  });

  it('shows salience faded x0.98 a day after the first 24 hours under the salience policy, and reinforces the faded value', async () => {
    const engine = await open('salience');
    const memory = await engine.mneme.remember({ content: 'kestrel is the staging server' });
    engine.clock.set(daysAfter(start, 1));
    expect((await engine.mneme.get(memory.id)).salience).toBe(1);
    engine.clock.set(daysAfter(start, 15));
    expect((await engine.mneme.get(memory.id)).salience).toBeCloseTo(0.98 ** 14, 10);
    expect((await engine.mneme.list()).memories[0]?.salience).toBeCloseTo(0.98 ** 14, 10);

    const searched = await engine.mneme.recall({ query: 'kestrel' });
    expect(searched.hits[0]?.memory.salience).toBeCloseTo(0.98 ** 14 + 0.1, 10);
    expect((await engine.mneme.get(memory.id)).salience).toBeCloseTo(0.98 ** 14 + 0.1, 10);
  });

  it('shows importance one step down per 7 unused days under importance steps, before and after maintenance stores it', async () => {
    const engine = await open('importance-steps');
    const memory = await engine.mneme.remember({ content: 'kestrel is the staging server', importance: 0.6 });
    const importanceAt = async (days: number) => {
      engine.clock.set(daysAfter(start, days));
      return (await engine.mneme.get(memory.id)).importance;
    };
    expect(await importanceAt(6.9)).toBe(0.6);
    expect(await importanceAt(7)).toBe(0.4);
    const context = await engine.mneme.context({ query: 'kestrel staging', inspect: true });
    expect(context.hits[0]?.memory.importance).toBe(0.4);
    expect(context.text).toContain('importance: 2');
    expect(await importanceAt(14)).toBe(0.2);
    await engine.mneme.maintain({ tasks: ['decay'], now: daysAfter(start, 14.5) });
    expect(await importanceAt(14.5)).toBe(0.2);
    expect(await importanceAt(20.9)).toBe(0.2);
    expect(await importanceAt(21)).toBe(0);
  });

  it('keeps scoring and reinforcement on the stored values: a retrieval raises the stored step', async () => {
    const engine = await open('importance-steps');
    const memory = await engine.mneme.remember({ content: 'kestrel is the staging server', importance: 0.6 });
    engine.clock.set(daysAfter(start, 14));
    const inspected = await engine.mneme.recall({ query: 'kestrel', inspect: true });
    expect(inspected.hits[0]?.memory.importance).toBe(0.2);
    expect(inspected.hits[0]?.breakdown).toMatchObject({ importance: 0.6 });
    expect(inspected.hits[0]?.breakdown.recency).toBeCloseTo(0.5, 10);

    const searched = await engine.mneme.recall({ query: 'kestrel' });
    expect(searched.hits[0]?.breakdown).toEqual(inspected.hits[0]?.breakdown);
    expect(searched.hits[0]?.memory.importance).toBe(0.8);
    expect(await engine.mneme.get(memory.id)).toMatchObject({ importance: 0.8, accessCount: 1 });
  });

  it('shows an edited importance as given, its decay counted from the edit', async () => {
    const engine = await open('importance-steps');
    const memory = await engine.mneme.remember({ content: 'kestrel is the staging server', importance: 0.6 });
    engine.clock.set(daysAfter(start, 20));
    expect((await engine.mneme.get(memory.id)).importance).toBe(0.2);
    expect((await engine.mneme.update({ id: memory.id, importance: 0.6 })).importance).toBe(0.6);
    engine.clock.set(daysAfter(start, 26.9));
    expect((await engine.mneme.get(memory.id)).importance).toBe(0.6);
    engine.clock.set(daysAfter(start, 27));
    expect((await engine.mneme.get(memory.id)).importance).toBe(0.4);
    expect((await engine.mneme.forget(memory.id)).importance).toBe(0.4);
    expect((await engine.mneme.restore(memory.id)).importance).toBe(0.4);
  });

  it('shows a pinned memory with its stored values under every policy', async () => {
    for (const decay of ['ebbinghaus', 'salience', 'importance-steps', 'recency-only'] as const) {
      const engine = await open(decay);
      const memory = await engine.mneme.remember({ content: 'Oz is allergic to peanuts', pinned: true, importance: 1 });
      engine.clock.set(daysAfter(start, 365));
      expect(await engine.mneme.get(memory.id), decay).toMatchObject({ strength: 1, salience: 1, importance: 1 });
    }
  });
});
