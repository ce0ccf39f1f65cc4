import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { ExtractedFact, FactExtractor } from '../src/core/ports/fact-extractor.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { createFixedClock } from '../src/testing.js';
import { type LoopbackReply, startLoopbackServer } from './loopback-server.js';

/**
 * Two engines (two processes' worth: each its own connections, worker and lease holder) on one store
 * extract the same fact of the same user from two channels at once. Each channel has its own lease, so
 * nothing orders the two runs but the store's write lock; the fact must still be one memory citing both
 * messages, as one engine extracting both channels writes. The extractor (a chat model on a loopback
 * server, or an in-process extractor) answers only once both runs have asked it, or after `ALONE_MS`
 * when only one can: a run that read the memories before it asked and decides on what it read then
 * cannot see the other's fact.
 */

const said = 'I moved to Lisbon in March';
const fact = 'Ann moved to Lisbon in March';
/** How long the first caller of the extractor waits for the second before answering alone. */
const ALONE_MS = 1500;
const clock = createFixedClock();

/** Resolves each `arrive()` once `parties` have arrived, or `ALONE_MS` after the first one (then at once for all). */
function barrier(parties: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    arrived: () => arrived,
    async arrive(): Promise<void> {
      arrived++;
      if (arrived >= parties) open();
      else if (arrived === 1) setTimeout(open, ALONE_MS).unref();
      await opened;
    },
  };
}

const facts: ExtractedFact[] = [{ content: fact, category: 'event', importance: 0.5, scope: 'personal' }];

/** An Ollama-speaking chat model whose first two extraction calls wait for each other. */
async function startBarrierModel() {
  const meeting = barrier(2);
  const server = await startLoopbackServer(async (request): Promise<LoopbackReply> => {
    if (request.path === '/api/tags') return { json: { models: [{ name: 'llama3.2:latest' }] } };
    if (request.path !== '/api/chat') return { status: 404, text: '404 page not found' };
    await meeting.arrive();
    const content = JSON.stringify({ facts });
    return { json: { model: 'llama3.2', message: { role: 'assistant', content }, done: true, done_reason: 'stop' } };
  });
  return { server, meeting };
}

/** An extractor that answers in the process (batched extraction), waiting for the other engine's call. */
function barrierExtractor(meeting: ReturnType<typeof barrier>): FactExtractor {
  return {
    id: 'barrier',
    inProcess: true,
    async extract(input) {
      await meeting.arrive();
      return input.userMessage === said ? facts : [];
    },
  };
}

type Kind = 'chat' | 'in-process';

/** Ann says the same in channel alpha to one engine and in channel beta to the other; both extract at once. */
async function race(path: string, kind: Kind) {
  const model = kind === 'chat' ? await startBarrierModel() : null;
  const meeting = model?.meeting ?? barrier(2);
  const open = () =>
    createMneme({
      path,
      clock,
      ...(model
        ? { chat: 'ollama', providers: { ollamaUrl: model.server.url } }
        : { extractor: barrierExtractor(meeting) }),
    });
  const engines: Mneme[] = [await open(), await open()];
  try {
    await Promise.all(engines.map((engine) => engine.whenIdle()));
    const [first, second] = engines as [Mneme, Mneme];
    await Promise.all([
      first.ingest({ channelId: 'alpha', sender: 'ann', senderName: 'Ann', content: said }),
      second.ingest({ channelId: 'beta', sender: 'ann', senderName: 'Ann', content: said }),
    ]);
    await Promise.all(engines.map((engine) => engine.whenIdle()));
    const { memories } = await first.list({ limit: 100 });
    const messages = [
      ...(await first.messages({ channelId: 'alpha' })).messages,
      ...(await first.messages({ channelId: 'beta' })).messages,
    ];
    return {
      met: meeting.arrived(),
      facts: memories
        .filter((memory) => memory.category !== 'exchange')
        .map((memory) => ({
          owner: `${memory.scope}:${memory.userId}`,
          content: memory.content,
          // In the order the two runs committed, which nothing fixes.
          cites: [...memory.sourceMessageIds].sort((a, b) => a - b),
        })),
      userMessages: messages.filter((message) => message.role === 'user').map((message) => message.id),
    };
  } finally {
    for (const engine of engines) await engine.close();
    await model?.server.close();
  }
}

/** One memory of Ann's, citing both messages: the second run to hold the store updated the first one's. */
function expectOneMemory(result: Awaited<ReturnType<typeof race>>) {
  expect(result.userMessages).toHaveLength(2);
  expect(result.facts).toEqual([
    { owner: 'personal:ann', content: fact, cites: [...result.userMessages].sort((a, b) => a - b) },
  ]);
}

describe('two engines extracting the same fact from two channels at once', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-race-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('one engine extracting both channels writes one memory (the dedup the races must keep)', async () => {
    const model = await startBarrierModel();
    const engine = await createMneme({
      path: join(folder, 'alone.db'),
      clock,
      chat: 'ollama',
      providers: { ollamaUrl: model.server.url },
    });
    try {
      for (const channelId of ['alpha', 'beta']) {
        await engine.ingest({ channelId, sender: 'ann', senderName: 'Ann', content: said });
        await engine.whenIdle();
      }
      const { memories } = await engine.list({ limit: 100 });
      const facts = memories.filter((memory) => memory.category !== 'exchange');
      // The second run shows the model the memory, and the chat extractor leaves out a fact a related memory
      // states word for word: nothing to write. In a race, the second run's model saw no memory, and the
      // fact is reconciled with the one found once it holds the store: updated, citing both messages.
      expect(facts.map((memory) => [memory.scope, memory.userId, memory.content, memory.sourceMessageIds])).toEqual([
        ['personal', 'ann', fact, [1]],
      ]);
    } finally {
      await engine.close();
      await model.server.close();
    }
  });

  it('on one SQLite file with a chat-model extractor, write one memory', async () => {
    const result = await race(join(folder, 'chat.db'), 'chat');
    expect(result.met).toBe(2);
    expectOneMemory(result);
  });

  it('on one SQLite file with an in-process extractor (batched), write one memory', async () => {
    expectOneMemory(await race(join(folder, 'in-process.db'), 'in-process'));
  });
});

describe.skipIf(!hasPostgresBinaries)('two engines on one PostgreSQL server (postgresql-15) extracting at once', () => {
  let server: TestPostgresServer;
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('with a chat-model extractor, write one memory', async () => {
    const result = await race(await server.database('chat'), 'chat');
    expect(result.met).toBe(2);
    expectOneMemory(result);
  });

  it('with an in-process extractor, write one memory', async () => {
    expectOneMemory(await race(await server.database('in_process'), 'in-process'));
  });
});
