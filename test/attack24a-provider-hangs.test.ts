import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createFixedClock } from '../src/testing.js';
import { type LoopbackReply, type LoopbackServer, startLoopbackServer } from './loopback-server.js';

let server: LoopbackServer | undefined;
const opened: Mneme[] = [];
const folders: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const mneme of opened.splice(0)) await mneme.close().catch(() => {});
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const clock = createFixedClock();
const fake = createFakeEmbeddingModel({ dimensions: 1536 });
const facts = JSON.stringify({ facts: [{ content: 'Oz keeps bees on the roof', category: 'fact' }] });

/** A provider whose chat completions and embeddings never answer while `state.hangs` says so. */
async function provider(state: { hangs: 'chat' | 'embeddings' | 'nothing' }): Promise<string> {
  server = await startLoopbackServer(async (request): Promise<LoopbackReply> => {
    if (request.path === '/v1/chat/completions') {
      if (state.hangs === 'chat') return { hang: true };
      return { json: { choices: [{ index: 0, message: { role: 'assistant', content: facts } }] } };
    }
    if (state.hangs === 'embeddings') return { hang: true };
    const { input } = request.body as { input: string[] };
    const vectors = await fake.embed(input, 'document');
    return { json: { data: vectors.map((vector, index) => ({ index, embedding: Array.from(vector) })) } };
  });
  return `${server.url}/v1`;
}

async function open(path: string, openaiUrl: string, models: { chat?: string; embedder?: string }): Promise<Mneme> {
  const mneme = await createMneme({
    path,
    clock,
    ...models,
    providers: { openaiUrl },
    logger: { warn: () => {}, info: () => {} },
  });
  opened.push(mneme);
  return mneme;
}

function databasePath(): string {
  const folder = mkdtempSync(join(tmpdir(), 'attack24a-'));
  folders.push(folder);
  return join(folder, 'mneme.db');
}

describe('attack24a: closing while a model provider never answers', () => {
  for (const hangs of ['chat', 'embeddings'] as const) {
    it(`does not wait for the ${hangs} call in progress, and the message is extracted once after the restart`, {
      timeout: 30_000,
    }, async () => {
      const state: { hangs: 'chat' | 'embeddings' | 'nothing' } = { hangs };
      const openaiUrl = await provider(state);
      const path = databasePath();
      const models = { chat: 'openai:gpt-4o-mini', embedder: 'openai:text-embedding-3-small' };
      const first = await open(path, openaiUrl, models);
      await first.ingestExchange({
        channelId: 'roof',
        userId: 'oz',
        userMessage: 'I keep bees on the roof of my building',
        assistantReply: 'How lovely',
      });
      // The worker is inside the call that never answers.
      const path0 = hangs === 'chat' ? '/v1/chat/completions' : '/v1/embeddings';
      await vi.waitFor(() => expect(server?.requests.some((request) => request.path === path0)).toBe(true), {
        timeout: 10_000,
      });
      await first.close();
      opened.splice(opened.indexOf(first), 1);

      state.hangs = 'nothing';
      const second = await open(path, openaiUrl, models);
      await second.whenIdle();
      const memories = (await second.list({ limit: 50 })).memories;
      expect(memories.filter((memory) => memory.content === 'Oz keeps bees on the roof')).toHaveLength(1);
      expect(memories.filter((memory) => memory.category === 'exchange')).toHaveLength(1);
      expect((await second.vectorStatus()).missing).toBe(0);
    });
  }
});

