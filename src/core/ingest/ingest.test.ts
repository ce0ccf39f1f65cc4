import { afterEach, describe, expect, it } from 'vitest';
import { createMneme, type MnemeOptions } from '../../config/create-mneme.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { createOfflineExtractor } from '../../models/offline/offline-extractor.js';
import { createFixedClock } from '../../testing.js';
import { ErrorCode, MnemeError } from '../errors.js';
import type { Mneme } from '../mneme.js';
import { MAX_MESSAGE_CHARS } from '../schemas.js';
import { RELATED_POSTINGS } from './message-extraction.js';

const minute = 60_000;
const start = Date.parse('2024-06-15T12:00:00.000Z');
const silent = { warn: () => {}, info: () => {} };
let open: Mneme[] = [];

async function engine(options: Partial<MnemeOptions> = {}) {
  const embedder = createFakeEmbeddingModel();
  const mneme = await createMneme({
    path: ':memory:',
    clock: createFixedClock(start),
    embedder,
    logger: silent,
    ...options,
  });
  open.push(mneme);
  return { mneme, embedder };
}

afterEach(async () => {
  await Promise.all(open.map((mneme) => mneme.close()));
  open = [];
});

async function refused(action: Promise<unknown>): Promise<MnemeError> {
  const error = await action.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(MnemeError);
  return error as MnemeError;
}

/** The memories extracted so far; `exchange` memories (every conversation turn has one) only when asked for. */
async function memoriesOf(mneme: Mneme, filter: Parameters<Mneme['list']>[0] = {}) {
  const { memories } = await mneme.list({ limit: 500, ...filter });
  return filter.category ? memories : memories.filter((memory) => memory.category !== 'exchange');
}

describe('the message log', () => {
  it('appends a message and returns at once with its id and time', async () => {
    const { mneme } = await engine();
    const result = await mneme.ingest({ channelId: 'room-1', sender: 'oz', content: 'Good morning, everyone here' });
    expect(result.queued).toBe(true);
    expect(result.command).toBeNull();
    expect(result.messages).toEqual([
      {
        id: expect.any(Number),
        channelId: 'room-1',
        senderId: 'oz',
        role: 'user',
        content: 'Good morning, everyone here',
        topicId: null,
        replyTo: null,
        externalId: null,
        createdAt: '2024-06-15T12:00:00.000Z',
        duplicate: false,
      },
    ]);
  });

  it('appends an exchange as two messages, the reply pointing at the user message', async () => {
    const { mneme } = await engine();
    const { messages } = await mneme.ingestExchange({
      channelId: 'dm-oz',
      userId: 'oz',
      userMessage: 'What is the capital of Norway?',
      assistantReply: 'Oslo.',
      createdAt: '2023-05-08T13:56:00Z',
    });
    const [question, answer] = messages;
    expect(question).toMatchObject({ role: 'user', senderId: 'oz', createdAt: '2023-05-08T13:56:00.000Z' });
    expect(answer).toMatchObject({ role: 'assistant', senderId: 'assistant', replyTo: question?.id });
    expect(await mneme.turns({ channelId: 'dm-oz' })).toEqual(messages.map(({ duplicate: _, ...message }) => message));
  });

  it('appends many messages and exchanges in one call, in order, and extracts them', async () => {
    const { mneme } = await engine();
    const results = await mneme.ingestMany([
      { channelId: 'c', sender: 'oz', senderName: 'Oz', content: 'I have two cats called Miso and Tofu' },
      { channelId: 'c', userId: 'oz', userMessage: 'I work as a carpenter in Bergen', assistantReply: 'Nice!' },
      { channelId: 'd', sender: 'ann', content: '/remember I am left-handed' },
    ]);
    expect(results.map((result) => result.messages.map((message) => message.role))).toEqual([
      ['user'],
      ['user', 'assistant'],
      ['user'],
    ]);
    expect(results[2]?.command?.remembered?.content).toBe('Ann is left-handed');
    await mneme.whenIdle();
    expect(
      (await memoriesOf(mneme, { userId: 'oz', category: 'fact' })).map((memory) => memory.content).sort(),
    ).toEqual(['Oz has two cats called Miso and Tofu.', 'Oz works as a carpenter in Bergen.']);
  });

  it('writes nothing of a batch with one invalid input, and names it by position', async () => {
    const { mneme } = await engine();
    const error = await refused(
      mneme.ingestMany([
        { channelId: 'c', sender: 'oz', content: 'fine' },
        { channelId: 'c', userId: 'oz', userMessage: 'fine too', assistantReply: '   ' },
      ]),
    );
    expect(error).toMatchObject({
      code: ErrorCode.InvalidInput,
      message: expect.stringMatching(/exchange at index 1/),
    });
    expect(await mneme.turns({ channelId: 'c' })).toEqual([]);
    expect(await mneme.ingestMany([])).toEqual([]);
    const tooMany = Array.from({ length: 1001 }, () => ({ channelId: 'c', sender: 'oz', content: 'x' }));
    expect((await refused(mneme.ingestMany(tooMany))).message).toMatch(/at most 1000/);
  });

  it('refuses a reply to no message, or to a message of another channel, writing nothing of the batch', async () => {
    const { mneme } = await engine();
    const [first] = (await mneme.ingest({ channelId: 'room-1', sender: 'oz', content: 'Anyone up for lunch today?' }))
      .messages;
    const missing = await refused(
      mneme.ingestMany([
        { channelId: 'room-1', sender: 'ann', senderName: 'Ann', content: 'Yes please' },
        { channelId: 'room-1', sender: 'ann', content: 'Where?', replyTo: 424_242 },
      ]),
    );
    expect(missing).toMatchObject({
      code: ErrorCode.InvalidInput,
      message: 'invalid message at index 1: replyTo: no message 424242',
      issues: [{ path: 'replyTo', message: 'no message 424242' }],
    });
    const elsewhere = await refused(
      mneme.ingest({ channelId: 'room-2', sender: 'ann', content: 'Sure', replyTo: first?.id ?? 0 }),
    );
    expect(elsewhere.message).toBe(
      `invalid message: replyTo: message ${first?.id} is not in channel room-2; a reply answers a message of its own channel`,
    );
    expect(await mneme.turns({ channelId: 'room-1' })).toHaveLength(1);
    expect(await mneme.turns({ channelId: 'room-2' })).toEqual([]);
    const reply = await mneme.ingest({ channelId: 'room-1', sender: 'ann', content: 'Sure', replyTo: first?.id ?? 0 });
    expect(reply.messages[0]?.replyTo).toBe(first?.id);
  });

  it('refuses a time before 1970 or after 9999, and takes the last millisecond of 9999', async () => {
    const { mneme } = await engine();
    for (const createdAt of [1e20, -1, '+010000-01-01T00:00:00Z', 'not a time']) {
      const error = await refused(
        mneme.ingest({ channelId: 'room-1', sender: 'oz', content: 'hello there', createdAt }),
      );
      expect(error.message).toMatch(
        /createdAt must be an ISO 8601 time or epoch milliseconds from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z/,
      );
    }
    const latest = await mneme.ingest({
      channelId: 'room-1',
      sender: 'oz',
      content: 'hello',
      createdAt: '9999-12-31T23:59:59.999Z',
    });
    expect(latest.messages[0]?.createdAt).toBe('9999-12-31T23:59:59.999Z');
  });

  it('refuses bad input with INVALID_INPUT and writes nothing', async () => {
    const { mneme } = await engine();
    const attempts = [
      mneme.ingest({ channelId: 'c', sender: 'oz', content: 'x'.repeat(MAX_MESSAGE_CHARS + 1) }),
      mneme.ingest({ channelId: 'c', sender: 'oz', content: '   ' }),
      mneme.ingest({ channelId: 'c', sender: 'oz', content: 'hello', createdAt: 'not a date' }),
      mneme.ingest({ channelId: 'c', sender: 'oz', content: 'hello', colour: 'blue' } as never),
      mneme.ingest({ channelId: 'c', sender: 'oz', role: 'robot', content: 'hello' } as never),
      mneme.ingestExchange({ channelId: 'c', userId: 'oz', userMessage: 'hello there', assistantReply: '' }),
    ];
    for (const attempt of attempts) expect((await refused(attempt)).code).toBe(ErrorCode.InvalidInput);
    const tooLong = await refused(
      mneme.ingest({ channelId: 'c', sender: 'oz', content: 'x'.repeat(MAX_MESSAGE_CHARS + 1) }),
    );
    expect(tooLong.message).toMatch(/split it into several messages/);
    expect(await mneme.turns({ channelId: 'c' })).toEqual([]);
  });
});

