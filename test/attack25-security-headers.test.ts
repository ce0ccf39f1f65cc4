import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/*
 * The headers a self-hosted admin UI and the API behind it should answer with (ADR 32): the inspector's pages are
 * never framed by another page, send no Referer (their query string is a search's words and a user's id), allow no
 * <base> or plugin and send forms only to this origin; every other answer is never sniffed, runs and loads nothing if
 * a browser shows it, and an API answer (memories) is kept by no cache.
 */

let mneme: Mneme;
let server: RunningHttpServer;
let key = '';

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  key = (await mneme.apiKeys.create({ label: 'admin' })).key;
  await mneme.remember({ content: 'Oz keeps the boat papers in the attic', scope: 'personal', userId: 'oz' });
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  await server.close();
  await mneme.close();
});

const directives = (policy: string | null) =>
  new Map(
    (policy ?? '')
      .split(';')
      .map((part) => part.trim().split(/\s+/) as [string, ...string[]])
      .map(([name, ...values]) => [name, values.join(' ')]),
  );

describe('the security headers of the inspector and the API', () => {
  it('sends every inspector page with a policy against framing, other origins, base and form targets, and no Referer', async () => {
    for (const path of ['/', '/search?q=boat&user=oz', '/memories/1', '/conversations', '/maintenance']) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const policy = directives(response.headers.get('content-security-policy'));
      expect(policy.get('frame-ancestors')).toBe("'none'");
      expect(policy.get('script-src')).toBe("'self'");
      expect(policy.get('object-src')).toBe("'none'");
      expect(policy.get('base-uri')).toBe("'none'");
      expect(policy.get('form-action')).toBe("'self'");
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('sends API answers and problems unsniffed, unframed, inert and uncached', async () => {
    const answers = [
      await fetch(`${server.url}/api/memories?userId=oz`, { headers: { authorization: `Bearer ${key}` } }),
      await fetch(`${server.url}/api/memories?userId=oz`),
      await fetch(`${server.url}/api/nothing-here`),
      await fetch(`${server.url}/mcp`, { method: 'GET', headers: { authorization: `Bearer ${key}` } }),
    ];
    expect(answers.map((response) => response.status)).toEqual([200, 401, 404, 405]);
    for (const response of answers) {
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('cache-control')).toBe('no-store');
      const policy = directives(response.headers.get('content-security-policy'));
      expect(policy.get('default-src')).toBe("'none'");
      expect(policy.get('frame-ancestors')).toBe("'none'");
    }
    const asset = await fetch(`${server.url}/inspector/inspector.js`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
    expect(asset.headers.get('cache-control')).toBe('no-cache');
  });

  it('serves only the inspector files it names, however a path spells its way out of their folder', async () => {
    const paths = [
      '/inspector/../../package.json',
      '/inspector/..%2f..%2fpackage.json',
      '/inspector/%2e%2e/%2e%2e/package.json',
      '/inspector/%2e%2e%2f%2e%2e%2fpackage.json',
      '/inspector/..%5c..%5cpackage.json',
      '/inspector/..\\..\\package.json',
      '/inspector/inspector.ts',
      '/inspector/inspector.js%00.png',
      '/inspector/%2fetc%2fpasswd',
      '/inspector//etc/passwd',
      '/inspector/__proto__',
      '/inspector/constructor',
      '/inspector/assets/inspector.js',
    ];
    for (const path of paths) {
      const { status, text } = await raw(path);
      expect({ path, status }).toEqual({
        path,
        status: expect.toSatisfy((code: number) => code === 400 || code === 404),
      });
      expect(text).not.toMatch(/"name": "mneme"|root:|readFileSync|^\/\/ The inspector/);
    }
  });
});

/** A GET with the path exactly as given (fetch would resolve its dot segments first). */
function raw(path: string): Promise<{ status: number; text: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: '127.0.0.1', port: Number(port), path }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}
