import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/*
 * The access log of `mneme serve` (stderr, one line per request) is read by people in a terminal and by tools that
 * split it into lines. Any web page can make its visitor's browser request a path of the service (an image, a link):
 * the attacker chooses the path's bytes.
 */

let mneme: Mneme;
let server: RunningHttpServer;
let key = '';
const lines: string[] = [];

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  key = (await mneme.apiKeys.create({ label: 'admin' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: () => {}, accessLog: (line) => lines.push(line) });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

/** C0 and C1 control characters: a line break, an escape. */
const isControl = (code: number) => code < 0x20 || (code >= 0x7f && code <= 0x9f);

/** Sends a request with the path exactly as given (Node's fetch would normalise it). */
function get(path: string, headers: Record<string, string> = {}): Promise<number> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port: Number(port), path, headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('the access log and a path an attacker chose', () => {
  it('writes one line per request, with no line break or escape character from the path', async () => {
    lines.length = 0;
    await get('/x%0D%0A2026-01-01T00:00:00Z%20DELETE%20/api/users/oz/data%20200%201ms');
    await get('/api/memories/%1B%5B2J%1B%5B31mred');
    await get('/inspector/inspector.js%00.png');

    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ GET \S+ \d{3} \d+ms$/);
      expect([...line].filter((character) => isControl(character.charCodeAt(0)))).toEqual([]);
    }
    expect(lines[0]).toContain('/x%0D%0A2026-01-01T00:00:00Z%20DELETE');
  });

  it('never writes the key, whether in its header or in a query string', async () => {
    lines.length = 0;
    expect(await get(`/api/memories?userId=${key}`, { authorization: `Bearer ${key}` })).toBe(200);
    expect(await get('/api/memories', { authorization: `Bearer ${key}x` })).toBe(401);

    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).not.toContain(key);
  });
});
