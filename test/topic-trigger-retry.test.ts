import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { type LoopbackReply, startLoopbackServer } from './loopback-server.js';

/**
 * With a chat-model extractor, a topic's triggers (its conversation extraction, which calls the model) run
 * after the channel's step has committed (ADR 19, 2026-12-03). A model that fails that call must not lose
 * the topic's extraction: the channel is no longer pending, so the worker's catch-up pass alone would
 * never come back to it.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-trigger-retry-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * An Ollama-speaking chat model that answers one fact to its first call, then fails until `healed` (404: the model
 * was removed, until it is pulled again; a 400 refuses the input itself, which gives that input no facts instead).
 */
async function startModel() {
  const state = { healed: false, chats: 0 };
  const content = JSON.stringify({
    facts: [{ content: 'Ann likes green tea', category: 'preference', importance: 0.5, scope: 'personal' }],
  });
  const server = await startLoopbackServer(async (request): Promise<LoopbackReply> => {
    if (request.path === '/api/tags') return { json: { models: [{ name: 'llama3.2:latest' }] } };
    if (request.path !== '/api/chat') return { status: 404, text: '404 page not found' };
    state.chats++;
    if (state.chats > 1 && !state.healed)
      return { status: 404, json: { error: "model 'llama3.2' not found, try pulling it first" } };
    return { json: { model: 'llama3.2', message: { role: 'assistant', content }, done: true, done_reason: 'stop' } };
  });
  return { server, state };
}

describe('a topic trigger whose model call fails after the channel step committed', () => {
  it("retries the topic's conversation extraction on the next catch-up pass, and runs it once", async () => {
    const { server, state } = await startModel();
    const warnings: string[] = [];
    const mneme = await createMneme({
      path: join(folder, 'trigger.db'),
      chat: 'ollama',
      providers: { ollamaUrl: server.url },
      logger: { warn: (message: string) => warnings.push(message) },
    });
    try {
      await mneme.setPolicy({ settings: { 'ingest.conversation.userMessages': 1 } });
      await mneme.createTopic({ id: 'tea' });
      await mneme.whenIdle();
      // The channel's step gets its answer; the topic's extraction, the model's second call, fails.
      await mneme.ingest({
        channelId: 'kitchen',
        sender: 'ann',
        senderName: 'Ann',
        content: 'I drink green tea every morning',
        topicId: 'tea',
      });
      await mneme.whenIdle();
      const before = await mneme.list({ limit: 100 });
      expect(before.memories.filter((memory) => memory.scope === 'session')).toEqual([]);
      expect(warnings.some((warning) => warning.includes('answered 404'))).toBe(true);

      state.healed = true;
      await mneme.whenIdle();
      const after = await mneme.list({ limit: 100 });
      const session = after.memories.filter((memory) => memory.scope === 'session');
      expect(session.map((memory) => [memory.content, memory.topicId])).toEqual([['Ann likes green tea', 'tea']]);
      // Once: a later pass finds nothing owed.
      const chats = state.chats;
      await mneme.whenIdle();
      expect(state.chats).toBe(chats);
    } finally {
      await mneme.close();
      await server.close();
    }
  });

  it('runs it at the next start when the process ended before retrying it (the owed topics are not kept)', async () => {
    const { server, state } = await startModel();
    const path = join(folder, 'restart.db');
    const open = () =>
      createMneme({ path, chat: 'ollama', providers: { ollamaUrl: server.url }, logger: { warn: () => {} } });
    const sessionMemories = async (mneme: Awaited<ReturnType<typeof open>>) =>
      (await mneme.list({ limit: 100 })).memories.filter((memory) => memory.scope === 'session');
    try {
      const first = await open();
      await first.setPolicy({ settings: { 'ingest.conversation.userMessages': 1 } });
      await first.createTopic({ id: 'tea' });
      await first.ingest({
        channelId: 'kitchen',
        sender: 'ann',
        content: 'I drink green tea every morning',
        topicId: 'tea',
      });
      await first.whenIdle();
      expect(await sessionMemories(first)).toEqual([]);
      // The process ends with the topic owed (as a crash between the channel's commit and the trigger would).
      await first.close();

      state.healed = true;
      const second = await open();
      try {
        await second.whenIdle();
        expect((await sessionMemories(second)).map((memory) => memory.topicId)).toEqual(['tea']);
      } finally {
        await second.close();
      }
    } finally {
      await server.close();
    }
  });
});
