import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { openStorage } from '../src/config/open-storage.js';
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

/** The export's records of these types, as objects. */
async function records(engine: Mneme, ...types: string[]): Promise<Array<Record<string, unknown>>> {
  const found: Array<Record<string, unknown>> = [];
  for await (const line of engine.exportData()) {
    const record = JSON.parse(line) as Record<string, unknown>;
    if (types.includes(String(record.type))) found.push(record);
  }
  return found;
}

/**
 * Attack finding (wt-attack15): an append wrote its senders' new display names and its new topics
 * before the transaction of its messages, each on its own. A batch the store then refused (on
 * PostgreSQL, a NUL character in the 7th item: 422) was answered "nothing written", yet its first
 * item had renamed its sender (`senderName`) and created its topic.
 */
describe('a batch the store refuses at its 7th item', () => {
  it('writes nothing of it: no message, no display name, no topic (PostgreSQL, over HTTP)', async () => {
    mneme = await createMneme({ path: 'pglite:memory:', logger: quiet });
    await mneme.setDisplayName({ userId: 'ann', displayName: 'Ann' });
    server = await startHttpServer({ mneme, port: 0 });
    const item = (index: number, extra: object = {}) => ({
      channelId: 'desk',
      sender: 'ann',
      content: `message ${index} of the batch`,
      ...extra,
    });
    const messages = [
      item(1, { senderName: 'Mallory', topicId: 'fresh-topic' }),
      ...[2, 3, 4, 5, 6].map((index) => item(index)),
      item(7, { content: 'a NUL \u0000 in the seventh' }),
    ];
    const response = await fetch(`${server.url}/api/messages/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages }),
    });
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await records(mneme, 'message', 'topic', 'membership')).toEqual([]);
    expect(await records(mneme, 'user')).toMatchObject([{ id: 'ann', displayName: 'Ann' }]);

    // The same batch without the bad item is written whole, the name and the topic with it.
    const accepted = await fetch(`${server.url}/api/messages/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: messages.slice(0, 6) }),
    });
    expect(accepted.status).toBe(202);
    expect(await records(mneme, 'message')).toHaveLength(6);
    expect(await records(mneme, 'topic')).toMatchObject([{ id: 'fresh-topic' }]);
    expect(await records(mneme, 'user')).toMatchObject([{ id: 'ann', displayName: 'Mallory' }]);
  }, 60_000);
});

/**
 * Attack finding (wt-attack15): `createTopic` and `createProject` wrote the topic or project, then its
 * members, each on its own. A request the store refused at the members (on PostgreSQL, a member id with
 * a NUL character: 422, "nothing of the request stored") had already renamed the project and turned its
 * work extraction on (`managed`), or renamed the topic and moved it into another project.
 */
describe('POST /api/projects and /api/topics refused at their members', () => {
  it('change nothing: neither the project nor the topic nor any membership (PostgreSQL, over HTTP)', async () => {
    mneme = await createMneme({ path: 'pglite:memory:', logger: quiet });
    server = await startHttpServer({ mneme, port: 0 });
    const post = async (path: string, body: unknown) =>
      (
        await fetch(`${server?.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).status;
    expect(await post('/api/projects', { id: 'launch', name: 'Launch', members: ['ann'] })).toBe(201);
    expect(await post('/api/projects', { id: 'other', name: 'Other', members: ['bob'] })).toBe(201);
    expect(await post('/api/topics', { id: 'plans', title: 'Plans', projectId: 'launch', members: ['ann'] })).toBe(201);
    const before = await records(mneme, 'project', 'topic', 'membership');

    expect(
      await post('/api/projects', { id: 'launch', name: 'Renamed', managed: true, members: ['ann', 'x\u0000'] }),
    ).toBe(422);
    expect(
      await post('/api/topics', { id: 'plans', title: 'Moved', projectId: 'other', members: ['bob', 'y\u0000'] }),
    ).toBe(422);
    expect(await records(mneme, 'project', 'topic', 'membership')).toEqual(before);

    // Without the bad member, each is written whole.
    expect(await post('/api/topics', { id: 'plans', title: 'Moved', projectId: 'other', members: ['bob'] })).toBe(201);
    expect(await records(mneme, 'topic')).toMatchObject([{ id: 'plans', title: 'Moved', projectId: 'other' }]);
    expect((await records(mneme, 'membership')).filter((member) => member.kind === 'topic')).toMatchObject([
      { spaceId: 'plans', userId: 'bob' },
    ]);
  }, 60_000);
});

/**
 * Since ADR 43 the faces refuse a NUL before the store sees it, so the requests above no longer reach the store's
 * refusal. The store still takes back a project or topic whose members it refuses, in one transaction (PGlite).
 */
describe('the PostgreSQL store refusing the members of a project or topic', () => {
  it('keeps the project and the topic as they were, and their members', async () => {
    const storage = await openStorage({ path: 'pglite:memory:' });
    try {
      await storage.directory.putProject({ id: 'launch', name: 'Launch', managed: false }, 1, ['ann']);
      await storage.directory.putTopic({ id: 'plans', projectId: 'launch', title: 'Plans' }, 1, ['ann']);
      await expect(
        storage.directory.putProject({ id: 'launch', name: 'Renamed', managed: true }, 2, ['ann', 'x\u0000']),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(
        storage.directory.putTopic({ id: 'plans', projectId: null, title: 'Moved' }, 2, ['bob', 'y\u0000']),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(await storage.directory.getProject('launch')).toMatchObject({ name: 'Launch', managed: false });
      expect(await storage.directory.getTopic('plans')).toMatchObject({ title: 'Plans', projectId: 'launch' });
      expect(await storage.memberships.members('project', 'launch')).toEqual(['ann']);
      expect(await storage.memberships.members('topic', 'plans')).toEqual(['ann']);
    } finally {
      await storage.close();
    }
  }, 60_000);
});
