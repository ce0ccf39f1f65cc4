import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { MAX_PIPELINED_REQUESTS, type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

// Node parses every pipelined request one read of a connection brings in and runs them all at once, each answer kept
// in memory until the client reads it. Before, one user key sending 10,000 requests for a list of memories on one
// connection and reading nothing grew `mneme serve` by 0.7 GB in 15 seconds. Now a connection may have at most
// MAX_PIPELINED_REQUESTS requests waiting for their answers; one more is answered 429 with Connection: close.

let mneme: Mneme;
let server: RunningHttpServer;
let ann: string;
let bob: string;

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
  bob = (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key;
  await mneme.remember({ content: 'Bob keeps bees on the roof', scope: 'personal', userId: 'bob' });
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

/** Sends `count` requests on one connection in one write, then reads every answer until the server closes it. */
function pipeline(count: number, key: string): Promise<string> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    const request = `GET /api/memories?limit=500 HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\n\r\n`;
    socket.write(request.repeat(count));
    // A connection the server keeps open after its last answer is closed here, once nothing more comes.
    socket.setTimeout(2000, () => socket.end());
  });
}

const statuses = (received: string) => [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1]);

describe('requests pipelined on one connection', () => {
  it('are run at most MAX_PIPELINED_REQUESTS at a time; one more is answered 429 and the connection closes', async () => {
    const received = await pipeline(4 * MAX_PIPELINED_REQUESTS, bob);
    const answered = statuses(received);
    expect(answered.filter((status) => status === '200').length).toBeLessThan(4 * MAX_PIPELINED_REQUESTS);
    expect(answered.at(-1)).toBe('429');
    expect(answered.filter((status) => status === '429')).toHaveLength(1);
    const refusal = received.slice(received.lastIndexOf('HTTP/1.1 429'));
    expect(refusal).toMatch(/^Connection: close\r$/im);
    expect(refusal).toMatch(/^Content-Type: application\/problem\+json\r$/im);
    expect(refusal).toContain('"code":"TOO_MANY_REQUESTS"');
  });

  it('as many as the limit on one connection are all answered, and the service goes on for another key', async () => {
    const answered = statuses(await pipeline(MAX_PIPELINED_REQUESTS, bob));
    expect(answered).toEqual(Array(MAX_PIPELINED_REQUESTS).fill('200'));
    const response = await fetch(`${server.url}/api/memories`, { headers: { authorization: `Bearer ${ann}` } });
    expect(response.status).toBe(200);
  });
});
