import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../test/maintenance-engine.js';
import { AUDIENCE_TASK } from '../core/derived-audience.js';
import type { MaintenanceReport } from '../core/maintenance/maintain.js';
import { type MaintenanceTask, maintenanceTasks } from '../core/maintenance/maintenance-task.js';
import { globalMemory } from '../storage/global-memory.fixture.js';
import { createMaintenanceScheduler, type MaintenanceScheduler } from './maintenance-scheduler.js';

const MINUTE = 60_000;
let engine: MaintenanceEngine;
let scheduler: MaintenanceScheduler | null = null;

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2024-06-01T12:00:00.000Z') });
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await engine?.mneme.close();
  vi.useRealTimers();
});

/** An engine whose episode summaries wait until `release()` is called, with one channel ready for an episode. */
async function openWithSlowSummaries() {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let summaries = 0;
  engine = await openMaintenanceEngine({
    start: '2024-06-01T12:00:00.000Z',
    summariser: {
      id: 'slow',
      async summarise() {
        summaries++;
        await gate;
        return { summary: 'Oz and Mia fixed the deploy.' };
      },
    },
  });
  await engine.storage.messages.append(
    Array.from({ length: 6 }, (_, index) => ({
      channelId: 'ops',
      senderId: index % 2 ? 'oz' : 'mia',
      role: 'user' as const,
      content: `message ${index}`,
      topicId: null,
      createdAt: Date.parse('2024-06-01T10:00:00.000Z') + index * MINUTE,
    })),
  );
  return { release, summaries: () => summaries };
}

function recordReports() {
  const ran: MaintenanceTask[] = [];
  return {
    ran,
    onReport: (task: MaintenanceTask, _report: MaintenanceReport) => {
      ran.push(task);
    },
  };
}

describe('the maintenance scheduler', () => {
  it('runs every task once at start-up, then each on its own interval', async () => {
    engine = await openMaintenanceEngine();
    const { ran, onReport } = recordReports();
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme, onReport });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(ran).toEqual(['decay', 'episodes', 'consolidate', 'link', 'dream']);

    ran.length = 0;
    await vi.advanceTimersByTimeAsync(30 * MINUTE);
    expect(ran).toEqual(['episodes', 'consolidate', 'link']);

    ran.length = 0;
    await vi.advanceTimersByTimeAsync(24 * 60 * MINUTE);
    expect(ran.filter((task) => task === 'decay')).toEqual(['decay']);
    expect(ran.filter((task) => task === 'episodes')).toHaveLength(48);
  });

  it('never runs two cycles of a task at once, however long one takes', async () => {
    const { release, summaries } = await openWithSlowSummaries();
    const { ran, onReport } = recordReports();
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme, onReport });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(ran).toEqual(['decay']);
    expect(summaries()).toBe(1);

    // Hours pass, far beyond the 30-minute interval: the cycle in progress is not started again.
    await vi.advanceTimersByTimeAsync(5 * 60 * MINUTE);
    expect(summaries()).toBe(1);
    expect(ran).toEqual(['decay']);
    // A direct call meanwhile is refused for that task too.
    expect((await engine.mneme.maintain({ tasks: ['episodes'] })).episodes?.skipped).toBe('already running');

    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(ran).toEqual(['decay', 'episodes', 'consolidate', 'link', 'dream']);
    expect((await engine.mneme.list({ category: 'episode' })).total).toBe(1);
  });

  it('stops cleanly: waits for the task in progress and starts nothing afterwards', async () => {
    const { release } = await openWithSlowSummaries();
    const { ran, onReport } = recordReports();
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme, onReport });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);

    let isStopped = false;
    const stopping = scheduler.stop().then(() => {
      isStopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(isStopped).toBe(false);
    release();
    await stopping;
    expect(scheduler.isRunning).toBe(false);
    expect(ran).toEqual(['decay', 'episodes']);

    await vi.advanceTimersByTimeAsync(48 * 60 * MINUTE);
    expect(ran).toEqual(['decay', 'episodes']);
  });

  it('reports a failing task and keeps going', async () => {
    engine = await openMaintenanceEngine();
    await engine.mneme.close();
    const failures: string[] = [];
    scheduler = createMaintenanceScheduler({
      mneme: engine.mneme,
      onError: (task, error) => failures.push(`${task}: ${(error as Error).message}`),
    });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);
    const failed = () => failures.map((failure) => failure.split(':')[0]);
    expect(failed()).toEqual([...maintenanceTasks]);
    expect(failures[0]).toMatch(/database connection is not open/);
    await vi.advanceTimersByTimeAsync(30 * 60_000);
    // The three 30-minute tasks again, and the audience check of the minutes between, once until it works.
    expect(failed()).toEqual([...maintenanceTasks, 'audience', 'episodes', 'consolidate', 'link']);
    expect(scheduler.isRunning).toBe(true);
  });

  it('checks an audience change another process left when it died within two minutes, with no task due', async () => {
    engine = await openMaintenanceEngine({ start: '2024-06-01T12:00:00.000Z' });
    // A global fact of Bob's message in the public lobby.
    const { storage, clock } = engine;
    await storage.memberships.putChannel({ id: 'lobby', visibility: 'public' }, clock.now());
    const [said] = await storage.messages.append([
      {
        channelId: 'lobby',
        senderId: 'bob',
        role: 'user',
        content: 'The vault code is 4471',
        topicId: null,
        createdAt: clock.now(),
      },
    ]);
    const [fact] = await storage.memories.insert(
      [globalMemory('The vault code is 4471', { source: 'extraction', sourceMessageIds: [said?.id ?? 0] })],
      { at: clock.now(), actor: 'test' },
    );
    if (!fact) throw new Error('no fact');
    scheduler = createMaintenanceScheduler({ mneme: engine.mneme });
    scheduler.start();
    await vi.advanceTimersByTimeAsync(0);

    // Another process on the file made the lobby private and died before its moves: its mark, and the write.
    const at = clock.now();
    await storage.maintenanceState.set(`audience:${'0'.repeat(8)}`, AUDIENCE_TASK, {
      watermark: at,
      details: { change: { channelId: 'lobby' } },
    });
    await storage.memberships.putChannel({ id: 'lobby', visibility: 'private' }, at);
    const scopeOfFact = async () => (await storage.memories.get([fact.id]))[0]?.scope;
    expect(await scopeOfFact()).toBe('global');

    // Two checks on, the mark is older than a minute (the process that wrote it is not coming back): checked.
    for (let minute = 0; minute < 2; minute++) {
      clock.advance(MINUTE);
      await vi.advanceTimersByTimeAsync(MINUTE);
    }
    expect(await scopeOfFact()).toBe('room');
    expect(await storage.maintenanceState.list(AUDIENCE_TASK)).toEqual([]);
  });
});
