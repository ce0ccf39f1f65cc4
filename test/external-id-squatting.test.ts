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
describe("a member squatting a bridge's external id", () => {
  it("does not make the bridge's later message for another user be acknowledged and dropped", async () => {
    const mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
    try {
      const bridge = (await mneme.apiKeys.create({ label: 'slack bridge' })).key;
      const ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
      await mneme.putChannel({ id: 'team', members: ['ann', 'bob'] });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const post = (key: string, body: unknown) =>
        app.request('/api/messages', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });

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
});
