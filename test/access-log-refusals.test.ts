import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { MAX_PIPELINED_REQUESTS, type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/**
 * The service's access log had a line for every request the app answered, refusals included (401, 403, 413, 429 of the
 * body share), but none for the two refusals the server writes itself, outside the app (ADR 33): a connection over
 * the limits (503 TOO_MANY_CONNECTIONS) and one pipelined request too many (429). An operator reading the log to see
 * why clients were turned away saw nothing of either. They are now logged in the same form.
 *
 * Nor had it one for what Node's HTTP parser refuses before the app sees it (found 2026-12-05, helper 152, with a raw
 * socket against `mneme serve`'s server): a malformed request (400), header fields over Node's limit (431) and header
 * fields that did not arrive in time (408) were answered problem+json and left no line. They are logged too, their
 * method and path `-` (the parser refused the request before handing it over). Node also answered an HTTP/1.1 request
 * without a Host header itself, a bare 400; the server now refuses it as problem+json, logged with its method and path.
 */
const opened: Array<{ mneme: Mneme; server: RunningHttpServer; sockets: Socket[] }> = [];
afterEach(async () => {
  for (const { mneme, server, sockets } of opened.splice(0)) {
    for (const socket of sockets) socket.destroy();
    await server.close();
    await mneme.close();
  }
});

async function serve(connectionsPerAddress?: number, headersTimeoutMs?: number) {
  const mneme = await createMneme({ path: ':memory:' });
  const lines: string[] = [];
  const server = await startHttpServer({
    mneme,
    port: 0,
    logError: () => {},
    accessLog: (line) => lines.push(line),
    ...(connectionsPerAddress === undefined ? {} : { connectionsPerAddress }),
    ...(headersTimeoutMs === undefined ? {} : { headersTimeoutMs }),
  });
  const sockets: Socket[] = [];
  opened.push({ mneme, server, sockets });
  const port = Number(new URL(server.url).port);
  /** Writes `request` on a new connection and reads until the server closes it (or the client gives up waiting). */
  const send = (request: string, keep = false, waitMs = 3000) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(request));
      sockets.push(socket);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
        if (keep && received.includes('\r\n\r\n')) resolve(received);
      });
      socket.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'ECONNRESET' ? resolve(received) : reject(error),
      );
      socket.on('close', () => resolve(received));
      socket.setTimeout(waitMs, () => socket.end());
    });
  return { lines, send };
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

describe('the access log of mneme serve', () => {
  it('has a line for a connection refused 503 over the limit, as for a request the app answers', async () => {
    const { lines, send } = await serve(1);
    expect(await send(get('/api/health'), true)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await send(get('/api/memories?limit=5'))).toMatch(/^HTTP\/1\.1 503 /);
    await expect.poll(() => lines.length).toBe(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ GET \/api\/health 200 \d+ms$/);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ - - 503 \d+ms$/);
  });

  it('has a line for the pipelined request refused 429, with its method and its path without the query', async () => {
    const { lines, send } = await serve();
    const received = await send(get('/api/memories%0Aforged?limit=500').repeat(4 * MAX_PIPELINED_REQUESTS));
    expect(received).toContain('HTTP/1.1 429 ');
    await expect.poll(() => lines.filter((line) => / 429 \d+ms$/.test(line))).toHaveLength(1);
    expect(lines.find((line) => / 429 \d+ms$/.test(line))).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ GET \/api\/memories%0Aforged 429 \d+ms$/,
    );
  });

  it('has a line for each request the HTTP parser refuses: malformed 400, headers too large 431, too slow 408', async () => {
    const { lines, send } = await serve(undefined, 500);
    const line = (status: number) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ - - ${status} \\d+ms$`);
    expect(await send('GET /api/health HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    await expect.poll(() => lines).toEqual([expect.stringMatching(line(400))]);
    const large = `GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Large: ${'a'.repeat(20_000)}\r\n\r\n`;
    expect(await send(large)).toMatch(/^HTTP\/1\.1 431 /);
    await expect.poll(() => lines).toHaveLength(2);
    expect(lines[1]).toMatch(line(431));
    // Header fields begun and never ended: the server answers 408 once the header timeout (here 500 ms) has passed.
    expect(await send('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n', false, 10_000)).toMatch(/^HTTP\/1\.1 408 /);
    await expect.poll(() => lines).toHaveLength(3);
    expect(lines[2]).toMatch(line(408));
    // A request the app answers is logged as before, with its method and path.
    expect(await send(get('/api/health'), true)).toMatch(/^HTTP\/1\.1 200 /);
    await expect.poll(() => lines).toHaveLength(4);
    expect(lines[3]).toMatch(/ GET \/api\/health 200 \d+ms$/);
  });

  it('answers an HTTP/1.1 request without a Host header 400 problem+json, and logs it with its method and path', async () => {
    // Node answered it itself before: a bare 400 with no problem document, and no line.
    const { lines, send } = await serve();
    const answer = await send('GET /api/memories?limit=5 HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
    expect(answer).toContain('an HTTP/1.1 request must have a Host header');
    await expect.poll(() => lines).toEqual([expect.stringMatching(/Z GET \/api\/memories 400 \d+ms$/)]);
  });

  it('answers a request with two Host headers 400 problem+json, whatever its version, and logs it', async () => {
    const { lines, send } = await serve();
    for (const version of ['1.1', '1.0']) {
      const answer = await send(
        `GET /api/health HTTP/${version}\r\nHost: 127.0.0.1\r\nhost: elsewhere.example\r\nConnection: close\r\n\r\n`,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
      expect(answer).toContain('a request must have one Host header, not several');
    }
    await expect
      .poll(() => lines)
      .toEqual([
        expect.stringMatching(/Z GET \/api\/health 400 \d+ms$/),
        expect.stringMatching(/Z GET \/api\/health 400 \d+ms$/),
      ]);
  });
});