describe('extraction', () => {
  it('attributes facts to the display name and records the source message', async () => {
    const { mneme } = await engine();
    await mneme.setDisplayName({ userId: 'u-17', displayName: 'Oz' });
    const { messages } = await mneme.ingest({
      channelId: 'room-1',
      sender: 'u-17',
      content: 'I prefer dark mode in every editor',
    });
    await mneme.whenIdle();
    const [memory, ...others] = await memoriesOf(mneme, { category: 'preference' });
    expect(others).toEqual([]);
    expect(memory).toMatchObject({
      content: 'Oz prefers dark mode in every editor.',
      scope: 'personal',
      userId: 'u-17',
      channelId: 'room-1',
      source: 'extraction',
      sector: 'semantic',
      sourceMessageIds: [messages[0]?.id],
      embeddingModel: 'fake-64',
    });
  });

  it('dates facts and the exchange by when the message was said, and keeps the time they were stored', async () => {
    const { mneme } = await engine({ clock: createFixedClock('2026-11-30T09:00:00Z') });
    await mneme.ingestExchange({
      channelId: 'dm-oz',
      userId: 'oz',
      userName: 'Oz',
      userMessage: 'I prefer dark mode in every editor',
      assistantReply: 'Noted, dark mode it is.',
      createdAt: '2024-03-05T10:00:00Z',
    });
    await mneme.whenIdle();
    const facts = await memoriesOf(mneme);
    const [exchange] = await memoriesOf(mneme, { category: 'exchange' });
    expect(facts.map((memory) => memory.content)).toEqual(['Oz prefers dark mode in every editor.']);
    for (const memory of [...facts, exchange]) {
      expect(memory).toMatchObject({ validFrom: '2024-03-05T10:00:00.000Z', createdAt: '2026-11-30T09:00:00.000Z' });
    }
    const { text } = await mneme.context({ query: 'dark mode editor', viewer: { userId: 'oz', channelId: 'dm-oz' } });
    expect(text).toContain('- 2024-03-05 [preference]: "Oz prefers dark mode in every editor."');
    expect(text).not.toContain('2026-11-30');
  });

  it('moves the time of a memory to the latest message that says it again', async () => {
    const { mneme } = await engine();
    const say = (content: string, createdAt: string) =>
      mneme.ingest({ channelId: 'c', sender: 'oz', senderName: 'Oz', content, createdAt });
    await say('I prefer dark mode in every editor', '2024-03-05T10:00:00Z');
    await say('I still prefer dark mode in every editor', '2024-05-01T10:00:00Z');
    await say('I really prefer dark mode in every editor', '2024-04-01T10:00:00Z');
    await mneme.whenIdle();
    const memories = await memoriesOf(mneme);
    expect(memories).toHaveLength(1);
    expect(memories[0]?.validFrom).toBe('2024-05-01T10:00:00.000Z');
  });

  it('takes the display name given with a message', async () => {
    const { mneme } = await engine();
    await mneme.ingest({
      channelId: 'c',
      sender: 'u-9',
      senderName: 'Mira',
      content: "I'm a nurse at the city hospital",
    });
    await mneme.whenIdle();
    expect((await memoriesOf(mneme)).map((memory) => memory.content)).toEqual([
      'Mira is a nurse at the city hospital.',
    ]);
  });

  it('updates a similar memory instead of adding one, keeping the old text as a version', async () => {
    const { mneme } = await engine();
    const first = await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I prefer dark mode in every editor',
    });
    const second = await mneme.ingest({ channelId: 'c', sender: 'oz', content: 'I prefer light mode in every editor' });
    await mneme.whenIdle();
    const memories = await memoriesOf(mneme);
    expect(memories).toHaveLength(1);
    const [memory] = memories;
    expect(memory).toMatchObject({
      content: 'Oz prefers light mode in every editor.',
      sourceMessageIds: [first.messages[0]?.id, second.messages[0]?.id],
    });
    const history = await mneme.history(memory?.id ?? 0);
    expect(history.map((version) => version.action)).toEqual(['create', 'update']);
    expect(history[1]?.changes.content).toEqual({
      from: 'Oz prefers dark mode in every editor.',
      to: 'Oz prefers light mode in every editor.',
    });
  });

  it('inserts a fact that shares too few words with what is known', async () => {
    const { mneme } = await engine();
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I prefer dark mode in every editor',
    });
    await mneme.ingest({ channelId: 'c', sender: 'oz', content: 'I have two cats called Miso and Tofu' });
    await mneme.whenIdle();
    expect((await memoriesOf(mneme)).map((memory) => memory.content).sort()).toEqual([
      'Oz has two cats called Miso and Tofu.',
      'Oz prefers dark mode in every editor.',
    ]);
  });

  it("never updates another user's memory: related memories are searched in the speaker's scopes", async () => {
    const { mneme } = await engine();
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I prefer dark mode in every editor',
    });
    await mneme.ingest({
      channelId: 'c',
      sender: 'ann',
      senderName: 'Ann',
      content: 'I prefer dark mode in every editor',
    });
    await mneme.whenIdle();
    const memories = await memoriesOf(mneme);
    expect(memories.map((memory) => [memory.userId, memory.content]).sort()).toEqual([
      ['ann', 'Ann prefers dark mode in every editor.'],
      ['oz', 'Oz prefers dark mode in every editor.'],
    ]);
  });

  it('searches related memories by the rarest words of a message: a memory sharing only a word hundreds of memories have is not related', async () => {
    const seen: string[][] = [];
    const { mneme } = await engine({
      extractor: {
        id: 'recording',
        inProcess: true,
        async extract(input) {
          seen.push(input.related.map((memory) => memory.content));
          return [];
        },
      },
      policy: { ingest: { exchangeMemories: false } },
    });
    for (let index = 0; index < RELATED_POSTINGS + 50; index++) {
      await mneme.remember({ content: `Coffee note number ${index}`, scope: 'personal', userId: 'oz' });
    }
    await mneme.remember({ content: 'Oz has a zebra called Quill', scope: 'personal', userId: 'oz' });
    await mneme.ingest({ channelId: 'c', sender: 'oz', senderName: 'Oz', content: 'coffee with Quill' });
    await mneme.whenIdle();
    expect(seen).toEqual([['Oz has a zebra called Quill']]);
  });

  it('tells the answer with related memories from the answer without them when the extractor can (withoutRelated), asking it once', async () => {
    const offline = createOfflineExtractor();
    const asked: number[] = [];
    const { mneme } = await engine({
      extractor: {
        ...offline,
        async extract(input) {
          asked.push(input.related.length);
          return offline.extract(input);
        },
      },
      policy: { ingest: { exchangeMemories: false } },
    });
    await mneme.remember({ content: 'Oz keeps a zebra called Quill.', scope: 'personal', userId: 'oz' });
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I keep a zebra called Quill. I also keep a parrot called Ink.',
    });
    await mneme.whenIdle();
    // Asked once, without the related memories; the known fact left out as a second run would have.
    expect(asked).toEqual([0]);
    expect((await memoriesOf(mneme)).map((memory) => [memory.content, memory.sourceMessageIds.length]).sort()).toEqual([
      ['Oz also keeps a parrot called Ink.', 1],
      ['Oz keeps a zebra called Quill.', 0],
    ]);
  });

  it('asks an extractor whose related memories only remove facts without them first, and searches for them only when it finds a fact', async () => {
    const seen: string[][] = [];
    const { mneme } = await engine({
      extractor: {
        id: 'recording',
        inProcess: true,
        relatedOnlyRemoves: true,
        async extract(input) {
          seen.push(input.related.map((memory) => memory.content));
          if (!input.userMessage.endsWith('!')) return [];
          return [{ content: `Oz says ${input.userMessage}`, category: 'fact', importance: 0.5, scope: 'personal' }];
        },
      },
      policy: { ingest: { exchangeMemories: false } },
    });
    await mneme.remember({ content: 'Oz has a zebra called Quill', scope: 'personal', userId: 'oz' });
    const said = async (content: string) => {
      await mneme.ingest({ channelId: 'c', sender: 'oz', senderName: 'Oz', content });
      await mneme.whenIdle();
    };
    // No fact without the related memories: no search, and no second question.
    await said('nothing new about Quill');
    expect(seen).toEqual([[]]);
    // A fact: the related memories are searched, and the extractor asked again with them.
    await said('Quill has new stripes!');
    expect(seen).toEqual([[], [], ['Oz has a zebra called Quill']]);
    // A fact and nothing related found: the first answer stands.
    await said('Rain tomorrow!');
    expect(seen).toEqual([[], [], ['Oz has a zebra called Quill'], []]);
    expect((await memoriesOf(mneme)).map((memory) => memory.content).sort()).toEqual([
      'Oz has a zebra called Quill',
      'Oz says Quill has new stripes!',
      'Oz says Rain tomorrow!',
    ]);
  });

  it('links the facts of one exchange as co_extracted', async () => {
    const { mneme } = await engine();
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I work as a carpenter. My dog is called Rex. I love hiking in the Alps.',
    });
    await mneme.whenIdle();
    const memories = await memoriesOf(mneme);
    expect(memories).toHaveLength(3);
    for (const memory of memories) {
      const links = await mneme.links(memory.id);
      expect(links.filter((link) => link.type === 'co_extracted')).toHaveLength(2);
    }
  });

  it('keeps an instruction said with "always" as a personal preference, not only as the exchange', async () => {
    const { mneme } = await engine();
    await mneme.ingestExchange({
      channelId: 'ide',
      userId: 'oz',
      userName: 'Oz',
      userMessage: 'Always use tabs for indentation in Python code',
      assistantReply: 'Got it, tabs from now on.',
    });
    await mneme.whenIdle();
    expect(await memoriesOf(mneme)).toEqual([
      expect.objectContaining({
        content: 'Oz says to always use tabs for indentation in Python code.',
        category: 'preference',
        sector: 'semantic',
        scope: 'personal',
        userId: 'oz',
      }),
    ]);
  });

  it('stores nothing but the log when the extractor is none and exchange memories are off', async () => {
    const { mneme } = await engine({ extractor: 'none', policy: { ingest: { exchangeMemories: false } } });
    await mneme.ingestExchange({
      channelId: 'c',
      userId: 'oz',
      userMessage: 'I prefer dark mode in every editor',
      assistantReply: 'Noted, dark mode it is.',
    });
    await mneme.whenIdle();
    expect(await memoriesOf(mneme)).toEqual([]);
    expect(await mneme.turns({ channelId: 'c' })).toHaveLength(2);
  });
});

