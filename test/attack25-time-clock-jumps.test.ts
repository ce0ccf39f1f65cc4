import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { MaintenanceTask } from '../src/core/maintenance/maintenance-task.js';
import { createMaintenanceScheduler, type MaintenanceScheduler } from '../src/workers/maintenance-scheduler.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

let engine: MaintenanceEngine | null = null;
let scheduler: MaintenanceScheduler | null = null;

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2025-06-01T12:00:00.000Z') });
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await engine?.mneme.close();
  engine = null;
  vi.useRealTimers();
});

/**
 * Attack 25 (time): the system clock of a running `mneme serve` is set back (NTP correcting a clock that ran a year
 * fast). The scheduler compared the time since each task's last run with its interval; set back, that time was
 * negative until the clock caught up with the last run, so no task ran for a year (and the audience checks of a check
 * with no task due took their place).
 */
describe('the maintenance scheduler when the system clock is set back', () => {
  it('runs its tasks on their intervals after the clock went back a year, not a year later', async () => {
    engine = await openMaintenanceEngine();
    const ran: MaintenanceTask[] = [];
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme, onReport: (task) => ran.push(task) });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(ran).toEqual(['decay', 'episodes', 'consolidate', 'link', 'dream']);

    ran.length = 0;
    vi.setSystemTime(Date.now() - 365 * DAY);
    await vi.advanceTimersByTimeAsync(MINUTE);
    expect(ran).toEqual(['decay', 'episodes', 'consolidate', 'link', 'dream']);

    // From the new time on, each on its own interval again.
    ran.length = 0;
    await vi.advanceTimersByTimeAsync(30 * MINUTE);
    expect(ran).toEqual(['episodes', 'consolidate', 'link']);
    ran.length = 0;
    await vi.advanceTimersByTimeAsync(DAY);
    expect(ran.filter((task) => task === 'decay')).toEqual(['decay']);
  });

  it('still runs nothing twice within an interval when the clock goes forward', async () => {
    engine = await openMaintenanceEngine();
    const ran: MaintenanceTask[] = [];
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme, onReport: (task) => ran.push(task) });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    ran.length = 0;
    vi.setSystemTime(Date.now() + DAY);
    await vi.advanceTimersByTimeAsync(MINUTE);
    expect(ran).toEqual(['decay', 'episodes', 'consolidate', 'link', 'dream']);
    ran.length = 0;
    await vi.advanceTimersByTimeAsync(MINUTE);
    expect(ran).toEqual([]);
  });
});
