import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

/**
 * Attack findings (helper 151, 2026-12-05): requests `mneme proxy` forwarded with 200 and then could not record, one
 * log line the only trace: an administrator naming one of mneme's own actors as the user, and a user message
 * holding a lone surrogate. Each is now a 400 before anything is forwarded, as the HTTP API refuses the same input.
 */

let mneme: Mneme;
let upstream: FakeUpstream;
let proxy: RunningProxyServer;
let log: string[];
let keys: { ann: string; admin: string };

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  upstream = await startFakeUpstream();
  log = [];
  proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: (line) => log.push(line) });
  keys = {
    ann: (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key,
    admin: (await mneme.apiKeys.create({ label: 'operator' })).key,
  };
});

afterEach(async () => {
  await proxy.close();
  await upstream.close();
  await mneme.close();
});

/** A completion request with a raw JSON body, as any client may send it. */
function post(key: string, json: string) {
  return fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: json,
  });
}

/** How many channels hold messages, once every exchange handed to ingest is written. */
async function channelsWritten() {
  await proxy.whenIdle();
  await mneme.whenIdle();
  return (await mneme.channels()).length;
}

async function expectRefused(response: Response, field: RegExp) {
  expect(response.status).toBe(400);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await response.json()) as { code: string; detail: string };
  expect(problem.code).toBe('INVALID_CHAT_REQUEST');
  expect(problem.detail).toMatch(field);
  expect(problem.detail.split('\n')).toHaveLength(1);
  expect(upstream.requests).toEqual([]);
  expect(await channelsWritten()).toBe(0);
  expect(log).toEqual([]);
}

describe('an administrator key naming one of mneme own actors as the user of a chat', () => {
  it.each(['assistant', 'maintenance', 'extractor:chat'])(
    'is refused with 400 naming the field, and nothing is forwarded or recorded (%s)',
    async (user) => {
      const body = { model: 'fake-model', user, messages: [{ role: 'user', content: 'I always take green tea' }] };
      await expectRefused(await post(keys.admin, JSON.stringify(body)), /user.*reserved/);
    },
  );
});

describe('a latest user message holding a lone surrogate', () => {
  it('is refused with 400 naming it, and nothing is forwarded or recorded, whoever sends it', async () => {
    const messages = '[{"role":"user","content":"I always take green tea \\ud83d at breakfast"}]';
    await expectRefused(await post(keys.ann, `{"model":"fake-model","messages":${messages}}`), /latest user message/);
    await expectRefused(
      await post(keys.admin, `{"model":"fake-model","user":"ann","messages":${messages}}`),
      /well-formed/,
    );
  });

  it('is refused in a text part as well, while a whole emoji and a lone surrogate elsewhere pass', async () => {
    const parts = '[{"type":"text","text":"I always take \\udca9 tea"}]';
    await expectRefused(
      await post(keys.ann, `{"model":"fake-model","messages":[{"role":"user","content":${parts}}]}`),
      /latest user message/,
    );
    const passing = `{"model":"fake-model","messages":[{"role":"system","content":"be brief \\ud800"},{"role":"user","content":"I always take green tea \\ud83d\\ude00"}]}`;
    const response = await post(keys.ann, passing);
    expect(response.status).toBe(200);
    await proxy.whenIdle();
    const turns = (await mneme.messages({ channelId: 'proxy:ann' })).messages.map((message) => message.content);
    expect(turns).toEqual(['I always take green tea 😀', 'Green tea suits your mornings.']);
  });
});

describe('a latest user message holding the NUL character', () => {
  it('is refused with 400 naming it, and nothing is forwarded or recorded, as no store takes it (ADR 43)', async () => {
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'I prefer \u0000 oolong tea' }] };
    await expectRefused(await post(keys.ann, JSON.stringify(body)), /latest user message.*NUL/);
  });
});

describe('a user whose id is too long for a default channel', () => {
  it('is told to name a channel rather than that a channel it never named is too long, and may name one', async () => {
    const user = `u${'x'.repeat(197)}`;
    const body = JSON.stringify({
      model: 'fake-model',
      user,
      messages: [{ role: 'user', content: 'I take green tea' }],
    });
    const refused = await post(keys.admin, body);
    expect(refused.status).toBe(400);
    const problem = (await refused.json()) as { code: string; detail: string };
    expect(problem.code).toBe('INVALID_CHAT_REQUEST');
    expect(problem.detail).toMatch(/too long for a default channel .* X-Mneme-Channel header/);
    expect(upstream.requests).toEqual([]);
    const named = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.admin}`, 'content-type': 'application/json', 'x-mneme-channel': 'tea' },
      body,
    });
    expect(named.status).toBe(200);
    await proxy.whenIdle();
    expect((await mneme.messages({ channelId: 'tea' })).messages.map((message) => message.senderId)).toEqual([
      user,
      'assistant',
    ]);
  });
});