describe('exchange memories', () => {
  const words = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, index) => `${prefix}${index}`).join(' ');

  it('stores an exchange as chunks of 300 words overlapping by 50, embedded from message and reply together', async () => {
    const { mneme, embedder } = await engine({ extractor: 'none' });
    const { messages } = await mneme.ingestExchange({
      channelId: 'dm',
      userId: 'oz',
      userName: 'Oz',
      userMessage: words('u', 399),
      assistantReply: words('r', 199),
    });
    await mneme.whenIdle();
    const chunks = (await memoriesOf(mneme, { category: 'exchange' })).sort((a, b) => a.id - b.id);
    // "Oz:" + 399 words, then "assistant:" + 199 words: 600 words -> 0..299, 250..549, 500..599.
    expect(chunks.map((chunk) => chunk.content.split(/\s+/).length)).toEqual([300, 300, 100]);
    const [first, second, third] = chunks.map((chunk) => chunk.content.split(/\s+/));
    expect(second?.slice(0, 50)).toEqual(first?.slice(250));
    expect(third?.slice(0, 50)).toEqual(second?.slice(250));
    expect(second).toContain('u398');
    expect(second).toContain('assistant:');
    expect(second).toContain('r0');
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({
        scope: 'room',
        channelId: 'dm',
        userId: 'oz',
        sector: 'episodic',
        source: 'exchange',
        sourceMessageIds: messages.map((message) => message.id),
        embeddingModel: 'fake-64',
      });
    }
    expect(embedder.calls.some((call) => call.texts.includes(chunks[1]?.content ?? ''))).toBe(true);
  });

  it('stores a short exchange as one chunk and none when turned off', async () => {
    const exchange = {
      channelId: 'dm',
      userId: 'oz',
      userMessage: 'How do I undo a commit?',
      assistantReply: 'git revert',
    };
    const on = await engine({ extractor: 'none' });
    await on.mneme.ingestExchange(exchange);
    await on.mneme.whenIdle();
    expect((await memoriesOf(on.mneme, { category: 'exchange' })).map((memory) => memory.content)).toEqual([
      'oz: How do I undo a commit?\nassistant: git revert',
    ]);
    const off = await engine({ extractor: 'none', policy: { ingest: { exchangeMemories: false } } });
    await off.mneme.ingestExchange(exchange);
    await off.mneme.whenIdle();
    expect(await memoriesOf(off.mneme, { category: 'exchange' })).toEqual([]);
  });

  it('stores a turn of people talking to each other alone, found also by the message it answers', async () => {
    const { mneme } = await engine({ extractor: 'none' });
    await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
    await mneme.setDisplayName({ userId: 'bob', displayName: 'Bob' });
    const said = [
      ['ann', 'Where did you go hiking over the long weekend?'],
      ['bob', 'Up to the glacier lake, with my two brothers'],
      ['ann', 'Nice!'],
    ] as const;
    for (const [sender, content] of said) await mneme.ingest({ channelId: 'walk', sender, content });
    await mneme.whenIdle();
    const turns = await memoriesOf(mneme, { category: 'exchange' });
    expect(turns.map((memory) => [memory.content, memory.sourceMessageIds.length, memory.scope])).toEqual([
      ['Bob: Up to the glacier lake, with my two brothers', 1, 'room'],
      ['Ann: Where did you go hiking over the long weekend?', 1, 'room'],
    ]);
    const found = await mneme.recall({ query: 'hiking weekend', viewer: { channelId: 'walk' } });
    expect(found.hits.map((hit) => hit.memory.content)).toEqual([
      'Ann: Where did you go hiking over the long weekend?',
      'Bob: Up to the glacier lake, with my two brothers',
    ]);
  });

  it("finds an answer also by its speaker's own statement before the follow-up question it answers", async () => {
    const { mneme } = await engine({ extractor: 'none', embedder: 'none' });
    for (const [userId, displayName] of [
      ['ann', 'Ann'],
      ['bob', 'Bob'],
      ['cy', 'Cy'],
    ] as const) {
      await mneme.setDisplayName({ userId, displayName });
    }
    const statement = 'Last weekend I had a picnic with some friends from church.';
    const conversations = {
      // The answer continues Ann's own statement: found by its words.
      answered: [
        ['ann', statement],
        ['bob', 'Looks fun! What games did you all play?'],
        ['ann', 'Some fun ones like charades and a scavenger hunt.'],
      ],
      // A turn that asks something opens a question of its own: found by its own words and the message before.
      asked: [
        ['ann', statement],
        ['bob', 'Looks fun! Tell me everything, please.'],
        ['ann', 'Would you come along with us next time?'],
      ],
      // The statement two messages back is someone else's: not the answer's own thread.
      someoneElse: [
        ['cy', statement],
        ['bob', 'Looks fun! What games did you all play?'],
        ['ann', 'We played charades at ours, with my cousins.'],
      ],
    } as const;
    const found: Record<string, string[]> = {};
    for (const [channelId, said] of Object.entries(conversations)) {
      for (const [sender, content] of said) await mneme.ingest({ channelId, sender, content });
      await mneme.whenIdle();
      const result = await mneme.recall({ query: 'picnic with friends from church', viewer: { channelId } });
      found[channelId] = result.hits.map((hit) => hit.memory.content);
    }
    // Bob's reply is found by the statement before it, as every turn is by the message it answers.
    expect(found).toEqual({
      answered: [
        `Ann: ${statement}`,
        'Bob: Looks fun! What games did you all play?',
        'Ann: Some fun ones like charades and a scavenger hunt.',
      ],
      asked: [`Ann: ${statement}`, 'Bob: Looks fun! Tell me everything, please.'],
      someoneElse: [`Cy: ${statement}`, 'Bob: Looks fun! What games did you all play?'],
    });
  });

  it('stores a message with no reply as a turn only when it is over 20 characters, spaces aside', async () => {
    const { mneme } = await engine({ extractor: 'none' });
    await mneme.ingest({ channelId: 'tea', sender: 'oz', content: '   I like tea very much   ' });
    await mneme.ingest({ channelId: 'tea', sender: 'oz', content: 'I like tea very much.' });
    await mneme.whenIdle();
    const turns = await memoriesOf(mneme, { category: 'exchange' });
    expect(turns.map((memory) => memory.content)).toEqual(['oz: I like tea very much.']);
  });

  it('gives exchange memories importance 0.5, or the policy exchangeImportance', async () => {
    const exchange = {
      channelId: 'dm',
      userId: 'oz',
      userMessage: 'How do I undo a commit?',
      assistantReply: 'git revert',
    };
    const usual = await engine({ extractor: 'none' });
    await usual.mneme.ingestExchange(exchange);
    await usual.mneme.whenIdle();
    expect((await memoriesOf(usual.mneme, { category: 'exchange' })).map((memory) => memory.importance)).toEqual([0.5]);
    const low = await engine({ extractor: 'none', policy: { ingest: { exchangeImportance: 0.2 } } });
    await low.mneme.ingestExchange(exchange);
    await low.mneme.whenIdle();
    expect((await memoriesOf(low.mneme, { category: 'exchange' })).map((memory) => memory.importance)).toEqual([0.2]);
  });

  it('stores a short message as a turn when it has a reply', async () => {
    const { mneme } = await engine({ extractor: 'none' });
    await mneme.ingestExchange({ channelId: 'tea', userId: 'oz', userMessage: 'Thanks!', assistantReply: 'Any time.' });
    await mneme.whenIdle();
    const turns = await memoriesOf(mneme, { category: 'exchange' });
    expect(turns.map((memory) => memory.content)).toEqual(['oz: Thanks!\nassistant: Any time.']);
  });
});

