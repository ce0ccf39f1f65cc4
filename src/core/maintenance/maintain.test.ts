import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import { createMneme } from '../../config/create-mneme.js';
import { createFixedClock } from '../../testing.js';
import { ErrorCode } from '../errors.js';
import type { EpisodeSummariser } from '../ports/episode-summariser.js';

const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe('maintain', () => {
  it('runs every task in cycle order by default, at the clock time, with a report for each', async () => {
    const clock = createFixedClock('2024-06-15T12:00:00.000Z');
    const mneme = await createMneme({ path: ':memory:', clock });
    try {
      await mneme.remember({ content: 'The deploy key lives in the vault' });
      const report = await mneme.maintain();
      expect(Object.keys(report)).toEqual(['now', 'decay', 'episodes', 'consolidate', 'link', 'dream']);
      expect(report).toEqual({
        now: '2024-06-15T12:00:00.000Z',
        decay: { policy: 'ebbinghaus', checked: 0, decayed: 0, archived: 0, skipped: null },
        episodes: { channels: 0, messages: 0, episodes: 0, skipped: null },
        consolidate: { checked: 1, clusters: 0, merged: 0, skipped: null },
        link: {
          checked: 0,
          created: 0,
          removed: 0,
          skipped: 'no embedding model: only links to archived memories were removed',
        },
        dream: { owners: 0, insights: 0, skipped: 'no chat model configured' },
      });
    } finally {
      await mneme.close();
    }
  });

  it('runs only the tasks asked for, as of the time asked for', async () => {
    const engine = await openMaintenanceEngine({ start: '2024-06-01T00:00:00.000Z' });
    engines.push(engine);
    await engine.mneme.remember({ content: 'an old note' });
    const report = await engine.mneme.maintain({ tasks: 'decay', now: '2024-09-01T00:00:00Z' });
    expect(report).toEqual({
      now: '2024-09-01T00:00:00.000Z',
      decay: { policy: 'ebbinghaus', checked: 1, decayed: 1, archived: 1, skipped: null },
    });
    expect(Object.keys(await engine.mneme.maintain({ tasks: ['dream', 'decay'] }))).toEqual(['now', 'decay', 'dream']);
  });

  it('refuses an unknown task or an unreadable time, doing nothing', async () => {
    const engine = await openMaintenanceEngine();
    engines.push(engine);
    await expect(engine.mneme.maintain({ tasks: ['sleep' as never] })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringContaining('tasks must be all, none, one of decay, episodes, consolidate, link, dream'),
    });
    await expect(engine.mneme.maintain({ now: 'next tuesday' })).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringContaining('now must be an ISO 8601 time'),
    });
    await expect(engine.mneme.maintain({ tasks: [] })).rejects.toMatchObject({ code: ErrorCode.InvalidInput });
  });

  it('does not start a task that an earlier call is still running', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow: EpisodeSummariser = {
      id: 'slow',
      async summarise() {
        await gate;
        return { summary: 'Oz and Mia talked.' };
      },
    };
    const engine = await openMaintenanceEngine({ start: '2024-06-01T12:00:00.000Z', summariser: slow });
    engines.push(engine);
    await engine.storage.messages.append(
      Array.from({ length: 6 }, (_, index) => ({
        channelId: 'ops',
        senderId: index % 2 ? 'oz' : 'mia',
        role: 'user' as const,
        content: `message ${index}`,
        topicId: null,
        createdAt: Date.parse('2024-06-01T10:00:00.000Z') + index * 60_000,
      })),
    );

    const first = engine.mneme.maintain({ tasks: ['episodes'] });
    const second = await engine.mneme.maintain({ tasks: ['episodes', 'decay'] });
    expect(second.episodes).toEqual({ channels: 0, messages: 0, episodes: 0, skipped: 'already running' });
    expect(second.decay?.skipped).toBeNull();
    release();
    expect((await first).episodes).toMatchObject({ episodes: 1, skipped: null });
    expect((await engine.mneme.maintain({ tasks: ['episodes'] })).episodes?.skipped).toBeNull();
  });
});
