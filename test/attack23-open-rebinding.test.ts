import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

let mneme: Mneme;
let server: RunningHttpServer;

// `npm start` as the README's "Try it" runs it: no key was ever created, so the service is open on loopback.
beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  await mneme.remember({
    content: 'Oz keeps the spare house key under the blue flowerpot',
    scope: 'personal',
    userId: 'oz',
  });
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

/**
 * A request as a browser sends it from a web page whose host name an attacker re-pointed at 127.0.0.1 (DNS
 * rebinding): to the browser it is the page's own origin, so it sends it and lets the page read the answer.
 */
function fromRebound(path: string, method = 'GET', body?: string): Promise<{ status: number; text: string }> {
  const { port } = new URL(server.url);
  const origin = `http://rebound.attacker.test:${port}`;
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        path,
        method,
        headers: {
          host: `rebound.attacker.test:${port}`,
          origin,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

describe('an open service on loopback asked by a web page of another host name (DNS rebinding)', () => {
  it('refuses the API, the MCP endpoint and the memories to a Host that is not loopback', async () => {
    const listed = await fromRebound('/api/memories?userId=oz');
    const tool = await fromRebound(
      '/mcp',
      'POST',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list', arguments: {} } }),
    );

    expect(listed.text).not.toContain('flowerpot');
    expect(listed.status).toBeGreaterThanOrEqual(400);
    expect(listed.status).toBeLessThan(500);
    expect(tool.status).toBeGreaterThanOrEqual(400);
    expect(tool.status).toBeLessThan(500);
  });

  it('still answers a loopback Host name', async () => {
    const response = await fetch(`${server.url}/api/memories?userId=oz`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('flowerpot');
  });
});