describe('chat commands', () => {
  it('/remember stores a pinned personal memory at the top importance, in the speaker name', async () => {
    const { mneme } = await engine();
    const result = await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: '/remember I am allergic to peanuts',
    });
    expect(result.command).toMatchObject({
      command: 'remember',
      reply: 'Remembered: "Oz is allergic to peanuts"',
      remembered: {
        content: 'Oz is allergic to peanuts',
        pinned: true,
        importance: 1,
        scope: 'personal',
        userId: 'oz',
        source: 'command',
        sourceMessageIds: [result.messages[0]?.id],
      },
    });
    await mneme.whenIdle();
    expect(await memoriesOf(mneme)).toHaveLength(1);
  });

  it('/remember without text says how to use it and stores nothing', async () => {
    const { mneme } = await engine();
    const result = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/remember' });
    expect(result.command).toMatchObject({
      command: 'remember',
      remembered: null,
      reply: expect.stringMatching(/^Usage/),
    });
    expect(await memoriesOf(mneme)).toEqual([]);
  });

  it("/forget archives the sender's matching memories it can see, and says how many", async () => {
    const { mneme } = await engine();
    await mneme.remember({ content: 'Oz prefers dark mode', scope: 'personal', userId: 'oz' });
    await mneme.remember({ content: 'Oz likes dark chocolate', scope: 'personal', userId: 'oz' });
    await mneme.remember({ content: 'Oz uses DARK mode at night', scope: 'room', channelId: 'c', userId: 'oz' });
    const ann = await mneme.remember({ content: 'Ann prefers dark mode', scope: 'personal', userId: 'ann' });
    const global = await mneme.remember({ content: 'The wiki has a dark mode' });
    const elsewhere = await mneme.remember({
      content: 'Oz wants dark mode',
      scope: 'room',
      channelId: 'other',
      userId: 'oz',
    });

    const result = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/forget dark mode' });
    expect(result.command?.reply).toBe('Forgot 2 memories matching "dark mode".');
    expect(result.command?.forgotten.map((memory) => memory.content).sort()).toEqual([
      'Oz prefers dark mode',
      'Oz uses DARK mode at night',
    ]);
    const active = (await memoriesOf(mneme)).map((memory) => memory.id);
    expect(active).toEqual(expect.arrayContaining([ann.id, global.id, elsewhere.id]));
    expect(active).toHaveLength(4);

    const again = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/forget dark*mode' });
    expect(again.command?.reply).toBe('Nothing to forget: no memory of yours matches "dark*mode".');
    const wildcard = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/FORGET dark*late' });
    expect(wildcard.command?.reply).toBe('Forgot 1 memory matching "dark*late".');
  });

  it('forgets in a batch what a /remember before it in the batch stored, and runs neither again for the batch retried', async () => {
    const { mneme } = await engine();
    const batch = [
      { channelId: 'c', sender: 'oz', content: '/remember I prefer dark mode', externalId: 'e1' },
      { channelId: 'c', sender: 'oz', content: '/remember I like green tea', externalId: 'e2' },
      { channelId: 'c', sender: 'oz', content: '/forget dark mode', externalId: 'e3' },
    ];
    const [remembered, kept, forgot] = await mneme.ingestMany(batch);
    expect(forgot?.command?.reply).toBe('Forgot 1 memory matching "dark mode".');
    expect(forgot?.command?.forgotten.map((memory) => memory.id)).toEqual([remembered?.command?.remembered?.id]);
    expect((await memoriesOf(mneme)).map((memory) => memory.content)).toEqual(['Oz likes green tea']);
    expect(kept?.command?.remembered?.sourceMessageIds).toEqual([kept?.messages[0]?.id]);

    const retried = await mneme.ingestMany(batch);
    expect(retried.map((result) => [result.duplicate, result.command])).toEqual([
      [true, null],
      [true, null],
      [true, null],
    ]);
    const all = await mneme.list({ limit: 500, archived: 'include' });
    expect(all.memories.map((memory) => memory.content).sort()).toEqual(['Oz likes green tea', 'Oz prefers dark mode']);
  });
});

