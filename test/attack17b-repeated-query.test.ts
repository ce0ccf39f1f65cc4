import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack17b-query-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * attack17b: a query-string field given twice (`?userId=ann&userId=bo`, `?limit=1&limit=2`) was read as
 * its first value and the rest dropped in silence: a gateway in front that reads the last one (as many do)
 * checked another viewer than the one mneme served. It is now refused, naming the field.
 */
describe('a query-string field given more than once', () => {
  it('is refused with 422 problem+json naming it, and the same request with it once is answered', async () => {
    const mneme = await createMneme({ path: join(folder, 'query.db'), clock: createFixedClock() });
    try {
      const memory = await mneme.remember({ content: 'Ann likes green tea', scope: 'personal', userId: 'ann' });
      const annKey = await mneme.apiKeys.create({ label: 'ann-app', userId: 'ann' });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => expect(error).toBeUndefined() });
      const get = (path: string) => app.request(path, { headers: { authorization: `Bearer ${annKey.key}` } });

      for (const path of [
        `/api/memories/${memory.id}?userId=ann&userId=bo`,
        '/api/memories?limit=1&limit=2',
        '/api/channels/general/turns?count=1&count=2',
      ]) {
        const response = await get(path);
        expect({ path, status: response.status, type: response.headers.get('content-type') }).toEqual({
          path,
          status: 422,
          type: 'application/problem+json',
        });
        const field = /\?(\w+)=/.exec(path)?.[1];
        expect(((await response.json()) as { detail: string }).detail).toMatch(
          new RegExp(`invalid query string: ${field}: ${field} is given 2 times; give it once`),
        );
      }
      expect((await get(`/api/memories/${memory.id}?userId=ann`)).status).toBe(200);
    } finally {
      await mneme.close();
    }
  });
});
