import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiKeys } from '../src/core/api-keys.js';
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

/**
 * Attack 25 (time): messages stored while the server's clock ran a year fast carry that time. The episodes task kept
 * the window that starts with them open until its hour was over by the clock, a year on; every message after them,
 * said at the right time, fell into that window, so the channel had no episode for a year.
 */
describe('the episodes of a channel whose messages were stored while the clock ran a year fast', () => {
  it('are written once the clock is right again, not a year later', async () => {
    vi.useRealTimers();
    engine = await openMaintenanceEngine({ start: '2026-06-01T10:00:00.000Z' });
    const { mneme, clock } = engine;
    const say = async (count: number, from: number) => {
      for (let index = 0; index < count; index++) {
        await mneme.ingest({
          channelId: 'ops',
          sender: index % 2 ? 'oz' : 'mia',
          content: `line ${from + index} of the deploy talk`,
        });
        clock.advance(MINUTE);
      }
    };
    clock.advance(365 * DAY);
    await say(6, 0);
    // NTP sets the clock right.
    clock.advance(-365 * DAY);
    await say(6, 6);
    clock.advance(2 * 60 * MINUTE);
    await say(6, 12);
    clock.advance(2 * 60 * MINUTE);
    await mneme.maintain({ tasks: ['episodes'] });
    const { memories } = await mneme.list({ category: 'episode', limit: 10 });
    expect(memories.length).toBeGreaterThan(0);
    // Every message but the ones of the last window is summarised once, none left behind for a year.
    const cited = memories.flatMap((memory) => memory.sourceMessageIds).sort((a, b) => a - b);
    expect(new Set(cited).size).toBe(cited.length);
    expect(cited).toEqual(Array.from({ length: 18 }, (_, index) => index + 1));
  });
});

describe('the episodes of a channel with a message dated in the year 9999', () => {
  it('go on for the messages after it', async () => {
    vi.useRealTimers();
    engine = await openMaintenanceEngine({ start: '2026-06-01T10:00:00.000Z' });
    const { mneme, clock } = engine;
    const at = (minute: number) => Date.parse('2026-06-01T10:00:00.000Z') + minute * MINUTE;
    const lines = [0, 1, 2, 3, 4, 5, 120, 121, 122, 123, 124, 125, 240];
    for (const [index, minute] of lines.entries()) {
      const createdAt = index === 3 ? '9999-12-31T23:00:00Z' : at(minute);
      await mneme.ingest({
        channelId: 'ops',
        sender: index % 2 ? 'oz' : 'mia',
        content: `line ${index} of the deploy talk`,
        createdAt,
      });
    }
    clock.set(at(300));
    await mneme.maintain({ tasks: ['episodes'] });
    const { memories } = await mneme.list({ category: 'episode', limit: 10 });
    const cited = memories.flatMap((memory) => memory.sourceMessageIds).sort((a, b) => a - b);
    expect(new Set(cited).size).toBe(cited.length);
    // The window of minute 120 was summarised; before, it waited with every later message for the year 9999.
    expect(cited).toEqual(expect.arrayContaining([7, 8, 9, 10, 11, 12]));
  });
});

/**
 * Attack 25 (time): an API key's last use is written at most once a minute. Used while the clock ran a year fast, it
 * stayed a year in the future after the clock was set right, however often the key was used, until the clock caught
 * up: `mneme keys` showed a use that has not happened yet.
 */
describe('the last use of an API key when the clock is set back', () => {
  it('is the time of its latest use, not a time a year ahead', async () => {
    vi.useRealTimers();
    engine = await openMaintenanceEngine({ start: '2026-06-01T10:00:00.000Z' });
    const { clock } = engine;
    const keys = createApiKeys(engine.storage.apiKeys, clock);
    const created = await keys.create({ label: 'deploy' });
    clock.advance(365 * DAY);
    expect(await keys.authenticate(created.key)).not.toBeNull();
    clock.advance(-365 * DAY + 10 * MINUTE);
    expect(await keys.authenticate(created.key)).not.toBeNull();
    const [listed] = await keys.list();
    expect(listed?.lastUsedAt).toBe('2026-06-01T10:10:00.000Z');
  });
});