describe('chat commands turned off', () => {
  it('keeps /remember and /forget as messages like any other when chatCommands is off', async () => {
    const { mneme } = await engine({ policy: { ingest: { chatCommands: false } } });
    const kept = await mneme.remember({ content: 'Oz prefers dark mode', scope: 'personal', userId: 'oz' });
    const remember = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/remember I am left-handed' });
    const forget = await mneme.ingestExchange({
      channelId: 'c',
      userId: 'oz',
      userMessage: '/forget dark mode',
      assistantReply: 'Done.',
    });
    expect(remember.command).toBeNull();
    expect(forget.command).toBeNull();
    await mneme.whenIdle();
    expect((await memoriesOf(mneme, { category: 'exchange' })).length).toBe(0);
    expect((await memoriesOf(mneme)).map((memory) => memory.id)).toEqual([kept.id]);
    expect((await mneme.turns({ channelId: 'c' })).map((turn) => turn.content)).toEqual([
      '/remember I am left-handed',
      '/forget dark mode',
      'Done.',
    ]);
  });
});

describe('skipping messages entirely', () => {
  const skipping = { ingest: { skip: { maxChars: 20, slashPrefixed: true } } };
  const fortyChars = 'I have two cats called Miso and Tofu now';

  it('stores no memory of any kind for a short message or one starting with /, and runs no command, but keeps them in the log', async () => {
    const { mneme } = await engine({ policy: skipping });
    const thanks = await mneme.ingestExchange({
      channelId: 'c',
      userId: 'oz',
      userName: 'Oz',
      userMessage: 'ok thanks',
      assistantReply: 'You are welcome, see you tomorrow!',
    });
    const command = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/remember x' });
    expect(thanks.command).toBeNull();
    expect(command.command).toBeNull();
    await mneme.whenIdle();
    expect((await mneme.list({ limit: 500 })).memories).toEqual([]);
    expect((await mneme.turns({ channelId: 'c' })).map((turn) => turn.content)).toEqual([
      'ok thanks',
      'You are welcome, see you tomorrow!',
      '/remember x',
    ]);
  });

  it('still extracts a longer message with a fact, and does not use a skipped message as its search context', async () => {
    expect(fortyChars).toHaveLength(40);
    const said = async (mneme: Mneme) => {
      await mneme.ingest({ channelId: 'c', sender: 'ann', senderName: 'Ann', content: 'zebras? really?' });
      await mneme.ingest({ channelId: 'c', sender: 'oz', senderName: 'Oz', content: fortyChars });
      await mneme.whenIdle();
      const found = await mneme.recall({ query: 'zebras', viewer: { channelId: 'c' } });
      return found.hits.map((hit) => hit.memory.content);
    };
    const skipped = await engine({ policy: skipping });
    expect(await said(skipped.mneme)).toEqual([]);
    expect((await memoriesOf(skipped.mneme)).map((memory) => memory.content)).toEqual([
      'Oz has two cats called Miso and Tofu now.',
    ]);
    const usual = await engine();
    expect(await said(usual.mneme)).toEqual([`Oz: ${fortyChars}`]);
  });

  it('leaves a skipped message out of conversation extraction', async () => {
    const { mneme } = await engine({
      policy: { ingest: { skip: { maxChars: 40 }, conversation: { enabled: false } } },
    });
    await mneme.ingest({ channelId: 'c', sender: 'oz', topicId: 't', content: fortyChars });
    await mneme.whenIdle();
    expect(await mneme.extract('t')).toMatchObject({ messages: 0, created: [] });
    expect(await memoriesOf(mneme)).toEqual([]);
  });

  it("keeps today's behaviour without the setting: an exchange memory for a short message with a reply, and the command", async () => {
    const { mneme } = await engine();
    await mneme.ingestExchange({
      channelId: 'c',
      userId: 'oz',
      userMessage: 'ok thanks',
      assistantReply: 'You are welcome, see you tomorrow!',
    });
    const command = await mneme.ingest({ channelId: 'c', sender: 'oz', content: '/remember x' });
    expect(command.command?.remembered).toMatchObject({ content: 'X', pinned: true });
    await mneme.whenIdle();
    expect((await memoriesOf(mneme, { category: 'exchange' })).map((memory) => memory.content)).toEqual([
      'oz: ok thanks\nassistant: You are welcome, see you tomorrow!',
    ]);
  });
});

