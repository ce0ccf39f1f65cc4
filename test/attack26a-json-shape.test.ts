import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { MAX_INGEST_BATCH } from '../src/core/ingest/ingest.js';
import type { Mneme } from '../src/core/mneme.js';
import { MAX_MEMBERS } from '../src/core/schemas.js';
import { MAX_JSON_DEPTH, MAX_JSON_ITEMS } from '../src/http/http-json-shape.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

// A user key's body is parsed by JSON.parse, which blocks the event loop for as long as it takes; its time and memory
// grow with how many arrays and objects the body holds, not with its bytes. Before: 16 MiB of `[[[[...` sent to the
// proxy held every other user's requests for 6 s and half a gigabyte, then overflowed JSON.stringify's stack (500);
// a mebibyte of it to the API took 270 ms. Bodies nested too deep or holding too many items are refused unparsed.

let mneme: Mneme;
let server: RunningHttpServer;
let proxy: RunningProxyServer;
let upstream: FakeUpstream;
let bob: string;
let operator: string;
const errors: unknown[] = [];
const proxyLog: string[] = [];

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  operator = (await mneme.apiKeys.create({ label: 'operator' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: (error) => errors.push(error) });
  upstream = await startFakeUpstream();
  proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: (line) => proxyLog.push(line) });
});

afterAll(async () => {
  await proxy.close();
  await upstream.close();
  await server.close();
  await mneme.close();
});

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

function send(url: string, body: string, key = bob, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body,
  });
}

/** The memories about the tomatoes, which only the refused requests below would have stored. */
async function tomatoes() {
  const { memories } = await mneme.list({ limit: 500, archived: 'include' });
  return memories.filter((memory) => memory.content.includes('tomatoes'));
}

async function expectTooComplex(response: Response, what: RegExp) {
  expect(response.status).toBe(413);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const body = (await response.json()) as { code: string; detail: string };
  expect(body.code).toBe('PAYLOAD_TOO_LARGE');
  expect(body.detail).toMatch(what);
}

const chat = (extra: string) =>
  `{"model":"m","messages":[{"role":"user","content":"Bob keeps bees on the roof"}]${extra}}`;

describe('request bodies nested too deep or holding too many items', () => {
  it('a chat request nested deeper than the limit is refused 413 by the proxy, not 500, and is never forwarded', async () => {
    const before = upstream.requests.length;
    await expectTooComplex(
      await send(`${proxy.url}/v1/chat/completions`, chat(`,"x":${nested(100_000)}`)),
      /deeper than 64 levels/,
    );
    expect(upstream.requests.length).toBe(before);
    expect(proxyLog.filter((line) => line.includes('unexpected error'))).toEqual([]);
  });

  it('a chat request whose tool schema nests exactly as deep as the limit is forwarded', async () => {
    const before = upstream.requests.length;
    const tools = `,"tools":${nested(MAX_JSON_DEPTH - 1)}`;
    const response = await send(`${proxy.url}/v1/chat/completions`, chat(tools));
    expect(response.status).toBe(200);
    expect(upstream.requests.length).toBe(before + 1);
  });

  it('a chat request holding more items than the limit is refused 413 by the proxy', async () => {
    const items = `,"x":[${'0,'.repeat(MAX_JSON_ITEMS)}0]`;
    await expectTooComplex(await send(`${proxy.url}/v1/chat/completions`, chat(items)), /more than 100000/);
  });

  it('an API body nested deeper than the limit is refused 413 before it is parsed, and stores nothing', async () => {
    const content = '{"content":"Bob waters the tomatoes at dawn","scope":"personal","userId":"bob"';
    await expectTooComplex(
      await send(`${server.url}/api/memories`, `${content},"x":${nested(MAX_JSON_DEPTH + 1)}}`),
      /deeper than 64 levels/,
    );
    expect(await tomatoes()).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('an MCP request nested deeper than the limit is answered 413 with a JSON-RPC error, the tool never called', async () => {
    const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"content":"Bob waters the tomatoes at dawn","x":${nested(10_000)}}}}`;
    const response = await send(`${server.url}/mcp`, call, bob, { accept: 'application/json, text/event-stream' });
    expect(response.status).toBe(413);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/deeper than 64 levels/);
    expect(await tomatoes()).toEqual([]);
  });

  it('the largest batch and the longest member list the schemas allow still fit under the item limit', async () => {
    const messages = Array.from({ length: MAX_INGEST_BATCH }, (_, index) => ({
      channelId: 'hive',
      sender: 'bob',
      content: `hive note ${index}`,
    }));
    const batch = await send(`${server.url}/api/messages/batch`, JSON.stringify({ messages }), operator);
    expect(batch.status).toBe(202);
    const members = Array.from({ length: MAX_MEMBERS }, (_, index) => `u${index}`);
    const channel = await fetch(`${server.url}/api/channels/hive`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ members }),
    });
    expect(channel.status).toBe(200);
  });
});
