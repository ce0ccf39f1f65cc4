import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

// Angles the session's attack helper tried that held: an Idempotency-Key is no way into another user's
// stored response, and `/mcp` keeps no session a second caller could borrow.

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18b-held-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let mneme: Mneme;
let server: RunningHttpServer;
const keys = { ann: '', bob: '' };
const clients: Client[] = [];
let database = 0;

beforeEach(async () => {
  database += 1;
  mneme = await createMneme({ path: join(folder, `held-${database}.db`) });
  keys.ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
  keys.bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  await server.close();
  await mneme.close();
});

async function post(path: string, key: string | null, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('attack18b: an Idempotency-Key used by another user', () => {
  it('never answers bob with the response ann stored under the same key, before or after ann forgot the memory', async () => {
    const secret = { content: 'Ann keeps her passport in the left drawer', userId: 'ann' };
    const first = await post('/api/memories', keys.ann, secret, { 'idempotency-key': 'shared-key-1' });
    expect(first.status).toBe(201);
    const id = (JSON.parse(first.text) as { id: number }).id;

    // The same key and the very same request: bob may not act for ann (403), and gets nothing stored.
    const same = await post('/api/memories', keys.bob, secret, { 'idempotency-key': 'shared-key-1' });
    expect(same.status).toBe(403);
    expect(same.text).not.toContain('passport');
    // The same key with his own request: his own work, not a replay.
    const own = { content: 'Bob waters the plants', userId: 'bob' };
    const his = await post('/api/memories', keys.bob, own, { 'idempotency-key': 'shared-key-1' });
    expect(his.status).toBe(201);
    expect(his.headers.get('idempotent-replayed')).toBeNull();
    expect(his.text).not.toContain('passport');

    const forgotten = await fetch(`${server.url}/api/memories/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${keys.ann}` },
    });
    expect(forgotten.status).toBe(200);
    const after = await post('/api/memories', keys.bob, secret, { 'idempotency-key': 'shared-key-1' });
    expect(after.status).toBe(403);
    expect(after.text).not.toContain('passport');
  });
});

describe('attack18b: a session id on /mcp', () => {
  async function connect(key: string, headers: Record<string, string> = {}): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } },
    });
    const client = new Client({ name: 'attack18b', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  it('issues none, and a request naming one acts for its own key only, or is refused without a key', async () => {
    await mneme.remember({ content: 'Ann hums while she codes', scope: 'personal', userId: 'ann' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${keys.ann}` } },
    });
    const annClient = new Client({ name: 'attack18b', version: '1.0.0' });
    await annClient.connect(transport);
    clients.push(annClient);
    expect(transport.sessionId).toBeUndefined();
    const hers = (await annClient.callTool({ name: 'recall', arguments: { query: 'hums codes' } })) as {
      content: Array<{ text?: string }>;
    };
    expect(hers.content.map((part) => part.text ?? '').join('\n')).toContain('hums');

    const recall = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'recall', arguments: { query: 'hums codes' } },
    };
    const mcpHeaders = { accept: 'application/json, text/event-stream', 'mcp-session-id': 'ann-session' };
    const anonymous = await post('/mcp', null, recall, mcpHeaders);
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).not.toContain('hums');

    const bob = await connect(keys.bob, { 'mcp-session-id': 'ann-session' });
    const bobs = (await bob.callTool({ name: 'recall', arguments: { query: 'hums codes' } })) as {
      content: Array<{ text?: string }>;
    };
    expect(bobs.content.map((part) => part.text ?? '').join('\n')).not.toContain('hums');
  });
});