describe('conversation extraction of a topic', () => {
  async function say(mneme: Mneme, topicId: string, count: number, minutesApart: number, from = 0) {
    for (let index = 0; index < count; index++) {
      await mneme.ingest({
        channelId: 'room-1',
        sender: 'oz',
        senderName: 'Oz',
        topicId,
        content: `I collect vintage postcards from city number ${from + index}`,
        createdAt: start + (from + index) * minutesApart * minute,
      });
    }
    await mneme.whenIdle();
  }
  const sessionMemories = async (mneme: Mneme) => memoriesOf(mneme, { scope: 'session' });

  it('runs by itself after 10 user messages of the topic', async () => {
    const { mneme } = await engine();
    await say(mneme, 't1', 9, 3);
    expect(await sessionMemories(mneme)).toEqual([]);
    await say(mneme, 't1', 1, 3, 9);
    const memories = await sessionMemories(mneme);
    expect(memories.length).toBeGreaterThan(0);
    for (const memory of memories) expect(memory).toMatchObject({ source: 'conversation', topicId: 't1' });
  });

  it('runs by itself when 3 pending user messages span 30 minutes', async () => {
    const { mneme } = await engine();
    await say(mneme, 't2', 3, 14);
    expect(await sessionMemories(mneme)).toEqual([]);
    await say(mneme, 't2', 1, 14, 3);
    expect((await sessionMemories(mneme)).length).toBeGreaterThan(0);
  });

  it('runs by itself when 5 user messages arrive within 5 minutes', async () => {
    const { mneme } = await engine();
    await say(mneme, 't3', 4, 1);
    expect(await sessionMemories(mneme)).toEqual([]);
    await say(mneme, 't3', 1, 1, 4);
    expect((await sessionMemories(mneme)).length).toBeGreaterThan(0);
  });

  it('waits while a topic is slow and short, and follows the policy when it is turned off', async () => {
    const { mneme } = await engine();
    await say(mneme, 't4', 4, 6);
    expect(await sessionMemories(mneme)).toEqual([]);
    const manual = await engine({ policy: { ingest: { conversation: { enabled: false } } } });
    await say(manual.mneme, 't5', 12, 1);
    expect(await sessionMemories(manual.mneme)).toEqual([]);
    const report = await manual.mneme.extract('t5');
    expect(report).toMatchObject({ topicId: 't5', messages: 12 });
    expect((await sessionMemories(manual.mneme)).length).toBeGreaterThan(0);
    expect(await manual.mneme.extract('t5')).toMatchObject({ messages: 0, created: [], updated: [] });
  });

  it('refuses an unknown topic', async () => {
    const { mneme } = await engine();
    expect((await refused(mneme.extract('nope'))).code).toBe(ErrorCode.NotFound);
  });

  it('leaves a work session of a project that is not managed to explicit extraction, and runs by itself for a topic with no project', async () => {
    const { mneme } = await engine();
    await mneme.createProject({ id: 'side', managed: false });
    await mneme.createTopic({ id: 'unmanaged', projectId: 'side' });
    await mneme.createTopic({ id: 'loose' });
    await say(mneme, 'unmanaged', 12, 1);
    expect(await sessionMemories(mneme)).toEqual([]);
    await say(mneme, 'loose', 12, 1, 100);
    const loose = await sessionMemories(mneme);
    expect(loose.length).toBeGreaterThan(0);
    for (const memory of loose) expect(memory.topicId).toBe('loose');
    expect(await mneme.extract('unmanaged')).toMatchObject({ topicId: 'unmanaged', messages: 12 });
    expect((await sessionMemories(mneme)).some((memory) => memory.topicId === 'unmanaged')).toBe(true);
  });
});

