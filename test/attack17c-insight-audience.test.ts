import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Wt-attack17c: a dream insight quotes every memory it was built on, so it may be seen only by those who
 * may read every channel those memories came from. When an audience narrows (ADR 5, 2026-12-03) the
 * insight must go where that holds, not merely where the first of its sources that moved went.
 */
describe('a dream insight built on memories of several channels, after an audience narrows', () => {
  let mneme: Mneme | undefined;
  afterEach(async () => {
    await mneme?.close();
    mneme = undefined;
  });

  // Sums up whatever it is given in one insight that quotes every memory (as a chat model's summary may).
  const dreamer: Dreamer = {
    id: 'quoting-dreamer',
    async dream(input) {
      return [
        {
          content: `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`,
          category: 'pattern',
          sourceIds: input.memories.map((memory) => memory.id),
        },
      ];
    },
  };

  async function open(): Promise<Mneme> {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      dreamer,
      logger: { warn: () => {}, info: () => {} },
    });
    return mneme;
  }

  /** Whether the user can get the memory by id, or find it in a listing, with this viewer. */
  async function sees(engine: Mneme, userId: string, id: number, viewer: object): Promise<boolean> {
    const user = engine.as({ kind: 'user', userId, label: `${userId} app` });
    const got = await user.get({ id, viewer }).then(
      () => true,
      () => false,
    );
    const listed = (await user.list({ viewer, limit: 200 })).memories.some((memory) => memory.id === id);
    return got || listed;
  }

  it("keeps a session insight that quotes a room's memory from a reader of another room it moved into", async () => {
    const engine = await open();
    await engine.putChannel({ id: 'hall', members: ['ann', 'bob', 'carl'] });
    await engine.putChannel({ id: 'vault', members: ['ann', 'bob'] });
    await engine.createTopic({ id: 'heist', members: ['ann', 'bob'] });
    for (const [channelId, content] of [
      ['hall', 'I prefer the osprey cafe for the planning meetings'],
      ['hall', 'I prefer the morning train to the city'],
      ['vault', 'I prefer the combination nine-four-seven-two for the safe'],
    ] as const) {
      await engine.ingest({ channelId, sender: 'bob', senderName: 'Bob', topicId: 'heist', content });
    }
    await engine.whenIdle();
    await engine.extract('heist');
    const sessions = (await engine.list({ scope: 'session', limit: 100 })).memories;
    expect(sessions.length).toBeGreaterThanOrEqual(3);
    await engine.maintain({ tasks: 'dream' });
    const insight = (await engine.list({ scope: 'session', limit: 100 })).memories.find((m) => m.source === 'dream');
    if (!insight) throw new Error('the dream wrote no insight');
    expect(insight.content).toContain('nine-four-seven-two');
    expect(await sees(engine, 'carl', insight.id, { channelId: 'hall' })).toBe(false);

    // Bob leaves the hall: the hall's session memories move into the hall's room (Ann, Carl). The insight
    // quotes the vault's combination too, which Carl may not read.
    await engine.putChannel({ id: 'hall', members: ['ann', 'carl'] });
    expect(await sees(engine, 'carl', insight.id, { channelId: 'hall' })).toBe(false);
    expect(await sees(engine, 'carl', insight.id, {})).toBe(false);
  });

  it('moves a global insight again when a second channel it quotes is made private', async () => {
    const engine = await open();
    await engine.putChannel({ id: 'lobby', visibility: 'public', members: ['bob', 'ann'] });
    await engine.putChannel({ id: 'atrium', visibility: 'public', members: ['bob', 'carl'] });
    for (const [channelId, content] of [
      ['lobby', 'The staging database password rotates at quokkamidnight'],
      ['lobby', 'The staging API token rotates at quokkanoon'],
      ['atrium', 'The production vault key is wombat-seventeen'],
    ] as const) {
      await engine.ingest({ channelId, sender: 'bob', senderName: 'Bob', content });
    }
    await engine.whenIdle();
    await engine.maintain({ tasks: 'dream' });
    const insight = (await engine.list({ scope: 'global', limit: 100 })).memories.find((m) => m.source === 'dream');
    if (!insight) throw new Error('the dream wrote no insight');
    expect(insight.content).toContain('wombat-seventeen');

    // The lobby made private: the insight follows its lobby facts into the lobby's room (Bob, Ann); the
    // atrium is still public, so Ann may read all it quotes.
    await engine.putChannel({ id: 'lobby', visibility: 'private' });
    expect(await engine.get(insight.id)).toMatchObject({ scope: 'room', channelId: 'lobby' });

    // The atrium made private too: Ann may no longer read the atrium's key, which the insight quotes.
    await engine.putChannel({ id: 'atrium', visibility: 'private' });
    expect(await sees(engine, 'ann', insight.id, { channelId: 'lobby' })).toBe(false);
    expect(await sees(engine, 'carl', insight.id, { channelId: 'atrium' })).toBe(false);
    expect(await engine.get(insight.id)).toMatchObject({ scope: 'personal', userId: 'bob' });
  });
});
