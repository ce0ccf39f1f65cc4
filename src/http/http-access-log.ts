import type { MiddlewareHandler } from 'hono';

/**
 * One line per request once it is answered: `2026-01-31T12:00:00Z GET /api/memories 200 4ms`. The time
 * it came, the method, the path without its query string (query values may hold secrets), the status
 * and the whole milliseconds it took; never a header (the key), a body or a query value. The path is written
 * percent-encoded, as it was sent: decoded, `%0A` would end the line and start a forged one, and `%1B` would
 * reach the terminal reading the log as an escape sequence (any web page can make a browser request such a path).
 *
 * The requests the server refuses before the app sees them are logged by it in the same form (`accessLogLine`): one
 * more pipelined request than a connection may have waiting (429), a connection over the limits (503, answered
 * before anything of it is read, so its method and path are `-`), and what Node's HTTP parser refuses (400 malformed,
 * 431 header fields too large, 408 header fields too slow; method and path `-` too).
 */
export function accessLog(write: (line: string) => void, now: () => number = Date.now): MiddlewareHandler {
  return async (context, next) => {
    const started = now();
    try {
      await next();
    } finally {
      write(accessLogLine(started, context.req.method, new URL(context.req.url).pathname, context.res.status, now()));
    }
  };
}

/** One access-log line: when the request came, its method and path (`-` when unknown), the status, the whole ms. */
export function accessLogLine(started: number, method: string, path: string, status: number, ended: number): string {
  const time = new Date(started).toISOString().replace(/\.\d+Z$/, 'Z');
  return `${time} ${method} ${path} ${status} ${Math.max(0, Math.round(ended - started))}ms`;
}

/**
 * The path of a request target as sent (`/a%0Ab?key=x` -> `/a%0Ab`), percent-encoded as `URL` writes it, or `-` when
 * it is none (`*`, `host:443`, or nothing: a request the server answers before the app parses it). A path is read as the
 * adapter reads it, after the host (`//evil.example/x` stays that path, not `/x` of another host), and a backslash is
 * kept as `%5C` (`URL` reads it as a slash and resolves the `..` around it: `/api\..\health` was logged `/health`).
 */
export function targetPath(target: string | undefined): string {
  if (target === undefined) return '-';
  try {
    if (/^https?:\/\//i.test(target)) return new URL(target).pathname;
    if (!target.startsWith('/')) return '-';
    const query = target.search(/[?#]/);
    const path = query === -1 ? target : target.slice(0, query);
    return new URL(`http://refused.invalid${path.replaceAll('\\', '%5C')}`).pathname;
  } catch {
    return '-';
  }
}
