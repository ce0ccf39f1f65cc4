import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type LoopbackReply, startLoopbackServer } from './loopback-server.js';

/**
 * A topic's conversation extraction checks that every member of the topic may read the message's channel
 * (ADR 5). With a chat model the step holds the store only after the model answered (ADR 19): an audience
 * changed while the model was thinking must be seen inside the hold, before the memory is written.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-topic-race-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const fact = JSON.stringify({
  facts: [
    { content: 'Ann keeps the safe code in her blue notebook', category: 'fact', importance: 0.5, scope: 'personal' },
  ],
});

describe('a topic extraction whose audience changes while its model answers', () => {
  for (const [index, [change, narrow]] of (
    [
      [
        'a user who cannot read the channel joins the topic',
        (mneme: Mneme) => mneme.createTopic({ id: 'vault', members: ['ann', 'dave'] }),
      ],
      [
        'a member of the topic is taken from the channel',
        (mneme: Mneme) => mneme.putChannel({ id: 'office', members: ['ann'] }),
      ],
    ] as const
  ).entries()) {
    it(`writes no topic memory when ${change}`, async () => {
      let mneme: Mneme | undefined;
      let chats = 0;
      const server = await startLoopbackServer(async (request): Promise<LoopbackReply> => {
        if (request.path === '/api/tags') return { json: { models: [{ name: 'llama3.2:latest' }] } };
        if (request.path !== '/api/chat') return { status: 404, text: '404 page not found' };
        chats++;
        // The second call is the topic's conversation extraction: the audience changes before it answers.
        if (chats === 2 && mneme) await narrow(mneme);
        return {
          json: { model: 'llama3.2', message: { role: 'assistant', content: fact }, done: true, done_reason: 'stop' },
        };
      });
      mneme = await createMneme({
        path: join(folder, `race-${index}.db`),
        chat: 'ollama',
        providers: { ollamaUrl: server.url },
        logger: { warn: () => {}, info: () => {} },
      });
      try {
        await mneme.setPolicy({ settings: { 'ingest.conversation.userMessages': 1 } });
        await mneme.putChannel({ id: 'office', members: ['ann', 'carl'] });
        await mneme.createTopic({ id: 'vault', members: ['ann', 'carl'] });
        await mneme.ingest({
          channelId: 'office',
          sender: 'ann',
          senderName: 'Ann',
          topicId: 'vault',
          content: 'I keep the safe code in my blue notebook',
        });
        await mneme.whenIdle();
        expect(chats).toBe(2);
        const sessions = (await mneme.list({ scope: 'session', limit: 100 })).memories;
        expect(sessions.map((memory) => memory.content)).toEqual([]);
        // The channel's own step wrote Ann's personal fact, as before.
        const personal = (await mneme.list({ scope: 'personal', limit: 100 })).memories;
        expect(personal.map((memory) => memory.content)).toEqual(['Ann keeps the safe code in her blue notebook']);
      } finally {
        await mneme.close();
        await server.close();
      }
    });
  }
});
