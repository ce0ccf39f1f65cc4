import { type ClientRequest, request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { BODIES_PER_KEY } from '../src/http/http-body-share.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

// A body is read whole before it is parsed, and Node waits up to its requestTimeout (300 s) for it. Before, one user
// key that opened connections and sent each body but its last byte made the process hold every one of them (300 to
// the API: 320 MB more; the proxy's are 16 MiB each). Now each key may be sending at most BODIES_PER_KEY of the
// largest bodies at once; more is 429, other keys are not held back, and a body that ends gives its bytes back.

const MAX_BODY = 2000;

let mneme: Mneme;
let server: RunningHttpServer;
let proxy: RunningProxyServer;
let upstream: FakeUpstream;
let ann: string;
let bob: string;
let held: ClientRequest[] = [];

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  server = await startHttpServer({ mneme, port: 0, maxBodyBytes: MAX_BODY, logError: () => {} });
  upstream = await startFakeUpstream();
  proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, maxBodyBytes: MAX_BODY, log: () => {} });
});

afterEach(() => {
  for (const request of held) request.destroy();
  held = [];
});

afterAll(async () => {
  await proxy.close();
  await upstream.close();
  await server.close();
  await mneme.close();
});

/** Opens a request whose body stops two bytes short of its Content-Length (`"}`), and leaves it open. */
function holdBody(url: string, key: string) {
  const target = new URL(url);
  const request = httpRequest({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': MAX_BODY },
  });
  request.on('error', () => {});
  request.write(`{"query":"${'x'.repeat(MAX_BODY - 12)}`);
  held.push(request);
}

function post(url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Sends `send` until it is answered `status` (the held bodies reach the server a moment after they are written). */
async function answeredAt(status: number, send: () => Promise<Response>): Promise<Response> {
  let response = await send();
  for (let attempt = 0; attempt < 100 && response.status !== status; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    response = await send();
  }
  return response;
}

const search = { query: 'where does bob keep the bees' };

describe('the bytes of request bodies one key may be sending at once', () => {
  it('a key sending its share of bodies is answered 429 for one more, with Retry-After, while another key is served', async () => {
    for (let index = 0; index < BODIES_PER_KEY; index += 1) holdBody(`${server.url}/api/memories/search`, bob);
    const refused = await answeredAt(429, () => post(`${server.url}/api/memories/search`, bob, search));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { code: string }).code).toBe('TOO_MANY_REQUESTS');
    expect((await post(`${server.url}/api/memories/search`, ann, search)).status).toBe(200);
    // The API and /mcp share one share per key.
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const mcp = await post(`${server.url}/mcp`, bob, call, { accept: 'application/json, text/event-stream' });
    expect(mcp.status).toBe(429);
    expect(((await mcp.json()) as { error: { message: string } }).error.message).toMatch(/Too Many Requests/);
  });

  it('bodies that end, or whose client leaves, give their bytes back to the key', async () => {
    for (let index = 0; index < BODIES_PER_KEY; index += 1) holdBody(`${server.url}/api/memories/search`, bob);
    expect((await answeredAt(429, () => post(`${server.url}/api/memories/search`, bob, search))).status).toBe(429);
    for (const request of held.splice(0, 2)) request.destroy();
    expect((await answeredAt(200, () => post(`${server.url}/api/memories/search`, bob, search))).status).toBe(200);
    for (const request of held.splice(0)) request.end('"}');
    const answers = await Promise.all(
      Array.from({ length: BODIES_PER_KEY }, () => post(`${server.url}/api/memories/search`, bob, search)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(BODIES_PER_KEY).fill(200));
  });

  it('the proxy holds each key to its own share as well', async () => {
    for (let index = 0; index < BODIES_PER_KEY; index += 1) holdBody(`${proxy.url}/v1/chat/completions`, bob);
    const chat = { model: 'm', messages: [{ role: 'user', content: 'Where are the bees?' }] };
    const refused = await answeredAt(429, () => post(`${proxy.url}/v1/chat/completions`, bob, chat));
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { code: string }).code).toBe('TOO_MANY_REQUESTS');
    expect((await post(`${proxy.url}/v1/chat/completions`, ann, chat)).status).toBe(200);
  });
});
