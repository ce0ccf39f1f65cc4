import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';
import { createExtractionQueue } from '../src/workers/extraction-queue.js';
import { LOBBY_SECRET, LOBBY_SECRET_QUERY } from './lobby-secret.fixture.js';

interface MaintenanceEngine {
  mneme: Mneme;
  storage: Storage;
  clock: ReturnType<typeof createFixedClock>;
}

/** The engine `createMneme` builds (offline extractor, extraction queue), with its storage in reach. */
async function openMaintenanceEngine(options: { start: string }): Promise<MaintenanceEngine> {
  const storage = createSqliteStorage({ path: ':memory:' });
  const logger = { warn: () => {}, info: () => {} };
  const clock = createFixedClock(options.start);
  const mneme = createEngine({
    storage,
    embedder: null,
    clock,
    logger,
    policy: resolvePolicy(),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: createOfflineExtractor(),
    extractionScheduler: (work) => createExtractionQueue(work, { logger }),
  });
  return { mneme, storage, clock };
}

/**
 * Wt-attack21 (ADR 5, 2026-12-03): `putChannel` reads the channel (`before`) ahead of its marks and its write, and
 * decides from that reading whether the write took a reader away (`narrows`). Another declaration of the channel that
 * commits in between (a second request of the same service, another process on the file) makes that reading stale:
 * a request that makes the lobby private, having read it private, decides it narrowed nothing, and moves nothing,
 * although the lobby was public when its write landed and a global fact of it was stored meanwhile.
 */
let engine: MaintenanceEngine | undefined;
afterEach(async () => {
  await engine?.mneme.close();
  engine = undefined;
});

/** Holds the next `maintenanceState.set` (the first mark `putChannel` writes, after it read the channel). */
function holdNextMark(opened: MaintenanceEngine): { reached: Promise<void>; release: () => void } {
  const state = opened.storage.maintenanceState;
  const original = state.set.bind(state);
  let release = () => {};
  let reached = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reachedPromise = new Promise<void>((resolve) => {
    reached = resolve;
  });
  state.set = async (...args) => {
    state.set = original;
    reached();
    await held;
    return original(...args);
  };
  return { reached: reachedPromise, release };
}

async function annSees(mneme: Mneme, id: number): Promise<string[]> {
  const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann' });
  const seen: string[] = [];
  if ((await ann.list({ limit: 100 })).memories.some((memory) => memory.id === id)) seen.push('list');
  const hits = (await ann.recall({ query: LOBBY_SECRET_QUERY, topK: 20 })).hits;
  if (hits.some((hit) => hit.memory.id === id)) seen.push('recall');
  if (
    await ann.get(id).then(
      () => true,
      () => false,
    )
  )
    seen.push('get');
  return seen;
}

