import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFixedClock } from '../src/testing.js';
import { type LoopbackServer, type RecordedRequest, startLoopbackServer } from './loopback-server.js';

let server: LoopbackServer | undefined;
let mneme: Mneme | undefined;
afterEach(async () => {
  await mneme?.close();
  mneme = undefined;
  await server?.close();
  server = undefined;
});

const HOUR_MS = 60 * 60 * 1000;

function promptOf(request: RecordedRequest): string {
  return ((request.body as { messages?: Array<{ content: string }> }).messages ?? []).map((m) => m.content).join('\n');
}

describe('attack24a: a chat model that answers one window of a channel with a summary it cannot use, every time', () => {
  it('does not stop the episodes of the channel at that window: the later windows get theirs', async () => {
    server = await startLoopbackServer((request) => {
      const prompt = promptOf(request);
      const content = prompt.includes('kayak')
        ? JSON.stringify({ summary: `Oz talked about kayaks ${'at great length '.repeat(60)}` })
        : prompt.includes('"summary"')
          ? JSON.stringify({ summary: 'Oz and the assistant planned a garden.' })
          : JSON.stringify({ facts: [] });
      return { json: { choices: [{ index: 0, message: { role: 'assistant', content } }] } };
    });
    const clock = createFixedClock('2024-06-15T08:00:00.000Z');
    const warnings: string[] = [];
    mneme = await createMneme({
      path: ':memory:',
      clock,
      chat: 'openai:gpt-4o-mini',
      providers: { openaiUrl: `${server.url}/v1` },
      logger: { warn: (text) => warnings.push(text), info: () => {} },
    });
    const windows = [
      { at: '2024-06-15T08:00:00.000Z', topic: 'my kayak trip down the river' },
      { at: '2024-06-15T10:00:00.000Z', topic: 'the garden beds we are planning' },
    ];
    for (const window of windows) {
      for (let turn = 0; turn < 2; turn++) {
        await mneme.ingestExchange({
          channelId: 'chat',
          userId: 'oz',
          userMessage: `Tell me more about ${window.topic}, part ${turn + 1}`,
          assistantReply: `Sure, here is more about ${window.topic}`,
          createdAt: new Date(Date.parse(window.at) + turn * 60_000).toISOString(),
        });
      }
    }
    await mneme.whenIdle();
    clock.set(Date.parse('2024-06-15T10:00:00.000Z') + 2 * HOUR_MS);
    await mneme.maintain({ tasks: ['episodes'] });
    await mneme.maintain({ tasks: ['episodes'] });
    const episodes = (await mneme.list({ limit: 100 })).memories.filter((memory) => memory.category === 'episode');
    expect(episodes.map((episode) => episode.content)).toContain('Oz and the assistant planned a garden.');
    expect(episodes).toHaveLength(2);
    expect(warnings.join('\n')).toMatch(/kayak|summary/);
  });
});
