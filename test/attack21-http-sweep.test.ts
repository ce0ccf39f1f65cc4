import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Wt-attack21: every route of the HTTP face, as Bob's key, at Ann's direct channel, topic, project, memories (of every
 * kind maintenance writes: facts, session and project memories, episodes, merges, insights) and messages. No answer
 * may carry Ann's secret word.
 */
const SECRET = 'quokkamidnight';
const START = Date.parse('2026-03-02T08:00:00Z');
const HOUR = 3_600_000;

const dreamer: Dreamer = {
  id: 'quoting-dreamer',
  async dream(input) {
    return [
      {
        content: `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`,
        category: 'pattern',
        sourceIds: input.memories.map((memory) => memory.id),
      },
    ];
  },
};

let mneme: Mneme;
let annKey: string;
let bobKey: string;
let ids: number[] = [];
const messageIds: number[] = [];
const clock = createFixedClock(START);

beforeAll(async () => {
  mneme = await createMneme({
    path: ':memory:',
    embedder: createFakeEmbeddingModel(),
    clock,
    dreamer,
    logger: { warn: () => {}, info: () => {} },
  });
  await mneme.apiKeys.create({ label: 'ops' });
  annKey = (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
  bobKey = (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key;
  await mneme.putChannel({ id: 'dm-ann', visibility: 'direct', members: ['ann'] });
  await mneme.putChannel({ id: 'general', visibility: 'public', members: ['ann', 'bob'] });
  await mneme.putChannel({ id: 'bob-desk', members: ['bob'] });
  await mneme.createProject({ id: 'p-ann', members: ['ann'], managed: true });
  await mneme.createTopic({ id: 't-ann', members: ['ann'], projectId: 'p-ann' });
  const lines = [
    `I prefer the staging database password ${SECRET} for the vault`,
    `My locker combination is ${SECRET} and I keep it secret`,
    `I prefer the staging database password ${SECRET} for the vault, as I said`,
    `I live in Oslo and my bank pin is ${SECRET}`,
  ];
  for (const [index, content] of lines.entries()) {
    const {
      messages: [message],
    } = await mneme.ingest({
      channelId: 'dm-ann',
      sender: 'ann',
      senderName: 'Ann',
      topicId: 't-ann',
      content,
      createdAt: new Date(START + index * 10 * 60_000).toISOString(),
    });
    await mneme.ingest({
      channelId: 'dm-ann',
      sender: 'assistant',
      role: 'assistant',
      content: `Noted: ${content}`,
      replyTo: message?.id ?? 0,
      createdAt: new Date(START + index * 10 * 60_000 + 1000).toISOString(),
    });
  }
  await mneme.ingestExchange({
    channelId: 'dm-ann',
    userId: 'ann',
    userMessage: `Remind me of my vault password ${SECRET}`,
    assistantReply: `Your vault password is ${SECRET}.`,
  });
  for (const [sender, content] of [
    ['ann', 'Hello everyone in general, I prefer the vault meetings on Monday'],
    ['bob', 'Hello Ann, I prefer the vault meetings on Tuesday'],
  ] as const) {
    await mneme.ingest({ channelId: 'general', sender, senderName: sender === 'ann' ? 'Ann' : 'Bob', content });
  }
  await mneme.ingest({ channelId: 'bob-desk', sender: 'bob', senderName: 'Bob', content: 'I prefer tea at the vault' });
  await mneme.whenIdle();
  await mneme.extract('t-ann');
  await mneme.extractWork('t-ann');
  clock.set(START + 6 * HOUR);
  await mneme.maintain();
  await mneme.maintain({ tasks: 'dream' });
  ids = (await mneme.list({ limit: 500, archived: 'include' })).memories.map((memory) => memory.id);
  for (const channelId of ['dm-ann', 'general', 'bob-desk']) {
    for (const message of (await mneme.messages({ channelId, limit: 200 })).messages) messageIds.push(message.id);
  }
}, 60_000);

afterAll(async () => {
  await mneme.close();
});

async function call(key: string, method: string, path: string, body?: unknown) {
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
}

const viewers: Array<Record<string, string>> = [
  {},
  { userId: 'ann' },
  { channelId: 'dm-ann' },
  { topicId: 't-ann' },
  { projectId: 'p-ann' },
  { channelId: 'general' },
  { channelId: 'general', topicId: 't-ann' },
  { channelId: 'bob-desk' },
];

describe('the key of Bob at every route, about the spaces of Ann', () => {
  it('the world holds the secret in memories of every kind Ann reads', async () => {
    const all = (await mneme.list({ limit: 500, archived: 'include' })).memories;
    const kinds = new Set(all.filter((m) => m.content.includes(SECRET)).map((m) => `${m.scope}/${m.source}`));
    expect([...kinds].sort()).toEqual(expect.arrayContaining([expect.stringMatching(/^personal\//)]));
    const search = await call(annKey, 'POST', '/api/memories/search', {
      query: `vault password ${SECRET}`,
      topK: 50,
      viewer: { userId: 'ann', channelId: 'dm-ann', topicId: 't-ann', projectId: 'p-ann' },
    });
    expect(search.text).toContain(SECRET);
    console.log('kinds holding the secret:', [...kinds].sort().join(', '), 'memories:', ids.length);
  });

  it('no answer to Bob carries the secret', async () => {
    const leaks: string[] = [];
    const check = async (method: string, path: string, body?: unknown) => {
      const answer = await call(bobKey, method, path, body);
      if (answer.text.toLowerCase().includes(SECRET))
        leaks.push(`${method} ${path} ${JSON.stringify(body) ?? ''} -> ${answer.status}`);
      return answer;
    };
    const openapi = JSON.parse((await call(bobKey, 'GET', '/openapi.json')).text) as { paths: Record<string, object> };
    const routes = Object.entries(openapi.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const covered = new Set<string>();
    const query = 'vault password locker bank pin quokka Oslo staging database combination';
    for (const viewer of viewers) {
      const withBob = { ...viewer, ...(viewer.userId ? {} : { userId: 'bob' }) };
      const params = new URLSearchParams(viewer).toString();
      await check('POST', '/api/memories/search', { query, topK: 50, viewer: withBob });
      await check('POST', '/api/memories/search', { query, topK: 50, viewer: withBob, mode: 'recent-first' });
      await check('POST', '/api/context', { query, viewer: withBob });
      await check('POST', '/api/context', { query, viewer: withBob, conversationAware: true });
      await check('GET', `/api/memories?${params}&limit=200&archived=include`);
      await check('GET', `/api/memories?${params}&limit=200&userId=ann&archived=include`);
      for (const id of ids) {
        await check('GET', `/api/memories/${id}?${params}`);
        await check('GET', `/api/memories/${id}/history?${params}`);
        await check('GET', `/api/memories/${id}/links?${params}`);
        await check('GET', `/api/memories/${id}/sources?${params}`);
      }
    }
    for (const route of [
      'POST /api/memories/search',
      'POST /api/context',
      'GET /api/memories',
      'GET /api/memories/{id}',
      'GET /api/memories/{id}/history',
      'GET /api/memories/{id}/links',
      'GET /api/memories/{id}/sources',
    ])
      covered.add(route);
    for (const id of ids) {
      await check('PATCH', `/api/memories/${id}`, { importance: 0.9 });
      await check('DELETE', `/api/memories/${id}`);
      await check('POST', `/api/memories/${id}/restore`);
    }
    for (const route of ['PATCH /api/memories/{id}', 'DELETE /api/memories/{id}', 'POST /api/memories/{id}/restore'])
      covered.add(route);
    for (const channel of ['dm-ann', 'general', 'bob-desk']) {
      await check('GET', `/api/channels/${channel}`);
      await check('GET', `/api/channels/${channel}/messages?limit=200`);
      await check('GET', `/api/channels/${channel}/turns?count=50`);
      await check('PUT', `/api/channels/${channel}`, { members: ['ann', 'bob'] });
    }
    await check('GET', '/api/channels');
    for (const route of [
      'GET /api/channels/{id}',
      'GET /api/channels/{id}/messages',
      'GET /api/channels/{id}/turns',
      'PUT /api/channels/{id}',
      'GET /api/channels',
    ])
      covered.add(route);
    for (const messageId of messageIds) {
      await check('POST', '/api/messages', {
        channelId: 'general',
        sender: 'bob',
        content: `a reply ${messageId}`,
        replyTo: messageId,
      });
    }
    await check('POST', '/api/messages', { channelId: 'general', sender: 'bob', content: 'hi', topicId: 't-ann' });
    await check('POST', '/api/messages', { channelId: 'dm-ann', sender: 'bob', content: 'hi' });
    await check('POST', '/api/messages/batch', {
      messages: [{ channelId: 'general', sender: 'bob', content: `${SECRET.slice(0, 3)} /forget *` }],
    });
    await check('POST', '/api/messages', { channelId: 'general', sender: 'bob', content: '/forget *' });
    await check('POST', '/api/exchanges', {
      channelId: 'general',
      userId: 'bob',
      userMessage: 'hi',
      assistantReply: 'hello',
    });
    for (const body of [
      { content: 'note', channelId: 'dm-ann', scope: 'room' },
      { content: 'note', topicId: 't-ann', scope: 'session' },
      { content: 'note', projectId: 'p-ann', scope: 'project' },
      { content: 'note', userId: 'bob' },
    ])
      await check('POST', '/api/memories', body);
    await check('POST', '/api/memories/extract/t-ann');
    await check('POST', '/api/memories/extract-work/t-ann');
    await check('POST', '/api/topics', { id: 't-ann', members: ['ann', 'bob'] });
    await check('POST', '/api/projects', { id: 'p-ann', members: ['ann', 'bob'] });
    await check('PUT', '/api/users/ann', { displayName: 'Annie' });
    await check('DELETE', '/api/users/ann/data');
    await check('POST', '/api/maintenance/run', {});
    for (const path of ['/api/maintenance', '/api/analytics', '/api/stats', '/api/policy', '/api/health']) {
      await check('GET', path);
    }
    for (const route of [
      'POST /api/messages',
      'POST /api/messages/batch',
      'POST /api/exchanges',
      'POST /api/memories',
      'POST /api/memories/extract/{topicId}',
      'POST /api/memories/extract-work/{sessionId}',
      'POST /api/topics',
      'POST /api/projects',
      'PUT /api/users/{id}',
      'DELETE /api/users/{id}/data',
      'POST /api/maintenance/run',
      'GET /api/maintenance',
      'GET /api/analytics',
      'GET /api/stats',
      'GET /api/policy',
      'GET /api/health',
      'GET /openapi.json',
    ])
      covered.add(route);
    // Bob's own memories after all that: none quotes Ann.
    for (const viewer of viewers.slice(5)) {
      await check('POST', '/api/memories/search', { query, topK: 50, viewer: { ...viewer, userId: 'bob' } });
    }
    expect(routes.filter((route) => !covered.has(route))).toEqual([]);
    expect(leaks).toEqual([]);
  }, 120_000);
});

describe('the key of Bob over MCP (streamable HTTP, in process), about the spaces of Ann', () => {
  async function connect(headers: Record<string, string>): Promise<Client> {
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
    const transport = new StreamableHTTPClientTransport(new URL('http://mneme.test/mcp'), {
      requestInit: { headers: { Authorization: `Bearer ${bobKey}`, ...headers } },
      fetch: async (url, init) => app.request(String(url), init as RequestInit),
    });
    const client = new Client({ name: 'attack21', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('no tool or resource answer carries the secret', async () => {
    const leaks: string[] = [];
    const headerSets: Array<Record<string, string>> = [
      {},
      { 'Mneme-User': 'ann' },
      { 'Mneme-Channel': 'dm-ann' },
      { 'Mneme-Topic': 't-ann' },
      { 'Mneme-Project': 'p-ann' },
      { 'Mneme-Channel': 'general' },
    ];
    let connected = 0;
    const answered: string[] = [];
    for (const headers of headerSets) {
      let client: Client;
      try {
        client = await connect(headers);
      } catch (error) {
        if (String(error).toLowerCase().includes(SECRET)) leaks.push(`connect ${JSON.stringify(headers)}`);
        continue;
      }
      connected++;
      const record = (what: string, answer: unknown) => {
        if (JSON.stringify(answer).toLowerCase().includes(SECRET)) leaks.push(`${what} ${JSON.stringify(headers)}`);
      };
      const attempt = async (what: string, run: () => Promise<unknown>) => {
        try {
          record(what, await run());
        } catch (error) {
          record(what, String(error));
        }
      };
      const query = 'vault password locker bank pin quokka Oslo staging database combination';
      await attempt('recall', async () => {
        const answer = await client.callTool({ name: 'recall', arguments: { query, topK: 50 } });
        if (!answer.isError) answered.push(JSON.stringify(headers));
        return answer;
      });
      await attempt('context', () => client.callTool({ name: 'context', arguments: { query } }));
      await attempt('list', () => client.callTool({ name: 'list', arguments: { limit: 100 } }));
      await attempt('resources/list', () => client.listResources());
      for (const id of ids) {
        await attempt(`history ${id}`, () => client.callTool({ name: 'history', arguments: { id } }));
        await attempt(`resource ${id}`, () => client.readResource({ uri: `memory://${id}` }));
        await attempt(`update ${id}`, () => client.callTool({ name: 'update', arguments: { id, importance: 0.9 } }));
      }
      await attempt('forget pattern', () => client.callTool({ name: 'forget', arguments: { pattern: 'quokka*' } }));
      await attempt('stats', () => client.callTool({ name: 'stats', arguments: {} }));
      await client.close();
    }
    expect(connected).toBeGreaterThan(0);
    // The calls do reach the engine: Bob's own view answers.
    expect(answered).toEqual(expect.arrayContaining(['{}', '{"Mneme-Channel":"general"}']));
    expect(leaks).toEqual([]);
  }, 120_000);
});
