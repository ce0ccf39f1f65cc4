import { afterEach, describe, expect, it } from 'vitest';
import { daysAfter, type MaintenanceEngine, openMaintenanceEngine } from '../../test/maintenance-engine.js';
import type { MnemePolicy } from './policy.js';

const start = '2024-06-01T00:00:00.000Z';
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

/**
 * Under `decay`: a memory made at day 0 that crosses the line within 7 days of `checkDay`, one made
 * `laterBy` days after it that does not, and a pinned one made with the first.
 */
async function expiringAt(decay: MnemePolicy['decay'], checkDay: number, laterBy: number, importance = 0.5) {
  const engine = await openMaintenanceEngine({ start, policy: { decay } });
  engines.push(engine);
  const soon = await engine.mneme.remember({ content: 'the old wiki moved', importance });
  await engine.mneme.remember({ content: 'Oz is allergic to peanuts', importance, pinned: true });
  engine.clock.set(daysAfter(start, laterBy));
  const later = await engine.mneme.remember({ content: 'the new wiki is on confluence', importance });
  engine.clock.set(daysAfter(start, checkDay));
  return { engine, soon, later, expiring: (await engine.mneme.stats()).expiring };
}

describe('stats: expiring', () => {
  it('counts under Ebbinghaus the memories whose retention falls below 0.10 within 7 days, never a pinned one', async () => {
    // Retention falls below 0.10 46.51 days after the last retrieval.
    const { engine, soon, later, expiring } = await expiringAt('ebbinghaus', 40, 10);
    expect(expiring).toBe(1);
    engine.clock.set(daysAfter(start, 47));
    expect((await engine.mneme.get(soon.id)).strength).toBeLessThan(0.1);
    expect((await engine.mneme.get(later.id)).strength).toBeGreaterThan(0.1);
    engine.clock.set(daysAfter(start, 39));
    expect((await engine.mneme.stats()).expiring).toBe(0);
  });

  it('counts under salience the memories whose salience falls below 0.1 within 7 days, never a pinned one', async () => {
    // Salience 1 falls below 0.1 115 days after creation.
    const { engine, soon, later, expiring } = await expiringAt('salience', 110, 10);
    expect(expiring).toBe(1);
    engine.clock.set(daysAfter(start, 117));
    expect((await engine.mneme.get(soon.id)).salience).toBeLessThan(0.1);
    expect((await engine.mneme.get(later.id)).salience).toBeGreaterThan(0.1);
  });

  it('counts under importance steps the memories that will have spent 7 days at 0 within 7 days, never a pinned one', async () => {
    // Importance 0.2 is step 1: 0 after 7 unused days, soft-deleted 7 days later.
    const { engine, expiring } = await expiringAt('importance-steps', 8, 5, 0.2);
    expect(expiring).toBe(1);
    engine.clock.set(daysAfter(start, 6.9));
    expect((await engine.mneme.stats()).expiring).toBe(0);
    const report = await engine.mneme.maintain({ tasks: ['decay'], now: daysAfter(start, 15) });
    expect(report.decay).toMatchObject({ archived: 1 });
  });

  it('counts what is already past the line but not yet archived', async () => {
    const { expiring } = await expiringAt('ebbinghaus', 100, 1);
    expect(expiring).toBe(2);
  });

  it('counts nothing under recency-only, which never archives, even a year on', async () => {
    const { engine, soon, expiring } = await expiringAt('recency-only', 365, 10, 0);
    expect(expiring).toBe(0);
    expect(await engine.mneme.get(soon.id)).toMatchObject({ strength: 1, salience: 1, importance: 0 });
  });
});
