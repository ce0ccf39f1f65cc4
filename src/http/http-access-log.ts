import type { MiddlewareHandler } from 'hono';

/**
 * One line per request once it is answered: `2026-01-31T12:00:00Z GET /api/memories 200 4ms`. The time
 * it came, the method, the path without its query string (query values may hold secrets), the status
 * and the whole milliseconds it took; never a header (the key), a body or a query value. The path is written
 * percent-encoded, as it was sent: decoded, `%0A` would end the line and start a forged one, and `%1B` would
 * reach the terminal reading the log as an escape sequence (any web page can make a browser request such a path).
 */
export function accessLog(write: (line: string) => void, now: () => number = Date.now): MiddlewareHandler {
  return async (context, next) => {
    const started = now();
    try {
      await next();
    } finally {
      const time = new Date(started).toISOString().replace(/\.\d+Z$/, 'Z');
      const ms = Math.max(0, Math.round(now() - started));
      write(`${time} ${context.req.method} ${new URL(context.req.url).pathname} ${context.res.status} ${ms}ms`);
    }
  };
}
