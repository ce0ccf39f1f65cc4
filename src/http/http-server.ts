import { createServer, type IncomingMessage, type ServerOptions } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener, type HttpBindings, RequestError, serve } from '@hono/node-server';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import { accessLogLine, targetPath } from './http-access-log.js';
import { createHttpApp } from './http-app.js';
import { isLoopback } from './http-loopback.js';
import { problem, titleOf } from './http-problem.js';

export interface HttpServerOptions {
  mneme: Mneme;
  /** 127.0.0.1 unless told; any other address needs at least one API key. */
  host?: string;
  /** Serve without authentication even though API keys exist; loopback only (see `HttpAppOptions.open`). */
  open?: boolean;
  /** 7370 unless told; 0 picks a free port. */
  port?: number;
  maxBodyBytes?: number;
  logError?: (error: unknown) => void;
  /** Receives one access-log line per request (method, path, status, ms); none when left out. */
  accessLog?: (line: string) => void;
  /** Connections one client address may hold open at once (`MAX_CONNECTIONS_PER_ADDRESS` unless told). */
  connectionsPerAddress?: number;
  /**
   * Milliseconds a client has, from connecting (or from its previous answer), to send a request's header fields, then
   * 408 (`HEADERS_TIMEOUT_MS` unless told).
   */
  headersTimeoutMs?: number;
}

/** Milliseconds `close` waits for requests in flight before it closes their connections. */
export const HTTP_CLOSE_GRACE_MS = 1000;

export interface RunningHttpServer {
  /** e.g. `http://127.0.0.1:7370`. */
  url: string;
  /**
   * Stops accepting connections and waits for requests in flight, at most `graceMs`
   * (`HTTP_CLOSE_GRACE_MS` by default), then closes the connections still open; the engine stays open.
   */
  close(graceMs?: number): Promise<void>;
}

export { isLoopback } from './http-loopback.js';

/**
 * Starts the HTTP service. It refuses to bind a non-loopback address while no API key exists, and to
 * run open (`open: true`) anywhere but loopback.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 7370;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new MnemeError(ErrorCode.InvalidInput, `port must be a whole number from 0 to 65535, not ${String(port)}`);
  }
  if (!isLoopback(host) && options.open) {
    throw new MnemeError(ErrorCode.ConfigInvalid, `refusing to serve ${host} open (--open): bind 127.0.0.1`);
  }
  await refuseOpenNetwork(host, options.mneme);
  const app = createHttpApp({
    mneme: options.mneme,
    apiKeys: options.mneme.apiKeys,
    ...(options.open ? { open: true } : {}),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    ...(options.logError ? { logError: options.logError } : {}),
    ...(options.accessLog ? { accessLog: options.accessLog } : {}),
  });
  return listenHttp(app.fetch, host, port, options.connectionsPerAddress, options.accessLog, options.headersTimeoutMs);
}

/** CONFIG_INVALID when `host` is not loopback and no API key exists: nothing listens beyond loopback unauthenticated. */
export async function refuseOpenNetwork(host: string, mneme: Pick<Mneme, 'apiKeys'>): Promise<void> {
  if (!isLoopback(host) && !(await mneme.apiKeys.hasAny())) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `refusing to listen on ${host} without authentication: create a key first (mneme keys create --label <name>), or bind 127.0.0.1`,
    );
  }
}

/**
 * Serves `fetch` on `host:port` (0 picks a free port), answering what Node's HTTP parser refuses with
 * problem+json; `mneme serve` and `mneme proxy` both listen through it. `accessLog` receives a line for each request
 * the server refuses before `fetch` sees it (as the app's access log writes its own).
 */
export async function listenHttp(
  fetch: (request: Request, env: HttpBindings) => Response | Promise<Response>,
  host: string,
  port: number,
  connectionsPerAddress = MAX_CONNECTIONS_PER_ADDRESS,
  accessLog?: (line: string) => void,
  headersTimeoutMs = HEADERS_TIMEOUT_MS,
): Promise<RunningHttpServer> {
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new MnemeError(ErrorCode.InvalidInput, `port must be a whole number from 0 to 65535, not ${String(port)}`);
  }
  if (!Number.isInteger(connectionsPerAddress) || connectionsPerAddress < 1) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `connections per address must be a whole number from 1, not ${String(connectionsPerAddress)}`,
    );
  }
  // The requests that reached `fetch` (the app, which logs its own line); the others were refused on the way.
  const reached = new WeakSet<IncomingMessage>();
  const app = (request: Request, env: Parameters<Parameters<typeof getRequestListener>[0]>[1]) => {
    reached.add((env as HttpBindings).incoming);
    return fetch(request, env as HttpBindings);
  };
  const listener = getRequestListener(app, { hostname: host, errorHandler: unreadableRequest });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve(
      {
        fetch: app,
        hostname: host,
        port,
        createServer: guardedServer(connectionsPerAddress, headersTimeoutMs, listener, reached, accessLog),
      },
      () => resolve(started),
    );
    started.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new MnemeError(
          ErrorCode.ConfigInvalid,
          error.code === 'EADDRINUSE' ? `port ${port} on ${host} is in use: pick another with --port` : error.message,
          { cause: error },
        ),
      ),
    );
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: (graceMs = HTTP_CLOSE_GRACE_MS) =>
      new Promise<void>((resolve, reject) => {
        const hasConnections = 'closeAllConnections' in server;
        const overdue = setTimeout(() => hasConnections && server.closeAllConnections(), graceMs);
        server.close((error) => {
          clearTimeout(overdue);
          if (error) reject(error);
          else resolve();
        });
        if (hasConnections) server.closeIdleConnections();
      }),
  };
}

