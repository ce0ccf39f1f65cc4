import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { Mneme } from '../core/mneme.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import { createFixedClock } from '../testing.js';
import { createHttpApp } from './http-app.js';
import { ProblemSchema } from './http-problem.js';
import type { Route } from './http-route.js';
import { apiRoutes } from './http-routes.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-http-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The route of the table that answers `method path`, a literal path before a templated one. */
function routeOf(method: string, url: string): Route | undefined {
  const path = url.split('?')[0] ?? url;
  const matches = (route: Route) =>
    route.method === method.toLowerCase() && new RegExp(`^${route.path.replaceAll(/\{\w+\}/g, '[^/]+')}$`).test(path);
  return apiRoutes.find((route) => route.path === path && matches(route)) ?? apiRoutes.find(matches);
}

/** Every route whose success this file has parsed with the route's response schema. */
const checkedRoutes = new Set<Route>();

/** Parses a success with its route's response schema: the OpenAPI document describes what the API answers. */
async function checkResponse(method: string, path: string, response: Response): Promise<void> {
  const route = routeOf(method, path);
  if (!route || !response.ok) return;
  const parsed = route.response.safeParse(await response.clone().json());
  expect(parsed.error?.issues ?? [], `${method} ${path} answers what its response schema says`).toEqual([]);
  checkedRoutes.add(route);
}