describe('work sessions', () => {
  async function work(mneme: Mneme, sessionId: string, count: number) {
    for (let index = 0; index < count; index++) {
      await mneme.ingestExchange({
        channelId: `ide-${sessionId}`,
        userId: 'dev',
        userName: 'Dev',
        topicId: sessionId,
        userMessage: `Remember that the billing service number ${index} deploys from the release branch`,
        assistantReply: 'Understood.',
      });
    }
    await mneme.whenIdle();
  }

  it('extracts a session of a managed project every 10 user messages, into the project', async () => {
    const { mneme } = await engine({ policy: { ingest: { conversation: { enabled: false } } } });
    await mneme.createProject({ id: 'billing', name: 'Billing', managed: true });
    await mneme.createTopic({ id: 's1', projectId: 'billing', title: 'Refactor' });
    await work(mneme, 's1', 9);
    expect(await memoriesOf(mneme, { scope: 'project' })).toEqual([]);
    await work(mneme, 's1', 1);
    const memories = await memoriesOf(mneme, { scope: 'project' });
    expect(memories.length).toBeGreaterThan(0);
    for (const memory of memories) expect(memory).toMatchObject({ source: 'work', projectId: 'billing' });
  });

  it('never extracts work from a session whose project is not managed', async () => {
    const { mneme } = await engine();
    await mneme.createProject({ id: 'side', managed: false });
    await mneme.createTopic({ id: 's2', projectId: 'side' });
    await work(mneme, 's2', 10);
    expect(await memoriesOf(mneme, { scope: 'project' })).toEqual([]);
    const error = await refused(mneme.extractWork('s2'));
    expect(error.code).toBe(ErrorCode.Conflict);
    expect(error.message).toMatch(/managed/);
    expect((await refused(mneme.workSessionViewer('s2'))).code).toBe(ErrorCode.Conflict);
  });

  it('shows a work session global memories and those of its project only', async () => {
    const { mneme } = await engine();
    await mneme.createProject({ id: 'billing', managed: true });
    await mneme.createTopic({ id: 's3', projectId: 'billing' });
    const viewer = await mneme.workSessionViewer('s3');
    expect(viewer).toEqual({ projectId: 'billing' });
    const global = await mneme.remember({ content: 'Deploys freeze on Fridays' });
    const project = await mneme.remember({ content: 'Billing uses Stripe', scope: 'project', projectId: 'billing' });
    await mneme.remember({ content: 'Dev prefers vim', scope: 'personal', userId: 'dev' });
    await mneme.remember({ content: 'Other uses Adyen', scope: 'project', projectId: 'other' });
    const visible = await memoriesOf(mneme, { viewer });
    expect(visible.map((memory) => memory.id).sort()).toEqual([global.id, project.id].sort());
  });

  it('refuses a topic in a project that does not exist', async () => {
    const { mneme } = await engine();
    expect((await refused(mneme.createTopic({ id: 't', projectId: 'ghost' }))).code).toBe(ErrorCode.NotFound);
  });
});