/** Connections one client address may hold open at once, unless the service is told otherwise (ADR 33). */
export const MAX_CONNECTIONS_PER_ADDRESS = 256;
/** Connections the process holds open at once, from every address together (ADR 33). */
export const MAX_CONNECTIONS = 8192;
/** Milliseconds a client has, from connecting, to send a request's header fields (Node's default is 60 s). */
export const HEADERS_TIMEOUT_MS = 20_000;

/** Most requests one connection may have sent ahead of the answers it has not yet read (HTTP/1.1 pipelining). */
export const MAX_PIPELINED_REQUESTS = 16;

/**
 * Node's HTTP server with two limits around the app (ADR 33).
 *
 * Connections: one client address may hold `perAddress` open at once, the process `MAX_CONNECTIONS`; one more is
 * answered 503 problem+json with `Connection: close` before it is read, and whatever it sent runs nothing. Without it,
 * one client that opened connections and sent nothing (or its header fields a byte at a time) held a file descriptor
 * each until Node's timeouts ended them: 20,000 of them took every descriptor of the process, and nobody else was
 * answered, whatever key they had. Header fields must arrive within `HEADERS_TIMEOUT_MS`.
 *
 * Pipelining: at most `MAX_PIPELINED_REQUESTS` requests of one connection waiting for their answers to be sent. Node
 * parses every pipelined request its reads bring in and runs them all at once, each answer kept in memory until the
 * client reads it, so one connection that sent thousands of requests and read nothing made the process hold thousands
 * of answers (10,000 lists of memories: 0.7 GB more in 15 s). One more is answered 429 with `Connection: close` and
 * runs nothing; the connection ends after it, the requests behind it unread.
 *
 * What Node's parser refuses before a request reaches the app (431, 408, 400) is answered by `answerClientError`; each
 * of these refusals, as the two above, is a line of the access log.
 */
