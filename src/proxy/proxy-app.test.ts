import { afterEach, describe, expect, it } from 'vitest';
import { unusedLoopbackUrl } from '../../test/loopback-server.js';
import { createMneme } from '../config/create-mneme.js';
import type { Mneme } from '../core/mneme.js';
import { createProxyApp } from './proxy-app.js';

let mneme: Mneme | undefined;
afterEach(async () => {
  await mneme?.close();
  mneme = undefined;
});

describe('the proxy when its upstream cannot be reached', () => {
  it('answers 502 and logs the outage as what it is, not as an unexpected error', async () => {
    mneme = await createMneme({ path: ':memory:' });
    const log: string[] = [];
    const upstream = `${await unusedLoopbackUrl()}/v1`;
    const { app } = createProxyApp({ mneme, upstream, log: (line) => log.push(line) });
    const response = await app.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', user: 'ann', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatch(new RegExp(`^the upstream ${upstream} cannot be reached \\(.+\\); check --upstream`));
    expect(log[0]).not.toMatch(/unexpected/);
  });
});
