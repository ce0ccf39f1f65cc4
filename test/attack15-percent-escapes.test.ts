import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

let mneme: Mneme;
let server: RunningHttpServer;
let admin: string;
const logged: unknown[] = [];
beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  admin = (await mneme.apiKeys.create({ label: 'ops' })).key;
  server = await startHttpServer({ mneme, port: 0, logError: (error) => logged.push(error) });
});
afterAll(async () => {
  await server.close();
  await mneme.close();
});

async function send(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${admin}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/**
 * Attack finding (wt-attack15): a percent-escape that is not UTF-8 in the path (`%ED%A0%80`, a lone
 * surrogate; `%E0%A4%A`, a cut sequence) was not decoded and not refused: the router kept the escape as
 * text, so `PUT /api/users/%ED%A0%80` stored a user whose id is the nine characters `%ED%A0%80`, and a
 * channel was declared under such a name. A body that is not UTF-8 has been refused since session 5; the
 * path now is too.
 */
describe('a path or query string whose percent-escapes are not UTF-8', () => {
  it('is refused with 400 problem+json and stores nothing', async () => {
    for (const [method, path, body] of [
      ['PUT', '/api/users/%ED%A0%80', { displayName: 'Odd' }],
      ['PUT', '/api/channels/%E0%A4%A', { visibility: 'public' }],
      ['GET', '/api/channels/%E0%A4%A/messages', undefined],
      ['GET', '/api/memories?category=%FF', undefined],
    ] as const) {
      const answer = await send(method, path, body);
      expect(answer.status, path).toBe(400);
      expect(answer.type).toBe('application/problem+json');
      expect(answer.body).toMatchObject({ status: 400, code: 'MALFORMED_REQUEST' });
    }
    const exported: string[] = [];
    for await (const line of mneme.exportData()) exported.push(line);
    expect(exported.filter((line) => /"type":"(user|channel)"/.test(line))).toEqual([]);
    expect(logged).toEqual([]);
  });

  it('still takes escapes that are UTF-8, and a % sent as %25', async () => {
    expect((await send('PUT', '/api/users/%F0%9F%98%80', { displayName: 'Smiley' })).body).toMatchObject({
      id: '\u{1F600}',
    });
    expect((await send('PUT', '/api/channels/100%25', { visibility: 'private' })).body).toMatchObject({ id: '100%' });
  });
});
