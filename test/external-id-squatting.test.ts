import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';

/**
 * Attack finding (wt-attack, 2026-12-01): an `externalId` was unique per channel, whoever sent the
 * message. A member with a user key could post first under an id a chat bridge (administrator key) would
 * use later for another user's message; the bridge's message was then acknowledged (202, `duplicate:
 * true`, the squatter's message in its answer) and never stored. An id is now unique per channel and
 * sender (ADR 14, 2026-12-01).
 */
/** A team channel of ann and bob, a bridge's administrator key, ann's user key, and a POST through the HTTP app. */
async function team() {
  const mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  const bridge = (await mneme.apiKeys.create({ label: 'slack bridge' })).key;
  const ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
  await mneme.putChannel({ id: 'team', members: ['ann', 'bob'] });
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const call = (key: string, path: string, body: unknown) =>
    app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return { mneme, bridge, ann, call };
}

describe("a member squatting a bridge's external id", () => {
  it("does not make the bridge's later message for another user be acknowledged and dropped", async () => {
    const { mneme, bridge, ann, call } = await team();
    try {
      const post = (key: string, body: unknown) => call(key, '/api/messages', body);

      const squat = await post(ann, {
        channelId: 'team',
        sender: 'ann',
        content: 'ok',
        externalId: 'slack:1733050000.000200',
      });
      expect(squat.status).toBe(202);
      const real = {
        channelId: 'team',
        sender: 'bob',
        content: 'The release is moved to Friday, tell the customers',
        externalId: 'slack:1733050000.000200',
      };
      const answer = await post(bridge, real);
      const stored = await mneme.turns({ channelId: 'team', count: 50 });
      const kept = stored.some((message) => message.senderId === 'bob' && message.content === real.content);
      // Either bob's message is stored, or the bridge is told it was not (a 4xx): never a 2xx and nothing.
      expect(kept || answer.status >= 400).toBe(true);
    } finally {
      await mneme.close();
    }
  });

  it("gives a user key no way to name the assistant's messages, so a bridge's later reply under that id is stored", async () => {
    const { mneme, bridge, ann, call } = await team();
    try {
      const squatted = 'slack:1733050000.000300';
      const exchange = {
        channelId: 'team',
        userId: 'ann',
        userMessage: 'ok',
        assistantReply: 'noted',
        assistantId: 'bot',
        replyExternalId: squatted,
      };
      const asBot = { channelId: 'team', sender: 'bot', role: 'assistant', content: 'noted', externalId: squatted };
      const attempts = [
        await call(ann, '/api/exchanges', exchange),
        await call(ann, '/api/messages', asBot),
        await call(ann, '/api/messages/batch', { messages: [exchange] }),
        await call(ann, '/api/messages/batch', { messages: [asBot] }),
      ];
      expect(attempts.map((answer) => answer.status)).toEqual([403, 403, 403, 403]);
      expect(await mneme.turns({ channelId: 'team', count: 50 })).toEqual([]);

      const reply = { ...asBot, content: 'The release moved to Friday; I told the customers' };
      const answer = await call(bridge, '/api/messages', reply);
      expect(answer.status).toBe(202);
      expect(((await answer.json()) as { duplicate: boolean }).duplicate).toBe(false);
      const stored = await mneme.turns({ channelId: 'team', count: 50 });
      expect(stored.map((message) => [message.senderId, message.externalId, message.content])).toEqual([
        ['bot', squatted, reply.content],
      ]);
    } finally {
      await mneme.close();
    }
  });
});