function guardedServer(
  perAddress: number,
  headersTimeoutMs: number,
  listener: ReturnType<typeof getRequestListener>,
  reached: WeakSet<IncomingMessage>,
  accessLog?: (line: string) => void,
): typeof createServer {
  // `serve`'s own listener is not used: `listener` is the same, with the answer to a request it cannot read.
  return ((options: ServerOptions) => {
    const refused = new WeakSet<Socket>();
    const open = new Map<string, number>();
    let total = 0;
    const waiting = new WeakMap<Socket, number>();
    /** Connections answered 429: they close after it. */
    const closing = new WeakSet<Socket>();
    /** When each connection was opened or last sent an answer: when the request a refusal answers began, at the latest. */
    const since = new WeakMap<Socket, number>();
    const server = createServer(
      {
        ...options,
        headersTimeout: headersTimeoutMs,
        // Node answers an HTTP/1.1 request without a Host header itself (a bare 400, neither problem+json nor logged);
        // the handler below refuses it instead.
        requireHostHeader: false,
        // Node checks the timeout on this interval: a header timeout shorter than 5 s is kept within its own length.
        connectionsCheckingInterval: Math.min(5_000, headersTimeoutMs),
      },
      (request, response) => {
        const { socket } = request;
        response.once('finish', () => since.set(socket, Date.now()));
        if (refused.has(socket)) return; // answered 503 when it connected; destroyed once that is written
        const hosts = hostLines(request.rawHeaders);
        if ((request.httpVersion === '1.1' && hosts === 0) || hosts > 1) {
          // RFC 9112: a server answers 400 to an HTTP/1.1 request that names no Host, and to any with two Host lines
          // (Node keeps the first; a proxy in front may have read the other).
          const started = Date.now();
          const detail =
            hosts > 1
              ? 'a request must have one Host header, not several'
              : 'an HTTP/1.1 request must have a Host header';
          const body = JSON.stringify(problem(400, 'MALFORMED_REQUEST', detail));
          response.writeHead(400, {
            'Content-Type': 'application/problem+json',
            'Content-Length': Buffer.byteLength(body),
            Connection: 'close',
          });
          response.end(body);
          accessLog?.(accessLogLine(started, request.method ?? '-', targetPath(request.url), 400, Date.now()));
          return;
        }
        const count = waiting.get(socket) ?? 0;
        if (count >= MAX_PIPELINED_REQUESTS) {
          const started = Date.now();
          const detail = `this connection already has ${MAX_PIPELINED_REQUESTS} requests waiting for their answers; read them before sending more`;
          const body = JSON.stringify(problem(429, 'TOO_MANY_REQUESTS', detail));
          response.writeHead(429, {
            'Content-Type': 'application/problem+json',
            'Content-Length': Buffer.byteLength(body),
            Connection: 'close',
          });
          response.end(body);
          // The first refusal is the answer the client gets; the requests Node parsed behind it are never answered
          // (the connection closes after it) and not logged.
          if (!closing.has(socket)) {
            closing.add(socket);
            accessLog?.(accessLogLine(started, request.method ?? '-', targetPath(request.url), 429, Date.now()));
          }
          return;
        }
        waiting.set(socket, count + 1);
        response.once('close', () => waiting.set(socket, (waiting.get(socket) ?? 1) - 1));
        // A request the app never saw (`unreadableRequest`: a Host header or target that makes no URL) is logged here.
        const started = Date.now();
        response.once('finish', () => {
          if (reached.has(request)) return;
          accessLog?.(
            accessLogLine(started, request.method ?? '-', targetPath(request.url), response.statusCode, Date.now()),
          );
        });
        void listener(request, response);
      },
    );
    server.on('connection', (socket: Socket) => {
      const address = clientOf(socket.remoteAddress ?? '');
      const count = open.get(address) ?? 0;
      if (count >= perAddress || total >= MAX_CONNECTIONS) {
        const started = Date.now();
        refused.add(socket);
        const detail =
          count >= perAddress
            ? `${address} already has ${perAddress} connections open to the service; close some or reuse them`
            : `the service already has ${MAX_CONNECTIONS} connections open; try again later`;
        const body = JSON.stringify(problem(503, 'TOO_MANY_CONNECTIONS', detail));
        socket.write(
          `HTTP/1.1 503 ${titleOf(503)}\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        socket.destroySoon();
        accessLog?.(accessLogLine(started, '-', '-', 503, Date.now()));
        return;
      }
      since.set(socket, Date.now());
      open.set(address, count + 1);
      total += 1;
      socket.once('close', () => {
        total -= 1;
        const left = (open.get(address) ?? 1) - 1;
        if (left > 0) open.set(address, left);
        else open.delete(address);
      });
    });
    // Node closed a CONNECT request's connection without a word (no answer, no line) unless the server listens for it.
    server.on('connect', (request: IncomingMessage, socket: Socket) => {
      if (refused.has(socket)) return void socket.destroy(); // answered 503 when it connected
      const started = Date.now();
      const body = JSON.stringify(problem(404, 'NOT_FOUND', 'no route for CONNECT: the service tunnels nothing'));
      socket.end(
        `HTTP/1.1 404 ${titleOf(404)}\r\nContent-Type: application/problem+json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      accessLog?.(accessLogLine(started, request.method ?? '-', '-', 404, Date.now()));
    });
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      const status = answerClientError(error, socket);
      // Refused before its request line was read whole: its method and path are `-`, as for a connection refused 503.
      if (status !== null) accessLog?.(accessLogLine(since.get(socket) ?? Date.now(), '-', '-', status, Date.now()));
    });
    return server;
  }) as typeof createServer;
}

/** How many Host lines a request's headers hold (`rawHeaders` alternates names and values). */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2)
    if (rawHeaders[index]?.toLowerCase() === 'host') count += 1;
  return count;
}

/**
 * The answer to a request Node parsed but the adapter could not make a URL of, before the app sees it: a Host header
 * that names no host (`Host: a b`, `Host: user@x`), a path with a backslash, a target that is neither a path nor a URL
 * (`OPTIONS *`). `@hono/node-server` answered these itself, a bare 400 without a body, and the access log had no line
 * for them (attack29c).
 */
function unreadableRequest(error: unknown): Response {
  const [status, code, detail] =
    error instanceof RequestError
      ? [400, 'MALFORMED_REQUEST', `the request's target and Host header make no URL (${error.message})`]
      : [500, 'INTERNAL', 'the request failed before it reached the service'];
  return new Response(JSON.stringify(problem(status, code, detail)), {
    status,
    headers: { 'Content-Type': 'application/problem+json', Connection: 'close' },
  });
}

/**
 * Whom a connection's limit counts it against: its IPv4 address (an IPv4 client of a dual-stack socket too,
 * `::ffff:a.b.c.d`), or the /64 network of its IPv6 address: one host is given a /64 and may use any address in it,
 * so counting each address alone would let one client open 256 connections from each of them.
 */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('%')[0]?.split('::') ?? [];
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Answers, as problem+json, a request Node's HTTP parser refuses before the app sees it: header fields
 * over Node's limit (431), a request that took too long to arrive (408), a malformed one (400). Returns the status
 * answered, or null when nothing could be (the client left, or an answer had begun).
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): number | null {
  if (error.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten > 0) {
    socket.destroy();
    return null;
  }
  const [status, code, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'the request header fields are too large; send fewer or shorter headers']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'REQUEST_TIMEOUT', 'the request took too long to arrive; send it again']
        : [400, 'MALFORMED_REQUEST', 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify(problem(status, code, detail));
  socket.end(
    `HTTP/1.1 ${status} ${titleOf(status)}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  return status;
}
