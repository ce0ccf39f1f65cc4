import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { AUDIENCE_RECHECK_AFTER_MS, AUDIENCE_TASK, AUDIENCE_WATCH_MS } from '../src/core/derived-audience.js';
import type { Mneme } from '../src/core/mneme.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';
import { LOBBY_SECRET_QUERY, lobbySecretFact } from './lobby-secret.fixture.js';

/**
 * Wt-attack21 (ADR 5, session 20): every read of an engine looks, at most every 10 s of its clock, for the audience
 * marks older than a minute that a dead process left, and checks them. Two gaps: a read the look does not guard
 * (a user's own export through `as()`), and a mark written by a process whose clock was ahead of this one's (its
 * watermark in the future looks "young" for as long as the clocks differ, plus the minute).
 */
const START = Date.parse('2026-03-02T10:00:00Z');
const quiet = { warn: () => {}, info: () => {} };

let folder: string | undefined;
let mneme: Mneme | undefined;
afterEach(async () => {
  await mneme?.close();
  mneme = undefined;
  if (folder) rmSync(folder, { recursive: true, force: true });
  folder = undefined;
});

async function opened() {
  folder = mkdtempSync(join(tmpdir(), 'mneme-attack21-'));
  const path = join(folder, 'watch.db');
  const clock = createFixedClock(START);
  mneme = await createMneme({ path, embedder: createFakeEmbeddingModel(), clock, logger: quiet });
  return { path, clock, mneme };
}

/** What a process on the same file leaves when it dies after an audience change's write, before its moves. */
async function deadProcessChange(
  path: string,
  markedAt: number,
  change: Record<string, string>,
  write: (storage: ReturnType<typeof createSqliteStorage>) => Promise<unknown>,
) {
  const storage = createSqliteStorage({ path });
  await storage.maintenanceState.set(`audience:dead-${markedAt}`, AUDIENCE_TASK, {
    watermark: markedAt,
    details: { change },
  });
  await write(storage);
  await storage.close();
}

async function exported(engine: Mneme): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  for await (const line of engine.exportData({ userId: 'ann' })) lines.push(JSON.parse(line));
  return lines;
}

describe('the audience watch of a process beside a dead one', () => {
  /** The heist case (attack19's 'a member removed'): a session memory of Bob's words in north, Ann in the topic. */
  async function heist() {
    const { path, clock, mneme: engine } = await opened();
    await engine.putChannel({ id: 'north', members: ['ann', 'bob'] });
    await engine.createTopic({ id: 'heist', members: ['ann', 'bob'] });
    await engine.ingest({
      channelId: 'north',
      sender: 'bob',
      senderName: 'Bob',
      topicId: 'heist',
      content: 'I prefer the staging database password quokkamidnight for the heist',
    });
    await engine.whenIdle();
    await engine.extract('heist');
    const [session] = (await engine.list({ scope: 'session', limit: 10 })).memories;
    if (!session) throw new Error('conversation extraction wrote no session memory');
    const ann = engine.as({ kind: 'user', userId: 'ann', label: 'ann' });
    const exportedIds = async () =>
      (await exported(ann)).filter((line) => line.type === 'memory').map((line) => line.id);
    expect(await exportedIds()).toContain(session.id);

    // Another process removes Ann from north and dies before moving the session memory.
    await deadProcessChange(path, clock.now(), { channelId: 'north' }, (storage) =>
      storage.memberships.putChannel({ id: 'north', members: ['bob'] }, clock.now()),
    );
    // Well past the minute and a look: the watch would move it at any guarded read now.
    clock.advance(AUDIENCE_RECHECK_AFTER_MS + AUDIENCE_WATCH_MS + 1_000);
    return { engine, ann, session, exportedIds };
  }

  it('keeps a session memory out of the export of a user removed from its channel once the mark is a minute old', async () => {
    const { session, exportedIds } = await heist();
    // Ann is no longer in north; the memory quotes north's messages.
    expect(await exportedIds()).not.toContain(session.id);
  });

  it('leaves the session memory out of that export once a guarded read has looked (control)', async () => {
    const { engine, ann, session, exportedIds } = await heist();
    await ann.list({ limit: 1 });
    expect(await engine.get(session.id)).toMatchObject({ scope: 'room', channelId: 'north' });
    expect(await exportedIds()).not.toContain(session.id);
  });

  it('checks a dead process mark stamped by a clock an hour ahead once ten minutes have passed here', async () => {
    const { path, clock, mneme: engine } = await opened();
    const fact = await lobbySecretFact(engine);
    const ann = engine.as({ kind: 'user', userId: 'ann', label: 'ann' });
    expect((await ann.list({ limit: 50 })).memories.map((m) => m.id)).toContain(fact.id);

    // The other process (another host on the database, or this host before its clock was set back an hour) makes
    // the lobby private at what its clock calls an hour from now, and dies before the moves.
    const HOUR = 3_600_000;
    await deadProcessChange(path, clock.now() + HOUR, { channelId: 'lobby' }, (storage) =>
      storage.memberships.putChannel({ id: 'lobby', visibility: 'private' }, clock.now() + HOUR),
    );
    // Ten minutes later on this process's clock: the dead process has been gone far longer than the minute.
    clock.advance(10 * 60_000);
    const seen = (await ann.list({ limit: 50 })).memories.map((m) => m.id);
    const found = (await ann.recall({ query: LOBBY_SECRET_QUERY, topK: 20 })).hits.map((hit) => hit.memory.id);
    expect({ list: seen.includes(fact.id), recall: found.includes(fact.id) }).toEqual({ list: false, recall: false });
  });

  it('keeps the mark of a live process whose clock is behind until its moves are done', async () => {
    const { path, clock, mneme: engine } = await opened();
    const fact = await lobbySecretFact(engine);
    const ann = engine.as({ kind: 'user', userId: 'ann', label: 'ann' });
    clock.advance(AUDIENCE_WATCH_MS + 1_000);
    expect((await ann.list({ limit: 50 })).memories.map((m) => m.id)).toContain(fact.id);

    // The other process's clock is two minutes behind this one's. It marks its change (making the lobby private)...
    const behind = clock.now() - 2 * 60_000;
    const other = createSqliteStorage({ path });
    await other.maintenanceState.set(`audience:live-${behind}`, AUDIENCE_TASK, {
      watermark: behind,
      details: { change: { channelId: 'lobby' } },
    });
    // ...and, before its write lands, this process reads: the mark looks two minutes old, a dead process's.
    clock.advance(AUDIENCE_WATCH_MS + 1_000);
    await ann.list({ limit: 50 });
    // The write lands, and the other process dies before its moves: the case the mark is there for.
    await other.memberships.putChannel({ id: 'lobby', visibility: 'private' }, behind + 1_000);
    await other.close();

    clock.advance(10 * 60_000);
    await engine.maintain({ tasks: 'none' });
    const seen = (await ann.list({ limit: 50 })).memories.map((m) => m.id);
    expect(seen).not.toContain(fact.id);
  });
});
