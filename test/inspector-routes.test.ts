import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

/*
 * The routes the inspector reads, attacked with a second user's key: oz and ann share the kitchen
 * channel; ann also talks in her own direct channel, and her facts there become her personal memories.
 */

let mneme: Mneme;
/** A JSON answer, read loosely: the assertions say what each field must be. */
// biome-ignore lint/suspicious/noExplicitAny: the answers of seven routes, each asserted field by field
type Json = any;
interface Listed {
  content: string;
  memories: Array<{ scope: string }>;
}

let app: ReturnType<typeof createHttpApp>;
let send: (key: string, path: string) => Promise<{ status: number; body: Json }>;
const keys = { admin: '', oz: '', ann: '' };
let annMemoryId = 0;
let ozMemoryId = 0;

beforeAll(async () => {
  mneme = await createMneme({
    path: ':memory:',
    clock: createFixedClock('2026-03-02T09:00:00.000Z'),
    logger: { warn: () => {}, info: () => {} },
  });
  await mneme.putChannel({ id: 'kitchen', visibility: 'private', members: ['oz', 'ann'] });
  await mneme.putChannel({ id: 'ann-dm', visibility: 'direct', members: ['ann'] });
  await mneme.ingest({
    channelId: 'ann-dm',
    sender: 'ann',
    role: 'user',
    content: 'I live in Quillport and I keep bees',
  });
  await mneme.ingest({
    channelId: 'kitchen',
    sender: 'ann',
    role: 'user',
    content: 'I prefer rooibos tea over coffee',
  });
  await mneme.ingest({ channelId: 'kitchen', sender: 'oz', role: 'user', content: 'I prefer green tea over coffee' });
  await mneme.whenIdle();
  const ann = await mneme.list({ userId: 'ann' });
  const fromDm = ann.memories.find((memory) => memory.scope === 'personal' && memory.content.includes('Quillport'));
  if (!fromDm) throw new Error(`extraction wrote no memory of ann's dm: ${JSON.stringify(ann.memories)}`);
  annMemoryId = fromDm.id;
  ozMemoryId = (await mneme.remember({ content: 'Oz parks on level 3', scope: 'personal', userId: 'oz' })).id;
  keys.admin = (await mneme.apiKeys.create({ label: 'ops' })).key;
  keys.oz = (await mneme.apiKeys.create({ label: 'oz-app', userId: 'oz' })).key;
  keys.ann = (await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' })).key;
  app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  send = async (key, path) => {
    const response = await app.request(path, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, body: await response.json() };
  };
});

afterAll(async () => {
  await mneme.close();
});

describe("the inspector's routes under another user's key", () => {
  it("show ann the messages her memory came from, and oz neither the memory's sources nor that it exists", async () => {
    const own = await send(keys.ann, `/api/memories/${annMemoryId}/sources`);
    expect(own.status).toBe(200);
    expect(own.body.map((message: { content: string }) => message.content)).toEqual([
      'I live in Quillport and I keep bees',
    ]);
    const other = await send(keys.oz, `/api/memories/${annMemoryId}/sources`);
    expect(other.status).toBe(404);
    expect(JSON.stringify(other.body)).not.toContain('Quillport');
    expect((await send(keys.oz, `/api/memories/${annMemoryId}/sources?userId=ann`)).status).toBe(404);
    expect((await send(keys.oz, `/api/memories/${annMemoryId}/sources?channelId=ann-dm`)).status).toBe(403);
    expect((await send(keys.oz, `/api/memories/${ozMemoryId}/sources`)).body).toEqual([]);
  });

  it("lists only the channels a user belongs to, and refuses another user's direct channel", async () => {
    const oz = await send(keys.oz, '/api/channels');
    expect(oz.body.map((channel: { id: string }) => channel.id)).toEqual(['kitchen']);
    const admin = await send(keys.admin, '/api/channels');
    expect(admin.body.map((channel: { id: string }) => channel.id)).toEqual(['ann-dm', 'kitchen']);
    const refused = await send(keys.oz, '/api/channels/ann-dm/messages');
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).not.toContain('Quillport');
  });

  it("shows oz the shared channel's messages but not the memories extracted into ann's personal space", async () => {
    const oz = await send(keys.oz, '/api/channels/kitchen/messages');
    expect(oz.status).toBe(200);
    const byContent = new Map(oz.body.messages.map((message: Listed) => [message.content, message.memories]));
    const scopes = (content: string) =>
      (byContent.get(content) as Array<{ scope: string }>).map((memory) => memory.scope);
    expect(scopes('I prefer rooibos tea over coffee')).toEqual(['room']);
    expect(scopes('I prefer green tea over coffee')).toContain('personal');
    const admin = await send(keys.admin, '/api/channels/kitchen/messages');
    const annMessage = admin.body.messages.find((message: Listed) => message.content.includes('rooibos'));
    expect(annMessage.memories.map((memory: { scope: string }) => memory.scope)).toContain('personal');
  });

  it('pages messages with after and limit, and refuses a bad page with 422', async () => {
    const first = await send(keys.admin, '/api/channels/kitchen/messages?limit=1');
    expect(first.body.messages).toHaveLength(1);
    const next = await send(keys.admin, `/api/channels/kitchen/messages?limit=1&after=${first.body.nextAfterId}`);
    expect(next.body.messages[0].id).toBeGreaterThan(first.body.messages[0].id);
    expect(next.body.nextAfterId).toBeNull();
    expect((await send(keys.admin, '/api/channels/kitchen/messages?after=-1')).status).toBe(422);
    expect((await send(keys.admin, '/api/channels/kitchen/messages?limit=abc')).status).toBe(422);
    expect((await send(keys.admin, '/api/channels/kitchen/messages?limit=201')).status).toBe(422);
  });

  it('keeps maintenance state and analytics to administrators', async () => {
    for (const path of ['/api/maintenance', '/api/analytics']) {
      const refused = await send(keys.oz, path);
      expect(refused.status).toBe(403);
      expect(refused.body.title).toBe('Forbidden');
      expect((await send(keys.admin, path)).status).toBe(200);
    }
  });

  it('reports the extraction backlog and each task with its state', async () => {
    const status = (await send(keys.admin, '/api/maintenance')).body;
    expect(status.tasks.map((task: { task: string }) => task.task)).toEqual([
      'decay',
      'episodes',
      'consolidate',
      'link',
      'dream',
    ]);
    expect(status.extraction).toEqual([
      expect.objectContaining({ channelId: 'ann-dm', backlog: 0 }),
      expect.objectContaining({ channelId: 'kitchen', backlog: 0 }),
    ]);
    await mneme.ingest({ channelId: 'kitchen', sender: 'oz', role: 'user', content: 'I work at the harbour office' });
    const after = (await send(keys.admin, '/api/maintenance')).body;
    expect(after.extraction.find((row: { channelId: string }) => row.channelId === 'kitchen').backlog).toBe(1);
    expect((await send(keys.admin, '/api/analytics')).body.extractionBacklog).toBe(1);
    await mneme.whenIdle();
  });

  it("counts today's additions in the analytics series and its distributions over active memories", async () => {
    const series = (await send(keys.admin, '/api/analytics')).body;
    const stats = (await send(keys.admin, '/api/stats')).body;
    const total = (values: number[]) => values.reduce((sum, value) => sum + value, 0);
    expect(series.addedPerDay).toHaveLength(30);
    expect(series.addedPerDay.at(-1)).toEqual({ day: '2026-03-02', count: stats.total });
    expect(total(series.distributions.strength)).toBe(stats.active);
    expect(total(series.distributions.importance)).toBe(stats.active);
  });
});

describe("the inspector's pages", () => {
  it('serves the shell at every view path without a key, same-origin only, and its modules from the package', async () => {
    for (const path of [
      '/',
      '/search?q=tea&user=oz',
      '/analytics',
      '/memories',
      '/memories/12',
      '/conversations',
      '/maintenance',
    ]) {
      const page = await app.request(path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await page.text()).toContain('<script type="module" src="/inspector/inspector.js">');
    }
    for (const name of ['inspector.js', 'inspector-views.js', 'inspector-api.js']) {
      const module = await app.request(`/inspector/${name}`);
      expect(module.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(await module.text()).toMatch(/^\/\/ The inspector/);
    }
  });

  it('answers 404 problem+json for any other file or page', async () => {
    for (const path of [
      '/inspector/secrets.json',
      '/inspector/..%2F..%2Fpackage.json',
      '/memories/abc',
      '/elsewhere',
    ]) {
      const response = await app.request(path);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    }
  });
});
