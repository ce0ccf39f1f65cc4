import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/**
 * Requests that Node's parser takes but the adapter (`@hono/node-server`) cannot make a URL of never reached the app:
 * a Host header that names no host (`Host: a b`, `Host: user:pw@x`, `Host: evil.example/x`), a path holding a
 * backslash, the target `*` of `OPTIONS *`. The adapter answered them itself, a bare 400 without a body, and the access
 * log had no line for them; a CONNECT request was not answered at all (Node closed the connection) and left no line
 * either. A client could so probe or flood the service unseen by its log. Each is now answered problem+json and
 * logged once, with its method and the path as sent (a backslash kept as `%5C`, not read as a slash).
 */
const opened: Array<{ mneme: Mneme; server: RunningHttpServer; sockets: Socket[] }> = [];
afterEach(async () => {
  for (const { mneme, server, sockets } of opened.splice(0)) {
    for (const socket of sockets) socket.destroy();
    await server.close();
    await mneme.close();
  }
});

async function serve() {
  const mneme = await createMneme({ path: ':memory:' });
  const lines: string[] = [];
  const server = await startHttpServer({ mneme, port: 0, logError: () => {}, accessLog: (line) => lines.push(line) });
  const sockets: Socket[] = [];
  opened.push({ mneme, server, sockets });
  const port = Number(new URL(server.url).port);
  /** Writes `request` on a new connection and reads until the server closes it. */
  const send = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(request));
      sockets.push(socket);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
      });
      socket.on('error', (error: NodeJS.ErrnoException) =>
        error.code === 'ECONNRESET' ? resolve(received) : reject(error),
      );
      socket.on('close', () => resolve(received));
      socket.setTimeout(3000, () => socket.end());
    });
  return { lines, send };
}

/** The status line, the Content-Type and the problem's code of an answer. */
function answerOf(received: string) {
  const [head = '', body = ''] = received.split('\r\n\r\n');
  return {
    status: head.split('\r\n')[0],
    type: /^content-type: (.*)$/im.exec(head)?.[1],
    code: body === '' ? undefined : (JSON.parse(body) as { code?: string }).code,
  };
}

describe('a request the adapter cannot make a URL of', () => {
  it.each([
    ['a Host header with a space', 'GET /api/health HTTP/1.1\r\nHost: a b\r\n', ' GET /api/health 400 '],
    ['a Host header with credentials', 'GET /api/health HTTP/1.1\r\nHost: user:pw@x\r\n', ' GET /api/health 400 '],
    ['a Host header with a path', 'GET /api/health HTTP/1.1\r\nHost: evil.example/a\r\n', ' GET /api/health 400 '],
    ['a path with backslashes', 'GET /api\\..\\health HTTP/1.1\r\nHost: x\r\n', ' GET /api%5C..%5Chealth 400 '],
    ['the target of OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n', ' OPTIONS - 400 '],
  ])('is answered 400 problem+json and logged once, for %s', async (_case, request, logged) => {
    const { lines, send } = await serve();
    const answer = answerOf(await send(`${request}Connection: close\r\n\r\n`));
    expect(answer).toEqual({
      status: 'HTTP/1.1 400 Bad Request',
      type: 'application/problem+json',
      code: 'MALFORMED_REQUEST',
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(logged);
  });

  it('is a CONNECT request, answered 404 problem+json and logged, where the connection closed without a word', async () => {
    const { lines, send } = await serve();
    const answer = answerOf(await send('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
    expect(answer).toEqual({ status: 'HTTP/1.1 404 Not Found', type: 'application/problem+json', code: 'NOT_FOUND' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(' CONNECT - 404 ');
  });

  it('logs the path of a refused request as the adapter reads it, after the host', async () => {
    const { lines, send } = await serve();
    // Without a Host header: refused by the server, whose line read the path as a URL of the host evil.example.
    await send('GET //evil.example/api/keys HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(' GET //evil.example/api/keys 400 ');
  });

  it('leaves the requests the app answers logged once, by the app', async () => {
    const { lines, send } = await serve();
    await send('GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await send('GET //evil.example/api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(' GET /api/health 200 ');
    expect(lines[1]).toContain(' GET //evil.example/api 404 ');
  });
});
