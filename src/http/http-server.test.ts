import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { Mneme } from '../core/mneme.js';
import { type RunningHttpServer, startHttpServer } from './http-server.js';

/** Sends `request` as raw bytes and resolves with everything the server answers before it closes. */
function sendRaw(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(request));
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('the HTTP server', () => {
  let mneme: Mneme;
  let server: RunningHttpServer;

  beforeAll(async () => {
    mneme = await createMneme({ path: ':memory:' });
    server = await startHttpServer({ mneme, port: 0 });
  });
  afterAll(async () => {
    await server.close();
    await mneme.close();
  });

  it('answers header fields too large for Node with a 431 problem+json', async () => {
    const response = await fetch(`${server.url}/api/health`, { headers: { 'x-padding': 'a'.repeat(20_000) } });
    expect(response.status).toBe(431);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toEqual({
      type: 'https://mneme.dev/problems/headers-too-large',
      title: 'Request Header Fields Too Large',
      status: 431,
      detail: 'the request header fields are too large; send fewer or shorter headers',
      code: 'HEADERS_TOO_LARGE',
    });
  });

  it('answers a request that is not HTTP with a 400 problem+json, and keeps serving', async () => {
    const answer = await sendRaw(server.url, 'HELLO THERE\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\nContent-Type: application\/problem\+json\r\n/);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; status: number };
    expect(body).toMatchObject({ status: 400, code: 'MALFORMED_REQUEST' });
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });
});