describe('two declarations of one channel at once', () => {
  it('moves the global fact of a lobby made private by a request that read it private before it was made public', async () => {
    engine = await openMaintenanceEngine({ start: '2026-03-02T10:00:00Z' });
    const { mneme } = engine;
    await mneme.putChannel({ id: 'lobby', visibility: 'private', members: ['bob'] });

    // Request 1: make the lobby private (again). It reads the channel (private), then is held at its first mark.
    const hold = holdNextMark(engine);
    const makePrivate = mneme.putChannel({ id: 'lobby', visibility: 'private' });
    await hold.reached;

    // Meanwhile request 2 makes it public, and Bob says his secret there: a global fact, as the rule allows now.
    await mneme.putChannel({ id: 'lobby', visibility: 'public' });
    await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content: LOBBY_SECRET });
    await mneme.whenIdle();
    const [fact] = (await mneme.list({ scope: 'global', limit: 10 })).memories;
    if (!fact) throw new Error('the offline extractor wrote no global fact');
    expect(await annSees(mneme, fact.id)).toEqual(['list', 'recall', 'get']);

    // Request 1 goes on: the lobby is private now, as it asked.
    hold.release();
    await makePrivate;
    expect(await mneme.channel('lobby')).toMatchObject({ visibility: 'private', members: ['bob'] });

    // Not a matter of time: every mark is gone, and the checks of stopped processes' changes find nothing.
    engine.clock.advance(5 * 60_000);
    await mneme.maintain({ tasks: 'none' });
    // Ann is no member of the private lobby: its words must not reach her.
    expect(await annSees(mneme, fact.id)).toEqual([]);
  });

  it('moves the session memory of a member removed by a request that read the channel without her', async () => {
    engine = await openMaintenanceEngine({ start: '2026-03-02T10:00:00Z' });
    const { mneme } = engine;
    await mneme.putChannel({ id: 'north', members: ['bob'] });
    await mneme.createTopic({ id: 'heist', members: ['ann', 'bob'] });

    // Request 1: north's members are Bob alone (again). It reads north (Bob), then is held at its first mark.
    const hold = holdNextMark(engine);
    const removeAnn = mneme.putChannel({ id: 'north', members: ['bob'] });
    await hold.reached;

    // Meanwhile request 2 adds Ann to north, and the topic's talk there is extracted for the topic (both read north).
    await mneme.putChannel({ id: 'north', members: ['ann', 'bob'] });
    await mneme.ingest({
      channelId: 'north',
      sender: 'bob',
      senderName: 'Bob',
      topicId: 'heist',
      content: 'I prefer the staging database password quokkamidnight for the heist',
    });
    await mneme.whenIdle();
    await mneme.extract('heist');
    const [session] = (await mneme.list({ scope: 'session', limit: 10 })).memories;
    if (!session) throw new Error('conversation extraction wrote no session memory');
    const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann' });
    const annReads = async () =>
      (await ann.list({ viewer: { topicId: 'heist' }, limit: 100 })).memories.map((memory) => memory.id);
    expect(await annReads()).toContain(session.id);

    hold.release();
    await removeAnn;
    expect((await mneme.channel('north')).members).toEqual(['bob']);

    // Ann, no longer in north, reads the topic's memory quoting north.
    engine.clock.advance(5 * 60_000);
    await mneme.maintain({ tasks: 'none' });
    expect(await annReads()).not.toContain(session.id);
  });

  it('checks the room of a channel whose member is added back by a request that read the channel with him', async () => {
    engine = await openMaintenanceEngine({ start: '2026-03-02T10:00:00Z' });
    const { mneme } = engine;
    await mneme.putChannel({ id: 'north', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'south', members: ['bob', 'carl'] });
    await mneme.createTopic({ id: 'merger', members: ['bob'] });
    for (const channelId of ['north', 'south']) {
      await mneme.ingest({
        channelId,
        sender: 'bob',
        senderName: 'Bob',
        topicId: 'merger',
        content: `I prefer the osprey-lane office for the merger talks, said in ${channelId}`,
      });
    }
    await mneme.whenIdle();
    await mneme.extract('merger');
    const both = (await mneme.list({ scope: 'session', limit: 100 })).memories.find(
      (memory) => memory.sourceMessageIds.length === 2,
    );
    if (!both) throw new Error('conversation extraction wrote no memory citing both channels');

    // Request 1: south's members are Bob and Carl (as they are). It reads south (Bob, Carl), then is held.
    const hold = holdNextMark(engine);
    const declare = mneme.putChannel({ id: 'south', members: ['bob', 'carl'] });
    await hold.reached;

    // Meanwhile Carl is removed from south, and Dave joins the topic: the memory moves into the room of south,
    // whose readers (Bob) read north too.
    await mneme.putChannel({ id: 'south', members: ['bob'] });
    await mneme.createTopic({ id: 'merger', members: ['bob', 'dave'] });
    expect(await mneme.get(both.id)).toMatchObject({ scope: 'room', channelId: 'south' });

    // Request 1 goes on and puts Carl back into south, having read him there.
    hold.release();
    await declare;
    expect((await mneme.channel('south')).members).toEqual(['bob', 'carl']);
    engine.clock.advance(5 * 60_000);
    await mneme.maintain({ tasks: 'none' });

    // Carl reads south's room; he is not in north, whose words the memory carries.
    const carl = mneme.as({ kind: 'user', userId: 'carl', label: 'carl' });
    const seen = (await carl.list({ viewer: { channelId: 'south' }, limit: 100 })).memories.map((memory) => memory.id);
    expect(seen).not.toContain(both.id);
  });
});
