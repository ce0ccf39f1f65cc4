import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type LoopbackReply, type LoopbackServer, startLoopbackServer } from './loopback-server.js';

/**
 * Attack findings (helper 151, 2026-12-05) on what `mneme proxy` does with its upstream's answers, against real
 * HTTP servers on loopback that speak OpenAI's wire format.
 */

const UPSTREAM_KEY = 'sk-upstream-secret';

interface World {
  mneme: Mneme;
  proxy: RunningProxyServer;
  /** The configured upstream: answers each request with what `answer` says. */
  upstream: LoopbackServer;
  /** A server nobody configured, which an upstream may point at. */
  elsewhere: LoopbackServer;
  log: string[];
  ann: string;
}

let world: World;
let answer: (path: string) => LoopbackReply;

const completion = (content: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'fake-model',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
});

beforeEach(async () => {
  const mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  const ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
  await mneme.remember({
    content: 'Ann keeps her bank PIN 4711 in the red notebook',
    scope: 'personal',
    userId: 'ann',
  });
  const elsewhere = await startLoopbackServer(() => ({ json: completion('Your PIN is in the red notebook.') }));
  answer = () => ({ json: completion('Your PIN is in the red notebook.') });
  const upstream = await startLoopbackServer((request) => answer(request.path));
  const log: string[] = [];
  const proxy = await startProxyServer({
    mneme,
    upstream: `${upstream.url}/v1`,
    upstreamApiKey: UPSTREAM_KEY,
    port: 0,
    log: (line) => log.push(line),
  });
  world = { mneme, proxy, upstream, elsewhere, log, ann };
});

afterEach(async () => {
  await world.proxy.close();
  await world.upstream.close();
  await world.elsewhere.close();
  await world.mneme.close();
});

function chat(body: unknown, stream = false) {
  return fetch(`${world.proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${world.ann}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', ...(stream ? { stream: true } : {}), ...(body as object) }),
  });
}

async function annsMessages() {
  await world.proxy.whenIdle();
  await world.mneme.whenIdle();
  return (await world.mneme.messages({ channelId: 'proxy:ann' })).messages;
}

describe('an upstream that answers with a redirect', () => {
  it.each([301, 302, 303, 307, 308])(
    'makes the proxy send nothing to the address it names, answer 502 problem+json and record nothing (%i)',
    async (status) => {
      answer = () => ({ status, headers: { location: `${world.elsewhere.url}/v1/chat/completions` }, text: '' });
      const response = await chat({ messages: [{ role: 'user', content: 'Where is my bank PIN?' }] });
      expect(response.status).toBe(502);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await response.json()) as { code: string; detail: string };
      expect(problem.code).toBe('UPSTREAM_REDIRECTED');
      expect(problem.detail).toMatch(/set --upstream/);
      // The memory recalled into the request went to the configured upstream only.
      expect(world.elsewhere.requests).toEqual([]);
      expect(world.upstream.requests).toHaveLength(1);
      expect(await annsMessages()).toEqual([]);
      expect(world.log.filter((line) => /redirect/.test(line))).toHaveLength(1);
      expect(world.log.join('\n')).toContain(world.elsewhere.url);
    },
  );

  it('makes the proxy follow no redirect of a streamed completion nor of the model list', async () => {
    answer = (path) => ({ status: 307, headers: { location: `${world.elsewhere.url}${path}` }, text: '' });
    const streamed = await chat({ messages: [{ role: 'user', content: 'Where is my bank PIN?' }] }, true);
    expect(streamed.status).toBe(502);
    expect(((await streamed.json()) as { code: string }).code).toBe('UPSTREAM_REDIRECTED');
    const models = await fetch(`${world.proxy.url}/v1/models`, { headers: { authorization: `Bearer ${world.ann}` } });
    expect(models.status).toBe(502);
    expect(((await models.json()) as { code: string }).code).toBe('UPSTREAM_REDIRECTED');
    expect(world.elsewhere.requests).toEqual([]);
    expect(await annsMessages()).toEqual([]);
  });

  it('never names the upstream key in the line it logs about a redirect that carries it', async () => {
    answer = () => ({
      status: 302,
      headers: { location: `${world.elsewhere.url}/login?key=${UPSTREAM_KEY}` },
      text: '',
    });
    const response = await chat({ messages: [{ role: 'user', content: 'Where is my bank PIN?' }] });
    expect(response.status).toBe(502);
    expect(await response.text()).not.toContain(UPSTREAM_KEY);
    expect(world.log.join('\n')).not.toContain(UPSTREAM_KEY);
    expect(world.log.join('\n')).toContain('[redacted]');
  });
});