describe('turn memory', () => {
  it('returns the last N turns of a channel, oldest first, and never more than 50', async () => {
    const { mneme } = await engine({ extractor: 'none', policy: { ingest: { exchangeMemories: false } } });
    for (let index = 0; index < 60; index++) {
      await mneme.ingest({ channelId: 'c', sender: 'oz', content: `turn ${index}`, createdAt: start + index });
    }
    await mneme.ingest({ channelId: 'elsewhere', sender: 'oz', content: 'not this one' });
    const contents = async (count?: number) =>
      (await mneme.turns({ channelId: 'c', ...(count === undefined ? {} : { count }) })).map((turn) => turn.content);
    expect(await contents()).toEqual(Array.from({ length: 10 }, (_, index) => `turn ${50 + index}`));
    expect(await contents(50)).toEqual(Array.from({ length: 50 }, (_, index) => `turn ${10 + index}`));
    expect((await refused(mneme.turns({ channelId: 'c', count: 51 }))).message).toMatch(/at most 50/);
  });
});

describe('ingest that joins only new spaces (a stdio MCP session of one user)', () => {
  const only = { joinsOnlyNewSpaces: true };

  it('starts a new channel and topic with the sender their member, and refuses an existing topic the sender left', async () => {
    const { mneme } = await engine();
    await mneme.ingest({ channelId: 'notes', sender: 'ann', topicId: 'garden', content: 'I water the ferns' }, only);
    expect((await mneme.channel('notes')).members).toEqual(['ann']);
    const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann' });
    await ann.list({ viewer: { topicId: 'garden' } });

    await mneme.createTopic({ id: 'garden', members: ['bob'] });
    const error = await refused(
      mneme.ingestExchange(
        { channelId: 'notes', userId: 'ann', topicId: 'garden', userMessage: 'Back in', assistantReply: 'Noted.' },
        only,
      ),
    );
    expect(error.code).toBe(ErrorCode.Forbidden);
    expect(error.message).toContain('topic garden');
    expect((await refused(ann.list({ viewer: { topicId: 'garden' } }))).code).toBe(ErrorCode.Forbidden);
    expect((await mneme.messages({ channelId: 'notes' })).messages.map((message) => message.content)).toEqual([
      'I water the ferns',
    ]);
  });

  it('refuses a topic whose project the sender is not a member of, though a member of the topic and channel', async () => {
    const { mneme } = await engine();
    await mneme.putChannel({ id: 'desk', members: ['ann'] });
    await mneme.createProject({ id: 'apollo', members: ['bob'] });
    await mneme.createTopic({ id: 'launch', projectId: 'apollo', members: ['ann', 'bob'] });
    const error = await refused(
      mneme.ingestMany([{ channelId: 'desk', sender: 'ann', topicId: 'launch', content: 'Let me in' }], only),
    );
    expect(error.code).toBe(ErrorCode.Forbidden);
    expect(error.message).toContain('project apollo');
    expect((await mneme.messages({ channelId: 'desk' })).messages).toEqual([]);
  });
});