describe('the HTTP API', () => {
  let mneme: Mneme;
  let app: ReturnType<typeof createHttpApp>;
  const errors: unknown[] = [];

  beforeEach(async () => {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2024-06-15T12:00:00.000Z'),
    });
    app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, maxBodyBytes: 4096, logError: (error) => errors.push(error) });
  });
  afterEach(async () => {
    await mneme.close();
  });

  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await app.request(path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    await checkResponse(method, path, response);
    return response;
  };

  afterAll(() => {
    const unchecked = apiRoutes.filter((route) => !checkedRoutes.has(route));
    expect(
      unchecked.map((route) => `${route.method.toUpperCase()} ${route.path}`),
      'every route answers a success in these tests, parsed with its response schema',
    ).toEqual([]);
  });

  async function expectProblem(response: Response, status: number, code: string, detail?: RegExp) {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ status, code, type: expect.any(String), title: expect.any(String) });
    expect(ProblemSchema.safeParse(problem).error?.issues ?? [], 'the Problem schema of the document').toEqual([]);
    if (detail) expect(problem.detail).toMatch(detail);
    expect(JSON.stringify(problem)).not.toMatch(/\n\s+at |\.ts:\d+/);
    return problem;
  }

  it('answers health without authentication and serves an OpenAPI 3.1 document of every route', async () => {
    await mneme.apiKeys.create({ label: 'admin' });
    expect(await (await send('GET', '/api/health')).json()).toEqual({ status: 'ok' });
    const document = (await (await send('GET', '/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> } }>>;
    };
    expect(document.openapi).toBe('3.1.0');
    const validation = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
    expect(validation.errors ?? []).toEqual([]);
    expect(validation.valid).toBe(true);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/api/memories', '/api/memories/{id}', '/api/memories/{id}/history', '/api/stats']),
    );
    const createSchema = document.paths['/api/memories']?.post?.requestBody?.content['application/json']?.schema;
    expect(createSchema).toMatchObject({
      type: 'object',
      required: ['content'],
      additionalProperties: false,
      properties: { scope: { enum: ['personal', 'room', 'project', 'session', 'global'] } },
    });
  });

  it("describes each route's access rule in the OpenAPI document, with the refusals it can answer", async () => {
    const { paths } = (await (await send('GET', '/openapi.json')).json()) as {
      paths: Record<
        string,
        Record<string, { description: string; security?: unknown[]; responses: Record<string, unknown> }>
      >;
    };
    const topics = paths['/api/topics']?.post;
    expect(topics?.description).toMatch(/administrator key only.*Why: .*cannot make itself a member/);
    expect(Object.keys(topics?.responses ?? {})).toEqual(['201', '401', '403', 'default']);
    for (const path of ['/api/memories/extract/{topicId}', '/api/memories/extract-work/{sessionId}']) {
      expect(paths[path]?.post?.description).toMatch(/administrator key only/);
      expect(paths[path]?.post?.responses).toHaveProperty('403');
    }
    expect(paths['/api/users/{id}/data']?.delete?.description).toMatch(/the user the request names/);
    expect(paths['/api/users/{id}/data']?.delete?.responses).toHaveProperty('403');
    const search = paths['/api/memories/search']?.post;
    expect(search?.description).toMatch(/any key; a key bound to a user acts as a viewer carrying its own userId/);
    expect(search?.description).toMatch(/names only channels .* it belongs to/);
    expect(Object.keys(search?.responses ?? {})).toEqual(['200', '401', '403', 'default']);
    expect(paths['/api/channels/{id}']?.put?.description).toMatch(/administrator key only/);
    const health = paths['/api/health']?.get;
    expect(health?.security).toEqual([]);
    expect(health?.description).toMatch(/no key needed/);
    // A probe learns that the database can no longer be served, and from what (the files went; wt-a).
    expect(Object.keys(health?.responses ?? {})).toEqual(['200', '503', 'default']);
    expect(health?.responses['503']).toMatchObject({
      description: expect.stringMatching(/^STORE_FAILED: the SQLite database file.*removed, moved or replaced/),
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    });
    expect(paths['/api/context']?.post?.responses['200']).toMatchObject({
      description: expect.stringMatching(/^`\{ text, hits, omitted, belowThreshold, words, vectorLeg \}`/),
    });
  });

  it('declares a channel and reads it back, and serves the policy the database runs under', async () => {
    const channel = { id: 'ops', visibility: 'public', members: ['ann', 'bob'] };
    const declared = await send('PUT', '/api/channels/ops', { visibility: 'public', members: ['ann', 'bob'] });
    expect(declared.status).toBe(200);
    expect(await declared.json()).toEqual(channel);
    expect(await (await send('GET', '/api/channels/ops')).json()).toEqual(channel);
    const policy = (await (await send('GET', '/api/policy')).json()) as Record<string, unknown>;
    expect(policy).toMatchObject({ preset: 'mneme', overrides: {}, version: 1, policy: { decay: 'ebbinghaus' } });
  });

  it('creates a manual memory with 201, clamping importance, and refuses session scope and project without its id', async () => {
    const created = await send('POST', '/api/memories', { content: 'Deploys go through Argo', importance: 3 });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ content: 'Deploys go through Argo', importance: 1, source: 'manual' });
    await expectProblem(
      await send('POST', '/api/memories', { content: 'x', scope: 'session', topicId: 't' }),
      422,
      'INVALID_INPUT',
      /session memories come from conversation extraction/,
    );
    const project = await expectProblem(
      await send('POST', '/api/memories', { content: 'x', scope: 'project' }),
      422,
      'INVALID_INPUT',
    );
    expect(project.errors).toEqual([{ path: 'projectId', message: 'scope project needs projectId' }]);
    expect((await mneme.list()).total).toBe(1);
  });

  it('refuses malformed JSON, wrong types, unknown fields, other media types and oversized bodies, changing nothing', async () => {
    await expectProblem(await send('POST', '/api/memories', '{"content": '), 400, 'MALFORMED_JSON');
    await expectProblem(
      await send('POST', '/api/memories', { content: 42 }),
      422,
      'INVALID_INPUT',
      /content must be a string/,
    );
    await expectProblem(
      await send('POST', '/api/memories', { content: 'x', importance: 'high' }),
      422,
      'INVALID_INPUT',
    );
    await expectProblem(
      await send('POST', '/api/memories', { content: 'x', colour: 'red' }),
      422,
      'INVALID_INPUT',
      /unknown field colour/,
    );
    await expectProblem(
      await app.request('/api/memories', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    await expectProblem(await send('POST', '/api/memories', { content: 'x'.repeat(5000) }), 413, 'PAYLOAD_TOO_LARGE');
    const chunked = new ReadableStream({
      start(controller) {
        for (let index = 0; index < 10; index++) controller.enqueue(new TextEncoder().encode(' '.repeat(1000)));
        controller.close();
      },
    });
    await expectProblem(
      await app.request('/api/memories', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chunked,
        duplex: 'half',
      } as RequestInit),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    await expectProblem(await send('GET', '/api/nowhere'), 404, 'NOT_FOUND');
    expect((await mneme.list({ archived: 'include' })).total).toBe(0);
  });

  it('reads, lists, edits, forgets, restores a memory and shows its history and links', async () => {
    const memory = (await (
      await send('POST', '/api/memories', { content: 'Oz likes tea', scope: 'personal', userId: 'oz' })
    ).json()) as {
      id: number;
    };
    expect((await (await send('GET', `/api/memories/${memory.id}`)).json()) as object).toMatchObject({
      content: 'Oz likes tea',
    });
    const listed = (await (await send('GET', '/api/memories?userId=oz&limit=5')).json()) as { total: number };
    expect(listed.total).toBe(1);
    await expectProblem(
      await send('GET', '/api/memories?limit=9999'),
      422,
      'INVALID_INPUT',
      /limit must be at most 500/,
    );
    await expectProblem(await send('GET', '/api/memories?colour=red'), 422, 'INVALID_INPUT', /unknown field colour/);

    const patched = await send('PATCH', `/api/memories/${memory.id}`, {
      content: 'Oz likes green tea',
      importance: -1,
    });
    expect(await patched.json()).toMatchObject({
      content: 'Oz likes green tea',
      importance: 0,
      embeddingModel: 'fake-64',
    });
    await expectProblem(
      await send('PATCH', `/api/memories/${memory.id}`, { id: 5 }),
      422,
      'INVALID_INPUT',
      /unknown field id/,
    );
    expect((await send('DELETE', `/api/memories/${memory.id}`)).status).toBe(200);
    expect((await mneme.get(memory.id)).archivedAt).not.toBeNull();
    await expectProblem(await send('PATCH', `/api/memories/${memory.id}`, { importance: 1 }), 409, 'CONFLICT');
    expect((await send('POST', `/api/memories/${memory.id}/restore`)).status).toBe(200);
    const history = (await (await send('GET', `/api/memories/${memory.id}/history`)).json()) as Array<{
      action: string;
    }>;
    expect(history.map((version) => version.action)).toEqual(['create', 'update', 'archive', 'restore']);
    expect(await (await send('GET', `/api/memories/${memory.id}/links`)).json()).toEqual([]);
    await expectProblem(await send('GET', '/api/memories/99999'), 404, 'NOT_FOUND', /memory 99999 does not exist/);
    await expectProblem(await send('GET', '/api/memories/abc'), 422, 'INVALID_INPUT', /id must be a positive integer/);
  });

  it('asks for a bearer key once keys exist, and keeps a user-bound key to its own user', async () => {
    const admin = await mneme.apiKeys.create({ label: 'ops' });
    const annKey = await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' });
    const asAdmin = { authorization: `Bearer ${admin.key}` };
    const asAnn = { authorization: `Bearer ${annKey.key}` };

    const missing = await expectProblem(await send('GET', '/api/memories'), 401, 'UNAUTHORIZED');
    expect(missing.detail).toMatch(/Authorization: Bearer/);
    expect((await send('GET', '/api/memories')).headers.get('www-authenticate')).toMatch(/^Bearer/);
    await expectProblem(
      await send('GET', '/api/memories', undefined, { authorization: 'Bearer mneme_000000000000_nope' }),
      401,
      'UNAUTHORIZED',
    );

    const bobSecret = (await (
      await send(
        'POST',
        '/api/memories',
        { content: 'Bob hides the key under the mat', scope: 'personal', userId: 'bob' },
        asAdmin,
      )
    ).json()) as { id: number };
    await send('POST', '/api/memories', { content: 'Ann runs on Tuesdays', scope: 'personal', userId: 'ann' }, asAnn);
    await send('POST', '/api/memories', { content: 'The office opens at 8' }, asAdmin);

    const annList = (await (await send('GET', '/api/memories', undefined, asAnn)).json()) as {
      memories: Array<{ content: string }>;
    };
    expect(annList.memories.map((memory) => memory.content).sort()).toEqual([
      'Ann runs on Tuesdays',
      'The office opens at 8',
    ]);
    const spoofed = (await (await send('GET', '/api/memories?userId=bob', undefined, asAnn)).json()) as {
      total: number;
    };
    expect(spoofed.total).toBe(0);
    await expectProblem(await send('GET', `/api/memories/${bobSecret.id}`, undefined, asAnn), 404, 'NOT_FOUND');
    await expectProblem(
      await send('GET', `/api/memories/${bobSecret.id}?userId=bob`, undefined, asAnn),
      404,
      'NOT_FOUND',
    );
    await expectProblem(await send('DELETE', `/api/memories/${bobSecret.id}`, undefined, asAnn), 404, 'NOT_FOUND');
    await expectProblem(
      await send('PATCH', `/api/memories/${bobSecret.id}`, { content: 'mine now' }, asAnn),
      404,
      'NOT_FOUND',
    );
    await expectProblem(await send('GET', `/api/memories/${bobSecret.id}/history`, undefined, asAnn), 404, 'NOT_FOUND');
    await expectProblem(
      await send('POST', '/api/memories', { content: 'Bob owes Ann', scope: 'personal', userId: 'bob' }, asAnn),
      403,
      'FORBIDDEN',
    );
    await expectProblem(await send('DELETE', '/api/users/bob/data', undefined, asAnn), 403, 'FORBIDDEN');
    await expectProblem(await send('GET', '/api/stats', undefined, asAnn), 403, 'FORBIDDEN');
    expect((await mneme.get(bobSecret.id)).content).toBe('Bob hides the key under the mat');

    const purge = await send('DELETE', '/api/users/ann/data', undefined, asAnn);
    expect(await purge.json()).toMatchObject({ userId: 'ann', memories: 1 });
    expect((await send('GET', '/api/stats', undefined, asAdmin)).status).toBe(200);

    await expectProblem(
      await send('GET', '/api/memories', undefined, asAnn),
      401,
      'UNAUTHORIZED',
      /unknown or revoked/,
    );
  });

  it('stays closed once a key existed: revoking every key does not reopen it, only an explicit open start does', async () => {
    expect((await send('GET', '/api/stats')).status).toBe(200);
    const only = await mneme.apiKeys.create({ label: 'ops' });
    await expectProblem(await send('GET', '/api/stats'), 401, 'UNAUTHORIZED');
    await mneme.apiKeys.revoke(only.prefix);
    expect(await mneme.apiKeys.hasAny()).toBe(false);
    await expectProblem(await send('GET', '/api/stats'), 401, 'UNAUTHORIZED');
    await expectProblem(await send('DELETE', '/api/users/ann/data'), 401, 'UNAUTHORIZED');

    const openApp = createHttpApp({ mneme, apiKeys: mneme.apiKeys, open: true });
    expect((await openApp.request('/api/stats')).status).toBe(200);
  });

  it('ingests messages and exchanges with 202, extracts in the background, and recalls with explained scores', async () => {
    expect((await send('PUT', '/api/users/oz', { displayName: 'Oz' })).status).toBe(200);
    const message = await send('POST', '/api/messages', {
      channelId: 'general',
      sender: 'oz',
      content: 'I prefer dark mode in every editor I use',
    });
    expect(message.status).toBe(202);
    expect(await message.json()).toMatchObject({ messages: [{ channelId: 'general', senderId: 'oz' }] });
    const exchange = await send('POST', '/api/exchanges', {
      channelId: 'general',
      userId: 'oz',
      userMessage: 'My sister lives in Oslo and I visit her every winter',
      assistantReply: 'Oslo in winter sounds lovely.',
    });
    expect(exchange.status).toBe(202);
    await mneme.whenIdle();

    const search = await send('POST', '/api/memories/search', {
      query: 'which editor theme does Oz like?',
      viewer: { userId: 'oz', channelId: 'general' },
      explain: true,
    });
    expect(search.status).toBe(200);
    const result = (await search.json()) as {
      hits: Array<{ memory: { content: string }; score: number; breakdown: object; match: string }>;
    };
    expect(result.hits[0]?.memory.content).toMatch(/Oz prefers dark mode/);
    expect(result.hits[0]).toMatchObject({
      score: expect.any(Number),
      breakdown: expect.any(Object),
      match: expect.any(String),
    });
    const contextInput = { query: 'where does the sister of Oz live?', viewer: { userId: 'oz' } };
    const context = (await (await send('POST', '/api/context', contextInput)).json()) as {
      text: string;
      hits: Array<{ memory: { content: string } }>;
    };
    expect(context.text).toMatch(/Oslo/);
    expect(context.hits.length).toBeGreaterThan(0);
    const library = await mneme.context(contextInput);
    expect(Object.keys(context).sort()).toEqual(Object.keys(library).sort());
    expect(context.text).toBe(library.text);
    await expectProblem(
      await send('POST', '/api/memories/search', { query: 'x', topK: 101 }),
      422,
      'INVALID_INPUT',
      /topK must be at most 100/,
    );
    await expectProblem(
      await send('POST', '/api/messages', { channelId: 'general', sender: 'oz', content: '   ' }),
      422,
      'INVALID_INPUT',
    );
  });

  it('searches and builds a context without touching anything when the body says inspect, as the OpenAPI document shows', async () => {
    const created = (await (
      await send('POST', '/api/memories', { content: 'kestrel is the staging server' })
    ).json()) as {
      id: number;
    };
    const read = async () =>
      (await (await send('GET', `/api/memories/${created.id}`)).json()) as Record<string, unknown>;
    const before = await read();
    const search = await send('POST', '/api/memories/search', { query: 'kestrel', inspect: true });
    expect(search.status).toBe(200);
    const found = (await search.json()) as { hits: Array<{ memory: Record<string, unknown> }> };
    expect(found.hits.map((hit) => hit.memory)).toEqual([before]);
    const context = await send('POST', '/api/context', { query: 'kestrel', inspect: true });
    expect(((await context.json()) as { text: string }).text).toMatch(/kestrel/);
    expect(await read()).toEqual(before);
    await expectProblem(
      await send('POST', '/api/context', { query: 'kestrel', inspect: 'yes' }),
      422,
      'INVALID_INPUT',
      /inspect must be true or false/,
    );

    await send('POST', '/api/memories/search', { query: 'kestrel' });
    expect(await read()).toMatchObject({ accessCount: 1, lastAccessedAt: '2024-06-15T12:00:00.000Z' });

    const document = (await (await send('GET', '/openapi.json')).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> } }>>;
    };
    for (const path of ['/api/memories/search', '/api/context']) {
      expect(document.paths[path]?.post?.requestBody?.content['application/json']?.schema, path).toMatchObject({
        properties: { inspect: { type: 'boolean', default: false } },
      });
    }
  });

  it('creates topics and projects, extracts conversations and refuses work extraction outside a managed project', async () => {
    expect((await send('POST', '/api/projects', { id: 'apollo', managed: false })).status).toBe(201);
    expect(
      (await send('POST', '/api/topics', { id: 'planning', projectId: 'apollo', title: 'Sprint planning' })).status,
    ).toBe(201);
    await send('POST', '/api/messages', {
      channelId: 'team',
      sender: 'ann',
      topicId: 'planning',
      content: 'We always deploy the billing service on Tuesdays after the standup',
    });
    const extracted = await send('POST', '/api/memories/extract/planning');
    expect(extracted.status).toBe(200);
    expect(await extracted.json()).toMatchObject({ topicId: 'planning' });
    await expectProblem(await send('POST', '/api/memories/extract-work/planning'), 409, 'CONFLICT', /managed/);
    await expectProblem(await send('POST', '/api/topics', { id: 'x', projectId: 'nope' }), 404, 'NOT_FOUND');
  });

  it('keeps topic changes and extraction to administrator keys until topics have members', async () => {
    const admin = await mneme.apiKeys.create({ label: 'ops' });
    const annKey = await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' });
    const asAdmin = { authorization: `Bearer ${admin.key}` };
    const asAnn = { authorization: `Bearer ${annKey.key}` };
    await send('POST', '/api/projects', { id: 'billing', managed: true }, asAdmin);
    await send('POST', '/api/topics', { id: 'refactor', projectId: 'billing', title: 'Refactor' }, asAdmin);
    await send(
      'POST',
      '/api/messages',
      {
        channelId: 'team',
        sender: 'bob',
        topicId: 'refactor',
        content: 'We always deploy the billing service on Tuesdays after the standup',
      },
      asAdmin,
    );
    await mneme.whenIdle();

    await expectProblem(
      await send('POST', '/api/topics', { id: 'refactor', title: 'Mine now' }, asAnn),
      403,
      'FORBIDDEN',
      /POST \/api\/topics needs an administrator key/,
    );
    await expectProblem(await send('POST', '/api/memories/extract/refactor', undefined, asAnn), 403, 'FORBIDDEN');
    await expectProblem(await send('POST', '/api/memories/extract-work/refactor', undefined, asAnn), 403, 'FORBIDDEN');

    const renamed = await send(
      'POST',
      '/api/topics',
      { id: 'refactor', projectId: 'billing', title: 'Big refactor' },
      asAdmin,
    );
    expect(renamed.status).toBe(201);
    expect(await renamed.json()).toMatchObject({ id: 'refactor', projectId: 'billing', title: 'Big refactor' });
    const extracted = await send('POST', '/api/memories/extract/refactor', undefined, asAdmin);
    expect(extracted.status).toBe(200);
    expect(await extracted.json()).toMatchObject({ topicId: 'refactor', messages: 1 });
    const work = await send('POST', '/api/memories/extract-work/refactor', undefined, asAdmin);
    expect(work.status).toBe(200);
    expect(await work.json()).toMatchObject({ sessionId: 'refactor', projectId: 'billing' });
  });

  it('runs maintenance on request and reports each task', async () => {
    const response = await send('POST', '/api/maintenance/run', { tasks: ['decay', 'link'] });
    expect(response.status).toBe(200);
    expect(Object.keys((await response.json()) as object)).toEqual(expect.arrayContaining(['decay', 'link']));
    await expectProblem(await send('POST', '/api/maintenance/run', { tasks: ['sleep'] }), 422, 'INVALID_INPUT');
  });

  it("appends a batch once under its external ids and serves the inspector's reads of it, each as its schema says", async () => {
    const batch = {
      messages: [
        { channelId: 'porch', sender: 'ann', content: 'I live in Quillport and I keep bees', externalId: 'evt-1' },
        { channelId: 'porch', userId: 'ann', userMessage: 'My sister is called Wren', assistantReply: 'Noted' },
      ],
    };
    const appended = await send('POST', '/api/messages/batch', batch);
    expect(appended.status).toBe(202);
    const { results } = (await appended.json()) as {
      results: Array<{ duplicate: boolean; messages: Array<{ id: number; externalId: string | null }> }>;
    };
    expect(results.map((result) => result.duplicate)).toEqual([false, false]);
    expect(results[0]?.messages[0]?.externalId).toBe('evt-1');
    const again = await send('POST', '/api/messages/batch', { messages: [batch.messages[0]] });
    expect(((await again.json()) as { results: typeof results }).results).toEqual([
      expect.objectContaining({
        duplicate: true,
        messages: [expect.objectContaining({ id: results[0]?.messages[0]?.id, duplicate: true })],
      }),
    ]);
    await mneme.whenIdle();

    const channels = (await (await send('GET', '/api/channels')).json()) as Array<{
      id: string;
      latestMessageId: number;
    }>;
    expect(channels).toEqual([expect.objectContaining({ id: 'porch', latestMessageId: 3 })]);
    const page = (await (await send('GET', '/api/channels/porch/messages?limit=2')).json()) as {
      messages: Array<{ id: number; externalId: string | null; memories: Array<{ id: number; content: string }> }>;
      nextAfterId: number | null;
    };
    expect(page.messages.map((message) => message.externalId)).toEqual(['evt-1', null]);
    expect(page.nextAfterId).toBe(page.messages[1]?.id);
    const fromFirst = page.messages[0]?.memories.find((memory) => memory.content.includes('Quillport'));
    expect(fromFirst, 'extraction wrote a memory citing the first message').toBeDefined();
    const sources = (await (await send('GET', `/api/memories/${fromFirst?.id}/sources`)).json()) as Array<{
      id: number;
    }>;
    expect(sources.map((message) => message.id)).toContain(page.messages[0]?.id);

    expect((await send('POST', '/api/maintenance/run', { tasks: ['decay'] })).status).toBe(200);
    const status = (await (await send('GET', '/api/maintenance')).json()) as {
      tasks: Array<{ task: string; lastReport: unknown; lastReportAt: string | null }>;
      extraction: Array<{ channelId: string; backlog: number }>;
    };
    expect(status.tasks.find((task) => task.task === 'decay')).toMatchObject({
      lastReport: expect.any(Object),
      lastReportAt: '2024-06-15T12:00:00.000Z',
    });
    expect(status.extraction).toEqual([expect.objectContaining({ channelId: 'porch', backlog: 0 })]);
    const analytics = (await (await send('GET', '/api/analytics')).json()) as {
      addedPerDay: Array<{ day: string; count: number }>;
    };
    expect(analytics.addedPerDay).toHaveLength(30);
    expect(analytics.addedPerDay.at(-1)).toMatchObject({ day: '2024-06-15', count: expect.any(Number) });
    expect(analytics.addedPerDay.at(-1)?.count).toBeGreaterThan(0);
  });

  it("keeps a user-bound key out of other users' memories in search, context and ingest", async () => {
    const admin = await mneme.apiKeys.create({ label: 'ops' });
    const annKey = await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' });
    const asAdmin = { authorization: `Bearer ${admin.key}` };
    const asAnn = { authorization: `Bearer ${annKey.key}` };
    await send(
      'POST',
      '/api/memories',
      { content: 'Bob keeps the spare key under the red flowerpot', scope: 'personal', userId: 'bob' },
      asAdmin,
    );
    await send(
      'POST',
      '/api/memories',
      { content: 'Ann keeps the spare key in her desk', scope: 'personal', userId: 'ann' },
      asAdmin,
    );

    for (const path of ['/api/memories/search', '/api/context']) {
      const response = await send('POST', path, { query: 'spare key flowerpot', viewer: { userId: 'bob' } }, asAnn);
      const text = JSON.stringify(await response.json());
      expect(text).toContain('Ann keeps the spare key');
      expect(text).not.toContain('Bob keeps');
    }
    const refused: Array<[string, string, object]> = [
      ['POST', '/api/messages', { channelId: 'c', sender: 'bob', content: 'I am Bob, honestly' }],
      ['POST', '/api/exchanges', { channelId: 'c', userId: 'bob', userMessage: 'hi there', assistantReply: 'hello' }],
      ['POST', '/api/memories', { content: 'Bob agreed', scope: 'room', channelId: 'c', userId: 'bob' }],
      ['PUT', '/api/users/bob', { displayName: 'Robert' }],
      ['POST', '/api/maintenance/run', {}],
    ];
    for (const [method, path, body] of refused) {
      await expectProblem(await send(method, path, body, asAnn), 403, 'FORBIDDEN');
    }
  });

  it("returns a channel's last turns oldest first, refuses a count of 0, 51 or abc with 422, and keeps a user key to its own channels", async () => {
    const admin = await mneme.apiKeys.create({ label: 'ops' });
    const annKey = await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' });
    const bobKey = await mneme.apiKeys.create({ label: 'bob-app', userId: 'bob' });
    const asAdmin = { authorization: `Bearer ${admin.key}` };
    const asAnn = { authorization: `Bearer ${annKey.key}` };
    const asBob = { authorization: `Bearer ${bobKey.key}` };
    await mneme.putChannel({ id: 'dm-ann', visibility: 'direct', members: ['ann'] });
    for (let index = 0; index < 12; index++) {
      await mneme.ingest({ channelId: 'dm-ann', sender: 'ann', content: `Ann's note number ${index}` });
    }
    const contents = async (path: string, headers: Record<string, string>) => {
      const response = await send('GET', path, undefined, headers);
      expect(response.status).toBe(200);
      return ((await response.json()) as Array<{ content: string }>).map((message) => message.content);
    };
    expect(await contents('/api/channels/dm-ann/turns', asAdmin)).toEqual(
      Array.from({ length: 10 }, (_, index) => `Ann's note number ${index + 2}`),
    );
    expect(await contents('/api/channels/dm-ann/turns?count=2', asAnn)).toEqual([
      "Ann's note number 10",
      "Ann's note number 11",
    ]);
    for (const count of ['0', '51', 'abc', '2.5', '']) {
      await expectProblem(
        await send('GET', `/api/channels/dm-ann/turns?count=${count}`, undefined, asAdmin),
        422,
        'INVALID_INPUT',
        /count/,
      );
    }
    const refused = await expectProblem(
      await send('GET', '/api/channels/dm-ann/turns', undefined, asBob),
      403,
      'FORBIDDEN',
    );
    expect(JSON.stringify(refused)).not.toContain('note number');
  });

  it('answers 503 with Retry-After while another process holds the write lock', async () => {
    const path = join(folder, 'busy.db');
    const engine = await createMneme({ path, busyTimeoutMs: 0 });
    const busyApp = createHttpApp({ mneme: engine, apiKeys: engine.apiKeys });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const response = await busyApp.request('/api/memories', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'written while locked' }),
      });
      await expectProblem(response, 503, 'STORE_BUSY');
      expect(response.headers.get('retry-after')).toBe('1');
    } finally {
      other.exec('ROLLBACK');
      other.close();
      await engine.close();
    }
  });
});
