import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

let mneme: Mneme;
let server: RunningHttpServer;
let key = '';

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  key = (await mneme.apiKeys.create({ label: 'operator' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

/** `Oz likes café au lait` with the é in Latin-1 (one byte, 0xE9), as a client on a Latin-1 system sends it. */
function latin1(prefix: string, suffix: string): Uint8Array {
  return Buffer.concat([Buffer.from(`${prefix}Oz likes caf`), Buffer.from([0xe9]), Buffer.from(` au lait${suffix}`)]);
}

describe('a body that is not UTF-8', () => {
  it('is refused by POST /mcp as by the HTTP API, and no memory holds replacement characters', async () => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const api = await fetch(`${server.url}/api/memories`, {
      method: 'POST',
      headers,
      body: latin1('{"content":"', '"}'),
    });
    expect(api.status).toBe(400);

    const mcp = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream' },
      body: latin1(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"content":"',
        '"}}}',
      ),
    });
    const answer = (await mcp.json()) as { error?: { code: number; message: string } };
    expect(mcp.status).toBe(400);
    expect(answer.error?.code).toBe(-32700);
    expect(answer.error?.message).toMatch(/UTF-8/);
    expect((await mneme.list()).memories.map((memory) => memory.content)).toEqual([]);
  });
});
