import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

// A request is authenticated when its headers arrive; its body may follow minutes later (Node waits up
// to its requestTimeout, 300 s). A key revoked in between must not do the work the body asks for.

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18b-late-body-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let mneme: Mneme;
let server: RunningHttpServer;
let ann: { key: string; prefix: string };
let database = 0;

beforeEach(async () => {
  database += 1;
  mneme = await createMneme({ path: join(folder, `late-body-${database}.db`) });
  const created = await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' });
  ann = { key: created.key, prefix: created.prefix };
  await mneme.apiKeys.create({ label: 'operator' });
  await mneme.remember({
    content: 'Ann keeps the spare key under the blue flowerpot',
    scope: 'personal',
    userId: 'ann',
  });
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterEach(async () => {
  await server.close();
  await mneme.close();
});

interface Answer {
  status: number;
  text: string;
}

/**
 * Sends a request's headers at once and holds its body until `release` is called: the server
 * authenticates the key from the headers, then waits for the body.
 */
function heldRequest(url: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  const target = new URL(path, url);
  const outgoing = httpRequest(target, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    outgoing.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
  });
  outgoing.flushHeaders();
  return {
    answer,
    release: () => outgoing.end(text),
  };
}

/** Waits until the server has read the key from the headers: it records the key's first use. */
async function untilKeyUsed(prefix: string): Promise<void> {
  for (;;) {
    const record = (await mneme.apiKeys.list()).find((key) => key.prefix === prefix);
    if (record?.lastUsedAt) return;
    await new Promise((wait) => setTimeout(wait, 5));
  }
}

describe('attack18b: a body that arrives after its key was revoked', () => {
  it('does not search with a key revoked while the search body was on its way', async () => {
    const held = heldRequest(server.url, '/api/memories/search', ann.key, { query: 'spare key flowerpot' });
    await untilKeyUsed(ann.prefix);
    await mneme.apiKeys.revoke(ann.prefix);
    held.release();
    const answer = await held.answer;
    expect(answer.text).not.toContain('flowerpot');
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('does not store a memory for a key revoked while the memory was on its way', async () => {
    const held = heldRequest(server.url, '/api/memories', ann.key, {
      content: 'Ann now hides the key in the shed',
      userId: 'ann',
    });
    await untilKeyUsed(ann.prefix);
    await mneme.apiKeys.revoke(ann.prefix);
    held.release();
    const answer = await held.answer;
    expect(answer.status, answer.text).toBe(401);
    const stored = await mneme.list({ viewer: { userId: 'ann' } });
    expect(stored.memories.map((memory) => memory.content)).not.toContain('Ann now hides the key in the shed');
  });

  it('does not run an MCP tool for a key revoked while the tool call was on its way', async () => {
    const call = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'recall', arguments: { query: 'spare key flowerpot' } },
    };
    const held = heldRequest(server.url, '/mcp', ann.key, call, { accept: 'application/json, text/event-stream' });
    await untilKeyUsed(ann.prefix);
    await mneme.apiKeys.revoke(ann.prefix);
    held.release();
    const answer = await held.answer;
    expect(answer.text).not.toContain('flowerpot');
    expect(answer.status).toBe(401);
  });
});

describe('attack18b: an MCP body read before its key is read again', () => {
  it('still answers a body over the size limit with 413 and a JSON-RPC error, running nothing', async () => {
    const small = await startHttpServer({ mneme, port: 0, maxBodyBytes: 512, logError: () => {} });
    try {
      const call = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'remember', arguments: { content: `Ann likes ${'very '.repeat(200)}long walks` } },
      };
      const response = await fetch(`${small.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ann.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(call),
      });
      expect(response.status).toBe(413);
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
      const stored = await mneme.list({ viewer: { userId: 'ann' } });
      expect(stored.memories.map((memory) => memory.content).join(' ')).not.toContain('long walks');
    } finally {
      await small.close();
    }
  });
});

describe('attack18b: a chat body that reaches the proxy after its key was revoked', () => {
  let upstream: FakeUpstream;
  let proxy: RunningProxyServer;

  beforeEach(async () => {
    upstream = await startFakeUpstream();
    proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: () => {} });
  });

  afterEach(async () => {
    await proxy.close();
    await upstream.close();
  });

  it('neither recalls nor forwards a completion whose key was revoked while its body was on its way', async () => {
    const chat = { model: 'fake-model', messages: [{ role: 'user', content: 'Where is my spare key flowerpot?' }] };
    const held = heldRequest(proxy.url, '/v1/chat/completions', ann.key, chat);
    await untilKeyUsed(ann.prefix);
    await mneme.apiKeys.revoke(ann.prefix);
    held.release();
    const answer = await held.answer;
    expect(answer.status).toBe(401);
    expect(upstream.requests.filter((request) => request.path === '/v1/chat/completions')).toEqual([]);
  });
});
