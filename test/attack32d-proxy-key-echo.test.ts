import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

/**
 * Attack 32d on ADR 18's promise that the upstream's key never reaches a client, "even when an upstream error echoes
 * it". The proxy redacted it in the headers of every answer and in the body of an answer that is not 2xx, but not in
 * a 2xx body: a stream reports a failure once its headers are sent as an `error` event in a 200 answer (OpenAI's shape),
 * and a gateway that prints the `Authorization` it refused in its 401 prints it there too; the client read the key,
 * and a 200 completion that echoed it was relayed and recorded as the assistant's reply, the key in the user's memory.
 */

const UPSTREAM_KEY = 'sk-upstream-secret-4f9a7c2e';

let mneme: Mneme;
let upstream: FakeUpstream;
let proxy: RunningProxyServer;
let key: string;

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:' });
  upstream = await startFakeUpstream();
  proxy = await startProxyServer({
    mneme,
    upstream: upstream.url,
    upstreamApiKey: UPSTREAM_KEY,
    port: 0,
    log: () => {},
  });
  key = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
});

afterEach(async () => {
  await proxy.close();
  await upstream.close();
  await mneme.close();
});

const ask = (stream: boolean) =>
  fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream, messages: [{ role: 'user', content: 'I like green tea' }] }),
  });

/** The channel's messages once every exchange handed to ingest is written. */
async function recorded(): Promise<string[]> {
  await proxy.whenIdle();
  return (await mneme.messages({ channelId: 'proxy:ann' })).messages.map((message) => message.content);
}

describe('the upstream key in a 2xx answer (attack 32d)', () => {
  it('never relays the upstream key in the error event of a stream, even split across two chunks', async () => {
    const error = `data: ${JSON.stringify({ error: { message: `the gateway refused Authorization: Bearer ${UPSTREAM_KEY}`, type: 'auth_error' } })}\n\n`;
    const from = error.indexOf(UPSTREAM_KEY);
    // The first event ends with the start of the key, and the key of the error event comes in two pieces, the first
    // of them nothing but its start: all is relayed as it should be, the start of a key that is not the key included.
    const near = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Green ' } }] })}\n\nsk-upstream-`;
    upstream.scriptNext({
      pieces: [near, ': not the key\n\n', error.slice(0, from), error.slice(from, from + 9), error.slice(from + 9)],
    });

    const response = await ask(true);
    const body = await response.text();

    expect(response.status).toBe(200);
    expect(body).toContain(`"content":"Green "}}]}\n\nsk-upstream-: not the key\n\n`);
    expect(body).toContain('the gateway refused Authorization: Bearer [redacted]');
    expect(body).not.toContain('secret-4f9a');
    expect(await recorded()).toEqual([]);
  });

  it('neither relays nor records the upstream key in a completion answered 200', async () => {
    upstream.failNext({
      status: 200,
      body: {
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `debug: forwarded with Bearer ${UPSTREAM_KEY}` },
            finish_reason: 'stop',
          },
        ],
      },
    });

    const response = await ask(false);
    const body = await response.text();

    expect(response.status).toBe(200);
    expect(body).toContain('debug: forwarded with Bearer [redacted]');
    expect(body).not.toContain(UPSTREAM_KEY);
    expect(await recorded()).toEqual(['I like green tea', 'debug: forwarded with Bearer [redacted]']);

    // A placeholder key of a local server is no secret: an answer that says it reaches the client as it was said.
    const local = await startProxyServer({
      mneme,
      upstream: upstream.url,
      upstreamApiKey: 'ollama',
      port: 0,
      log: () => {},
    });
    try {
      upstream.reply = ['Run ollama pull llama3 first.'];
      const answer = await fetch(`${local.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'How do I start?' }] }),
      });
      expect(await answer.text()).toContain('Run ollama pull llama3 first.');
    } finally {
      await local.close();
    }
  });
});
