import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import type { MessageRole } from '../../storage/message-store.js';
import type { EpisodeSummariser } from '../ports/episode-summariser.js';

const start = '2024-06-01T10:00:00.000Z';
const minutes = (count: number) => Date.parse(start) + count * 60 * 1000;
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(summariser?: EpisodeSummariser) {
  const engine = await openMaintenanceEngine({ start, ...(summariser ? { summariser } : {}) });
  await engine.storage.directory.putUser({ id: 'u-oz', displayName: 'Oz' }, minutes(0));
  await engine.storage.directory.putUser({ id: 'u-mia', displayName: 'Mia' }, minutes(0));
  engines.push(engine);
  return engine;
}

/** Appends messages to a channel: [minute, sender, content, role?]. Returns their ids. */
async function say(
  engine: MaintenanceEngine,
  channelId: string,
  lines: ReadonlyArray<readonly [number, string, string, MessageRole?]>,
): Promise<number[]> {
  const stored = await engine.storage.messages.append(
    lines.map(([minute, senderId, content, role]) => ({
      channelId,
      senderId,
      role: role ?? 'user',
      content,
      topicId: null,
      createdAt: minutes(minute),
    })),
  );
  return stored.map((message) => message.id);
}

async function episodesAt(engine: MaintenanceEngine, minute: number) {
  const report = await engine.mneme.maintain({ tasks: ['episodes'], now: minutes(minute) });
  if (!report.episodes) throw new Error('no episodes report');
  return report.episodes;
}

async function episodes(engine: MaintenanceEngine) {
  return (await engine.mneme.list({ category: 'episode', limit: 100 })).memories.reverse();
}

describe('the episodes task', () => {
  it('turns each closed 60-minute window of 4 or more messages into one attributed episode of the room, dated by its last message', async () => {
    const engine = await open();
    const first = await say(engine, 'ops', [
      [0, 'u-oz', 'Morning! The nightly deploy failed again.'],
      [5, 'u-mia', 'The staging database ran out of disk space.'],
      [10, 'mneme', 'Shall I open a ticket for the disk?', 'assistant'],
      [20, 'u-oz', 'I will move the backups to the kestrel volume.'],
      [40, 'u-mia', 'Thanks Oz.'],
    ]);
    const sparse = await say(engine, 'ops', [
      [70, 'u-oz', 'lunch?'],
      [80, 'u-mia', 'sure'],
    ]);
    await say(engine, 'ops', [
      [150, 'u-oz', 'The backups moved to kestrel.'],
      [155, 'u-mia', 'Deploy is green again.'],
      [160, 'u-oz', 'Closing the ticket.'],
      [170, 'u-mia', 'Great.'],
    ]);

    expect(await episodesAt(engine, 180)).toEqual({ channels: 1, messages: 7, episodes: 1, skipped: null });
    const [episode] = await episodes(engine);
    expect(episode).toMatchObject({
      category: 'episode',
      sector: 'episodic',
      scope: 'room',
      channelId: 'ops',
      source: 'episode',
      sourceMessageIds: first,
      content: 'Mia: The staging database ran out of disk space. Oz: I will move the backups to the kestrel volume.',
      validFrom: new Date(minutes(40)).toISOString(),
      createdAt: new Date(minutes(180)).toISOString(),
    });
    expect(await engine.storage.maintenanceState.get('ops', 'episodes')).toMatchObject({ watermark: sparse.at(-1) });
    expect(await engine.mneme.list({ viewer: { channelId: 'ops' }, category: 'episode' })).toMatchObject({ total: 1 });
    expect(await engine.mneme.list({ viewer: { channelId: 'elsewhere' }, category: 'episode' })).toMatchObject({
      total: 0,
    });
  });

  it('waits for 6 new messages after the watermark, and for a window to close', async () => {
    const engine = await open();
    await say(engine, 'ops', [
      [0, 'u-oz', 'The kestrel disk is full.'],
      [1, 'u-mia', 'Which partition?'],
      [2, 'u-oz', 'The backups partition.'],
      [3, 'u-mia', 'I will clean it up.'],
      [4, 'u-oz', 'Thanks.'],
    ]);
    expect(await episodesAt(engine, 600)).toEqual({ channels: 0, messages: 0, episodes: 0, skipped: null });
    expect(await engine.storage.maintenanceState.get('ops', 'episodes')).toBeNull();

    await say(engine, 'ops', [[30, 'u-mia', 'Done, 40 GB free now.']]);
    // Six new messages, but their window (10:00-11:00) is still open at 10:45.
    expect(await episodesAt(engine, 45)).toMatchObject({ channels: 1, messages: 0, episodes: 0 });
    expect(await episodesAt(engine, 60)).toMatchObject({ channels: 1, messages: 6, episodes: 1 });
    expect(await episodesAt(engine, 600)).toMatchObject({ channels: 0, episodes: 0 });
    expect(await episodes(engine)).toHaveLength(1);
  });

  it('leaves system messages out of the windows', async () => {
    const engine = await open();
    await say(engine, 'ops', [
      [0, 'u-oz', 'Kestrel runs out of disk every Monday.'],
      [1, 'system', '/remember done', 'system'],
      [2, 'system', 'Noted.', 'system'],
      [3, 'system', 'Noted.', 'system'],
      [4, 'u-mia', 'The log rotation is broken.'],
      [5, 'u-oz', 'ok'],
    ]);
    expect(await episodesAt(engine, 120)).toMatchObject({ channels: 1, messages: 6, episodes: 0 });
  });

  it('keeps channels apart: one episode per channel, each in its own room', async () => {
    const engine = await open();
    for (const channel of ['ops', 'dev']) {
      await say(engine, channel, [
        [0, 'u-oz', `The ${channel} channel talked about releases.`],
        [1, 'u-mia', 'Release 2.0 ships on Friday.'],
        [2, 'u-oz', 'Changelog needs review.'],
        [3, 'u-mia', 'I will review it.'],
        [4, 'u-oz', 'Thanks.'],
        [5, 'u-mia', 'Sure.'],
      ]);
    }
    expect(await episodesAt(engine, 120)).toMatchObject({ channels: 2, messages: 12, episodes: 2 });
    expect((await episodes(engine)).map((episode) => episode.channelId).sort()).toEqual(['dev', 'ops']);
  });

  it('keeps the watermark before a window whose summary failed, and writes it on the next run', async () => {
    let failures = 1;
    const flaky: EpisodeSummariser = {
      id: 'flaky',
      async summarise({ messages }) {
        if (failures-- > 0) throw new Error('model timed out');
        return { summary: `${messages.length} messages about disks.` };
      },
    };
    const engine = await open(flaky);
    await say(engine, 'ops', [
      [0, 'u-oz', 'a'],
      [1, 'u-mia', 'b'],
      [2, 'u-oz', 'c'],
      [3, 'u-mia', 'd'],
      [4, 'u-oz', 'e'],
      [5, 'u-mia', 'f'],
    ]);
    expect(await episodesAt(engine, 120)).toMatchObject({ channels: 1, messages: 0, episodes: 0 });
    expect(engine.warnings).toEqual(['the flaky summariser failed for ops, will retry: model timed out']);
    expect(await episodesAt(engine, 130)).toMatchObject({ channels: 1, messages: 6, episodes: 1 });
    expect((await episodes(engine))[0]?.content).toBe('6 messages about disks.');
  });
});
