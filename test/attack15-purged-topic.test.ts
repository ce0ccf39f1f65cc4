import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

const quiet = { warn: () => {}, info: () => {} };
let mneme: Mneme | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await mneme?.close();
  server = undefined;
  mneme = undefined;
});

/**
 * Attack finding (wt-attack15): ingest remembered, for the life of the process, every topic it had
 * created. A purge deletes a topic only its user spoke in; a later message into that topic (accepted,
 * 202) was then appended without its topic row, and every extraction of its channel failed on the
 * memories' foreign key to `topics`: no memory of that message nor of any later one in the channel,
 * retried and failing until the process restarted; extracting the topic said it did not exist.
 */
describe('a message into a topic a purge deleted, in the same process', () => {
  it('is extracted, and the channel after it too: the topic exists again', async () => {
    const warnings: string[] = [];
    mneme = await createMneme({ path: ':memory:', logger: { ...quiet, warn: (line) => warnings.push(line) } });
    server = await startHttpServer({ mneme, port: 0 });
    const post = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server?.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const say = (sender: string, content: string, topicId?: string) =>
      post('POST', '/api/messages', { channelId: 'desk', sender, content, ...(topicId ? { topicId } : {}) });

    expect((await say('xena', 'I keep my bicycle in the garden shed', 'trip')).status).toBe(202);
    await mneme.whenIdle();
    expect((await post('DELETE', '/api/users/xena/data')).status).toBe(200);

    expect((await say('yuri', 'I prefer black coffee in the morning', 'trip')).status).toBe(202);
    expect((await say('yuri', 'My sister lives in Lisbon near the river')).status).toBe(202);
    await mneme.whenIdle();

    expect(warnings.filter((line) => /FOREIGN KEY/.test(line))).toEqual([]);
    const listed = await post('GET', '/api/memories?userId=yuri&scope=personal');
    const contents = (listed.body.memories as Array<{ content: string }>).map((memory) => memory.content).join('\n');
    expect(contents).toMatch(/coffee/);
    expect(contents).toMatch(/Lisbon/);
    expect((await post('POST', '/api/memories/extract/trip')).status).toBe(200);
  });
});
