import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { AUDIENCE_RECHECK_AFTER_MS, AUDIENCE_TASK } from '../src/core/derived-audience.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';
import { LOBBY_SECRET_QUERY, lobbySecretFact } from './lobby-secret.fixture.js';

/**
 * Wt-attack17: a memory whose owner is not its source's channel (a global fact of a public channel, a
 * session or project memory of a topic's messages) keeps the audience it was given when it was derived.
 * When the source's audience later shrinks (the channel made private, a member removed from it) or the
 * memory's widens (a user joins the topic), the memory must follow its source: seen by no one who cannot
 * read the channel it came from.
 */
describe('a memory derived from a channel, after the audiences change', () => {
  let mneme: Mneme;
  const ann = () => mneme.as({ kind: 'user', userId: 'ann', label: 'ann app' });
  const bob = () => mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });

  beforeEach(async () => {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
    });
  });
  afterEach(async () => {
    await mneme.close();
  });

  /** What the user's every read of the memory shows: recall (with the viewer), get by id and a listing. */
  async function readsOf(user: () => Mneme, id: number, query: string, viewer: object = {}): Promise<string[]> {
    const seen: string[] = [];
    const recall = await user().recall({ query, viewer });
    seen.push(...recall.hits.filter((hit) => hit.memory.id === id).map(() => 'recall'));
    const context = await user().context({ query, viewer });
    if (context.hits.some((hit) => hit.memory.id === id)) seen.push('context');
    const got = await user()
      .get({ id, viewer })
      .then(
        () => true,
        () => false,
      );
    if (got) seen.push('get');
    const listed = await user().list({ viewer, limit: 200 });
    if (listed.memories.some((memory) => memory.id === id)) seen.push('list');
    return seen;
  }

  /** Bob's message in the channel and topic, through the topic's conversation extraction: its session memory. */
  async function bobsSessionMemory(channelId: string, topicId: string, content: string) {
    await mneme.ingest({ channelId, sender: 'bob', senderName: 'Bob', topicId, content });
    await mneme.whenIdle();
    const [session] = (await mneme.extract(topicId)).created;
    if (!session) throw new Error('conversation extraction wrote nothing');
    return session;
  }

  it('moves a global fact of a public channel made private into that room: members keep it, no one else sees it', async () => {
    const fact = await lobbySecretFact(mneme);
    const query = LOBBY_SECRET_QUERY;
    expect(await readsOf(ann, fact.id, query)).toEqual(['recall', 'context', 'get', 'list']);

    await mneme.putChannel({ id: 'lobby', visibility: 'private' });
    expect(await readsOf(ann, fact.id, query)).toEqual([]);
    // Bob reads it in the room (recall may leave it out for his own fact that says the same).
    expect(await readsOf(bob, fact.id, query, { channelId: 'lobby' })).toEqual(expect.arrayContaining(['get', 'list']));
    expect(await mneme.get(fact.id)).toMatchObject({ scope: 'room', channelId: 'lobby', content: fact.content });
  });

  it("keeps a session memory of Bob's direct message from Ann once she joins the topic by posting into it", async () => {
    await mneme.putChannel({ id: 'dm-bob', visibility: 'direct', members: ['bob'] });
    await mneme.putChannel({ id: 'team', members: ['ann', 'bob'] });
    const session = await bobsSessionMemory('dm-bob', 'trip', 'I prefer the zanzibar hotel whenever I travel for work');
    expect(session).toMatchObject({ scope: 'session', topicId: 'trip' });

    await mneme.ingest({
      channelId: 'team',
      sender: 'ann',
      senderName: 'Ann',
      topicId: 'trip',
      content: 'Count me in',
    });
    await mneme.whenIdle();
    const query = 'zanzibar hotel travel work';
    expect(await readsOf(ann, session.id, query, { topicId: 'trip' })).toEqual([]);
    // Bob reads it in the room (recall may leave it out for his own fact that says the same).
    expect(await readsOf(bob, session.id, query, { channelId: 'dm-bob' })).toEqual(
      expect.arrayContaining(['get', 'list']),
    );
  });

  it('keeps a session memory of a room from a member of the topic removed from the room', async () => {
    await mneme.putChannel({ id: 'team', members: ['ann', 'bob'] });
    await mneme.createTopic({ id: 'launch', members: ['ann', 'bob'] });
    const session = await bobsSessionMemory(
      'team',
      'launch',
      'I prefer the walrus-gate launch codes kept in the blue safe',
    );
    const query = 'walrus-gate launch codes blue safe';
    expect(await readsOf(ann, session.id, query, { topicId: 'launch' })).toEqual(['recall', 'context', 'get', 'list']);

    await mneme.putChannel({ id: 'team', members: ['bob'] });
    expect(await readsOf(ann, session.id, query, { topicId: 'launch' })).toEqual([]);
    // Bob reads it in the room (recall may leave it out for his own fact that says the same).
    expect(await readsOf(bob, session.id, query, { channelId: 'team' })).toEqual(
      expect.arrayContaining(['get', 'list']),
    );
  });

  it("moves a session memory of two rooms with different readers to its speaker's own once the topic reaches neither", async () => {
    await mneme.putChannel({ id: 'north', members: ['bob', 'ann'] });
    await mneme.putChannel({ id: 'south', members: ['bob', 'carl'] });
    await mneme.createTopic({ id: 'merger', members: ['bob'] });
    // Bob says it in both rooms: the topic's memory cites a message of each (the second restates the first).
    for (const [channelId, content] of [
      ['north', 'I prefer the osprey-lane office for the merger talks'],
      ['south', 'I prefer the osprey-lane office for the merger talks, as I said'],
    ] as const) {
      await mneme.ingest({ channelId, sender: 'bob', senderName: 'Bob', topicId: 'merger', content });
    }
    await mneme.whenIdle();
    await mneme.extract('merger');
    const channelOf = new Map<number, string>();
    for (const channelId of ['north', 'south']) {
      for (const message of (await mneme.messages({ channelId, limit: 100 })).messages) {
        channelOf.set(message.id, channelId);
      }
    }
    const session = (await mneme.list({ scope: 'session', limit: 100 })).memories.find(
      (memory) => new Set(memory.sourceMessageIds.map((id) => channelOf.get(id))).size === 2,
    );
    if (!session) throw new Error('conversation extraction wrote no memory citing both rooms');
    const query = 'osprey-lane office merger talks';
    expect(await readsOf(ann, session.id, query, { channelId: 'north' })).toEqual([]);

    // Dave joins the topic and reads neither room; neither room's readers may read the other (Ann, Carl).
    await mneme.createTopic({ id: 'merger', members: ['bob', 'dave'] });
    expect(await mneme.get(session.id)).toMatchObject({ scope: 'personal', userId: 'bob', archivedAt: null });
    const dave = () => mneme.as({ kind: 'user', userId: 'dave', label: 'dave app' });
    const carl = () => mneme.as({ kind: 'user', userId: 'carl', label: 'carl app' });
    expect(await readsOf(dave, session.id, query, { topicId: 'merger' })).toEqual([]);
    expect(await readsOf(ann, session.id, query, { channelId: 'north' })).toEqual([]);
    expect(await readsOf(carl, session.id, query, { channelId: 'south' })).toEqual([]);
    expect(await readsOf(bob, session.id, query)).toEqual(expect.arrayContaining(['get', 'list']));
  });

  it('moves a dream insight built on global facts of a public channel made private with them', async () => {
    await mneme.close();
    // A dreamer (the port a chat model fills) that sums up whatever it is given in one insight.
    const dreamer: Dreamer = {
      id: 'test-dreamer',
      async dream(input) {
        return [
          {
            content: 'Bob rotates every staging secret at quokka hours',
            category: 'pattern',
            sourceIds: input.memories.map((m) => m.id),
          },
        ];
      },
    };
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      dreamer,
      logger: { warn: () => {}, info: () => {} },
    });
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
    for (const content of [
      'The staging database password rotates at quokkamidnight',
      'The staging API token rotates at quokkanoon',
      'The staging VPN key rotates at quokkadawn',
    ]) {
      await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content });
    }
    await mneme.whenIdle();
    await mneme.maintain({ tasks: 'dream' });
    const insight = (await mneme.list({ scope: 'global', limit: 100 })).memories.find((m) => m.source === 'dream');
    if (!insight) throw new Error('the dream wrote no insight');
    const query = 'staging secret quokka hours';
    expect(await readsOf(ann, insight.id, query)).toEqual(expect.arrayContaining(['get', 'list']));

    await mneme.putChannel({ id: 'lobby', visibility: 'private' });
    expect(await mneme.get(insight.id)).toMatchObject({ scope: 'room', channelId: 'lobby' });
    expect(await readsOf(ann, insight.id, query)).toEqual([]);
    expect((await mneme.list({ scope: 'global', limit: 100 })).memories).toEqual([]);
  });

  it('checks at the next maintenance an audience change whose process died between its write and its moves, and deletes its mark a minute later', async () => {
    await mneme.close();
    const folder = mkdtempSync(join(tmpdir(), 'mneme-audience-crash-'));
    const path = join(folder, 'crash.db');
    const clock = createFixedClock('2026-03-02T10:00:00Z');
    const open = () =>
      createMneme({ path, embedder: createFakeEmbeddingModel(), clock, logger: { warn: () => {}, info: () => {} } });
    try {
      mneme = await open();
      const fact = await lobbySecretFact(mneme);

      // What another process on the file leaves that died after the channel's write, before the moves: its mark,
      // and the write. (A process opened after it checks the mark at once: test/attack19-killed-audience.test.ts.)
      const storage = await createSqliteStorage({ path });
      await storage.maintenanceState.set(`audience:${'0'.repeat(8)}`, AUDIENCE_TASK, {
        watermark: clock.now(),
        details: { change: { channelId: 'lobby' } },
      });
      await storage.memberships.putChannel({ id: 'lobby', visibility: 'private' }, clock.now());
      await storage.close();

      const query = LOBBY_SECRET_QUERY;
      // A mark is checked at every maintenance, whatever its age (session 21: its time is its writer's clock, which
      // may be ahead or behind): a live process's, checked before its write, moves nothing; this one's write landed.
      await mneme.maintain({ tasks: 'decay' });
      expect(await readsOf(ann, fact.id, query)).toEqual([]);
      expect(await mneme.get(fact.id)).toMatchObject({ scope: 'room', channelId: 'lobby' });
      const marks = async () => {
        const reader = await createSqliteStorage({ path });
        try {
          return (await reader.maintenanceState.list(AUDIENCE_TASK)).length;
        } finally {
          await reader.close();
        }
      };
      // Kept until this process has known it for a minute (its writer may be alive and about to move them).
      expect(await marks()).toBe(1);
      clock.advance(AUDIENCE_RECHECK_AFTER_MS);
      await mneme.maintain({ tasks: 'decay' });
      expect(await marks()).toBe(0);
      expect(await readsOf(ann, fact.id, query)).toEqual([]);
    } finally {
      await mneme.close();
      rmSync(folder, { recursive: true, force: true });
    }
    mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  });
});
