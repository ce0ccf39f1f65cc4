import type { Context, MiddlewareHandler } from 'hono';
import { Hono } from 'hono';
import { admit, type Principal } from '../core/access.js';
import type { ApiKeys } from '../core/api-keys.js';
import { ErrorCode, type FieldIssue, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import { parseInput } from '../core/schemas.js';
import { handleMcpRequest } from '../mcp/mcp-http.js';
import { accessLog } from './http-access-log.js';
import { type BodyShares, createBodyShares, readBodyBytes } from './http-body-share.js';
import { respondIdempotently } from './http-idempotency.js';
import { jsonShapeProblem } from './http-json-shape.js';
import { isLoopback } from './http-loopback.js';
import { HttpProblem, problem, problemOf } from './http-problem.js';
import type { Route, RouteInput } from './http-route.js';
import { apiRoutes } from './http-routes.js';
import { mountInspector } from './inspector/inspector.js';

export interface HttpAppOptions {
  mneme: Mneme;
  apiKeys: ApiKeys;
  /**
   * Serve without authentication, every caller an administrator, even though API keys exist (`mneme
   * serve --open`; loopback only). Left out, the service is open only until the first key is ever
   * created, and never again after that, whatever is revoked.
   */
  open?: boolean;
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Where unexpected errors are logged (never sent to clients). */
  logError?: (error: unknown) => void;
  /** Receives one access-log line per request (see `accessLog`); none when left out. */
  accessLog?: (line: string) => void;
}

/**
 * The HTTP face: the route table behind bearer API keys, each route's access rule checked and its input
 * parsed before its handler runs; every error is problem+json.
 */
export function createHttpApp(options: HttpAppOptions): Hono {
  const { mneme, apiKeys } = options;
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  // One share per key for the API and /mcp together.
  const shares = createBodyShares(maxBodyBytes);
  const logError = options.logError ?? ((error: unknown) => console.error(error));
  const app = new Hono();
  if (options.accessLog) app.use(accessLog(options.accessLog));
  app.use(defaultHeaders);

  app.onError((error) => {
    const { body, headers } = problemOf(error);
    if (body.status >= 500 && body.code !== 'STORE_BUSY') logError(error);
    return sendProblem(body.status, body, headers);
  });
  app.notFound((context) =>
    sendProblem(404, problem(404, 'NOT_FOUND', `no route for ${context.req.method} ${context.req.path}`)),
  );
  // The router keeps escapes it cannot decode as text (`%ED%A0%80` would become an id of nine
  // characters): a path or query string whose escapes are not UTF-8 is refused, as such a body is. A `%`
  // that starts no escape (`%ZZ`) is the character itself, as the router reads it.
  app.use(async (context, next) => {
    const url = new URL(context.req.url);
    try {
      for (const part of [url.pathname, url.search]) decodeURIComponent(part.replaceAll(/%(?![0-9a-f]{2})/gi, '%25'));
    } catch {
      return sendProblem(
        400,
        problem(400, 'MALFORMED_REQUEST', 'the path or query string is not percent-encoded UTF-8 (send % as %25)'),
      );
    }
    return next();
  });

  // MCP over streamable HTTP (ADR 13): the API's keys; the viewer from the Mneme-* headers.
  app.on(['GET', 'POST', 'DELETE'], '/mcp', async (context) => {
    const reauthenticate = () => authenticate(context, apiKeys, options.open === true);
    // Refused before its body is read; read again once the body is in (see the routes below).
    const principal = await reauthenticate();
    return handleMcpRequest(context.req.raw, {
      mneme,
      authenticate: reauthenticate,
      maxBodyBytes,
      hold: shares.hold(principal),
      bytesPerKey: shares.bytesPerKey,
      logError,
    });
  });

  for (const route of apiRoutes) {
    const path = route.path.replaceAll(/\{(\w+)\}/g, ':$1');
    const what = `${route.method.toUpperCase()} ${route.path}`;
    app.on(route.method.toUpperCase(), path, async (context) => {
      const keyed = route.access.kind !== 'open';
      const early = keyed ? await authenticate(context, apiKeys, options.open === true) : undefined;
      const input = await parseRequest(route, context, maxBodyBytes, early && { shares, principal: early });
      // A body may arrive minutes after the headers whose key let it be read: the key is read again once
      // it is in, so a key revoked (or its user purged) meanwhile does nothing.
      const principal = keyed && route.body ? await authenticate(context, apiKeys, options.open === true) : early;
      const viewer = principal && admit(principal, route.access, input, what);
      const request = { mneme: principal ? mneme.as(principal) : mneme, ...input, principal, viewer };
      return respondIdempotently(context, mneme.idempotency, route, principal, input, async () => ({
        status: route.status ?? 200,
        body: await route.handle(request),
      }));
    });
  }
  mountInspector(app);
  return app;
}

/**
 * The headers every answer carries unless it set its own (the inspector's pages do, ADR 32): never sniffed into
 * another type, no Referer, and for what is not a page (JSON, problem+json, the inspector's modules), nothing it could
 * run or load if a browser ever showed it, and no frame of another page. API answers hold memories: no cache keeps
 * them.
 */
const defaultHeaders: MiddlewareHandler = async (context, next) => {
  await next();
  const headers = context.res.headers;
  const set = (name: string, value: string) => {
    if (!headers.has(name)) headers.set(name, value);
  };
  set('X-Content-Type-Options', 'nosniff');
  set('Referrer-Policy', 'no-referrer');
  set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
  if (/^\/(api|mcp)(\/|$)/.test(context.req.path)) set('Cache-Control', 'no-store');
};

/** The caller's principal: open (an administrator) only when started open or before any key was ever created. */
export async function authenticate(context: Context, apiKeys: ApiKeys, open: boolean): Promise<Principal> {
  if (open) return openTo(context, 'open (started with --open)');
  if (!(await apiKeys.everCreated())) return openTo(context, 'open (no API key was ever created)');
  const header = context.req.header('authorization') ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const challenge = { 'WWW-Authenticate': 'Bearer realm="mneme"' };
  if (!match?.[1])
    throw new HttpProblem(401, 'UNAUTHORIZED', 'send an API key: Authorization: Bearer <key>', challenge);
  const principal = await apiKeys.authenticate(match[1]);
  if (!principal) throw new HttpProblem(401, 'UNAUTHORIZED', 'the API key is unknown or revoked', challenge);
  return principal;
}

/**
 * An administrator for a caller of an open service (loopback only), when the request names a loopback host and no
 * browser sent it for a page of another origin. A web page whose host name an attacker points at 127.0.0.1 (DNS
 * rebinding) reaches the service as its own origin, and the browser lets it read every answer: its requests carry
 * that name as their Host, and are refused. A page of any other origin (another site, or another port of localhost)
 * cannot read the answers, but its browser sends a form or a `no-cors` fetch without asking (a POST without a body,
 * such as a restore, needs no preflight): there is no key to hold it back, so such a request is refused too (ADR 32).
 */
function openTo(context: Context, label: string): Principal {
  const url = new URL(context.req.url);
  if (!isLoopback(url.hostname)) {
    throw new HttpProblem(
      403,
      'FORBIDDEN',
      `this service runs without API keys and answers only requests to a loopback host name (localhost, 127.0.0.1, [::1]), not ${url.hostname}; create a key (mneme keys create) to serve other names`,
    );
  }
  const from = crossOriginSender(context, url);
  if (from !== undefined) {
    throw new HttpProblem(
      403,
      'FORBIDDEN',
      `this service runs without API keys and answers no browser request sent for a page of another origin (${from}): a web page may not act as the administrator through its visitor's browser; call it from a page of this origin or outside a browser, or create a key (mneme keys create)`,
    );
  }
  return { kind: 'admin', label };
}

/**
 * The origin (or the browser's word for it) of a page of another origin that had the browser send this request;
 * undefined for a request of this origin's own pages, one the user typed, and one sent outside a browser.
 * `Sec-Fetch-Site` is the browser's own verdict (every current browser sends it); without it, an `Origin` other than
 * the request's own host, or `null` (a sandboxed frame, a file), is another origin.
 */
function crossOriginSender(context: Context, url: URL): string | undefined {
  const site = context.req.header('sec-fetch-site');
  const origin = context.req.header('origin');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return origin ?? `Sec-Fetch-Site: ${site}`;
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  return host === url.host ? undefined : origin;
}

/** The request's path parameters, query string and JSON body, each parsed with the route's schema (INVALID_INPUT otherwise). */
async function parseRequest(
  route: Route,
  context: Context,
  maxBodyBytes: number,
  shares: { shares: BodyShares; principal: Principal } | undefined,
): Promise<RouteInput> {
  return {
    params: route.params && parseInput(route.params, context.req.param(), 'path parameters'),
    query: route.query && parseInput(route.query, singleValuedQuery(context), 'query string'),
    body: route.body && parseInput(route.body, await readJsonBody(context, maxBodyBytes, shares), 'request body'),
  };
}

/**
 * The query string's fields, each given once: a field repeated (`?limit=1&limit=2`) is refused rather than
 * read as one of its values, which a gateway in front may read otherwise (the last, where the router reads
 * the first).
 */
function singleValuedQuery(context: Context): Record<string, string> {
  const issues: FieldIssue[] = [];
  const query: Record<string, string> = {};
  for (const [name, values] of Object.entries(context.req.queries())) {
    if (values.length > 1)
      issues.push({ path: name, message: `${name} is given ${values.length} times; give it once` });
    query[name] = values[0] ?? '';
  }
  if (issues.length === 0) return query;
  const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
  throw new MnemeError(ErrorCode.InvalidInput, `invalid query string: ${summary}`, { issues });
}

/**
 * Reads and parses a JSON body, counting bytes as they arrive so an oversized body is refused early; one nested too
 * deep or holding too many items is refused before it is parsed (`jsonShapeProblem`).
 */
export async function readJsonBody(
  context: Context,
  maxBodyBytes: number,
  shares?: { shares: BodyShares; principal: Principal },
): Promise<unknown> {
  const tooLarge = () => new HttpProblem(413, 'PAYLOAD_TOO_LARGE', `the body is larger than ${maxBodyBytes} bytes`);
  const declared = Number(context.req.header('content-length') ?? Number.NaN);
  if (declared > maxBodyBytes) throw tooLarge();
  const type = context.req.header('content-type') ?? '';
  const stream = context.req.raw.body;
  if (!stream) return {};
  if (!/^application\/(.+\+)?json\b/i.test(type)) {
    throw new HttpProblem(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as JSON with Content-Type: application/json');
  }
  const bytes = await readBodyBytes(stream, maxBodyBytes, shares?.shares.hold(shares.principal));
  if (bytes === 'too large') throw tooLarge();
  if (bytes === 'over share') throw overShare(shares?.shares.bytesPerKey ?? 0);
  const shape = jsonShapeProblem(bytes);
  if (shape) throw new HttpProblem(413, 'PAYLOAD_TOO_LARGE', shape);
  let text: string;
  try {
    // Invalid UTF-8 is refused, not decoded into replacement characters that would be stored instead.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HttpProblem(400, 'MALFORMED_JSON', 'the body is not valid UTF-8; send JSON encoded as UTF-8');
  }
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpProblem(400, 'MALFORMED_JSON', 'the body is not valid JSON');
  }
}

/** 429 for a key whose bodies being read already fill its share (ADR 33). */
function overShare(bytesPerKey: number): HttpProblem {
  return new HttpProblem(
    429,
    'TOO_MANY_REQUESTS',
    `this key is already sending ${bytesPerKey} bytes of request bodies; send this once its other requests are answered`,
    { 'Retry-After': '1' },
  );
}

export function sendProblem(status: number, body: object, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/problem+json', ...headers },
  });
}