describe('attack24a: closing while a topic trigger owed from before waits on a chat model that never answers', () => {
  it('does not wait for it, and the conversation is extracted once after the restart', {
    timeout: 30_000,
  }, async () => {
    const state: { chat: 'fails' | 'hangs' | 'answers' } = { chat: 'fails' };
    server = await startLoopbackServer((): LoopbackReply => {
      if (state.chat === 'fails') return { status: 401, json: { error: { message: 'not now' } } };
      if (state.chat === 'hangs') return { hang: true };
      return { json: { choices: [{ index: 0, message: { role: 'assistant', content: facts } }] } };
    });
    const openaiUrl = `${server.url}/v1`;
    const path = databasePath();
    const first = await open(path, openaiUrl, { chat: 'openai:gpt-4o-mini' });
    // A burst of five user messages in one topic: its conversation rule is due; extraction fails meanwhile.
    for (let turn = 0; turn < 5; turn++) {
      await first.ingestExchange({
        channelId: 'roof',
        topicId: 'bees',
        userId: 'oz',
        userMessage: `About my bees on the roof, part ${turn + 1}`,
        assistantReply: 'Go on',
        createdAt: new Date(Date.parse('2024-06-15T11:50:00.000Z') + turn * 30_000).toISOString(),
      });
    }
    await first.whenIdle();
    await first.close();
    opened.splice(opened.indexOf(first), 1);

    // The next engine owes the topic's triggers at its first catch-up pass: the model call never answers.
    state.chat = 'hangs';
    const asked = server.requests.length;
    const second = await open(path, openaiUrl, { chat: 'openai:gpt-4o-mini' });
    await vi.waitFor(() => expect(server?.requests.length).toBeGreaterThan(asked), { timeout: 10_000 });
    await second.close();
    opened.splice(opened.indexOf(second), 1);

    state.chat = 'answers';
    const third = await open(path, openaiUrl, { chat: 'openai:gpt-4o-mini' });
    await third.whenIdle();
    const memories = (await third.list({ limit: 100 })).memories;
    expect(memories.filter((memory) => memory.category === 'exchange')).toHaveLength(5);
    expect(
      memories.filter((memory) => memory.scope === 'session' && memory.content === 'Oz keeps bees on the roof'),
    ).toHaveLength(1);
  });
});

describe('attack24a: an embedding provider that never answers while the offline extractor extracts a message', () => {
  it('does not hold the store: reads, writes and another connection go on meanwhile', { timeout: 30_000 }, async () => {
    const state: { hangs: 'chat' | 'embeddings' | 'nothing' } = { hangs: 'embeddings' };
    const openaiUrl = await provider(state);
    const path = databasePath();
    // The default extractor (offline, answering in the process) and an embedding model that does I/O.
    const engine = await open(path, openaiUrl, { embedder: 'openai:text-embedding-3-small' });
    await engine.ingestExchange({
      channelId: 'roof',
      userId: 'oz',
      userMessage: 'I keep bees on the roof of my building',
      assistantReply: 'How lovely',
    });
    await vi.waitFor(() => expect(server?.requests.some((request) => request.path === '/v1/embeddings')).toBe(true), {
      timeout: 10_000,
    });
    // The embedding call is still waiting: the engine answers, and writes.
    expect((await engine.list()).memories).toEqual([]);
    await engine.ingest({ channelId: 'hall', sender: 'ann', content: 'The hall is booked for Friday evening' });
    // Another connection to the file writes too (it would wait for the write lock, then fail STORE_BUSY).
    const other = await createMneme({
      path,
      clock,
      busyTimeoutMs: 2000,
      extractor: 'none',
      logger: { warn: () => {}, info: () => {} },
    });
    await other.remember({ content: 'Ana grows figs' });
    await other.close();

    state.hangs = 'nothing';
    await server?.close();
    server = undefined;
    await engine.close();
    opened.splice(opened.indexOf(engine), 1);
    const restarted = await open(path, await provider(state), { embedder: 'openai:text-embedding-3-small' });
    await restarted.whenIdle();
    await restarted.reembed();
    const memories = (await restarted.list({ limit: 100 })).memories;
    expect(memories.filter((memory) => memory.category === 'exchange' && memory.channelId === 'roof')).toHaveLength(1);
    expect((await restarted.vectorStatus()).missing).toBe(0);
  });
});
