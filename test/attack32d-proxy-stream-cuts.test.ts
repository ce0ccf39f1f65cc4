import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

/**
 * Attack 32d on the proxy's stream collector (ADR 18), with a real upstream on loopback: whether a streamed reply was
 * recorded depended on how its bytes were cut (a line of exactly 1 MiB ended by CRLF, cut between CR and LF, was not
 * recorded), and a stream whose lines end with a bare CR, which the event-stream format allows and the `openai`
 * client reads, was relayed and never recorded.
 */

let mneme: Mneme;
let upstream: FakeUpstream;
let proxy: RunningProxyServer;
let key: string;

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:' });
  upstream = await startFakeUpstream();
  proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: () => {} });
  key = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
});

afterEach(async () => {
  await proxy.close();
  await upstream.close();
  await mneme.close();
});

/** One event of a streamed completion, its lines ended by `end`. */
const event = (content: string, end: string, finishReason: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finishReason }] })}${end}${end}`;

/** Streams the pieces through the proxy; the reply the client read, and the messages recorded. */
async function relay(pieces: string[]) {
  upstream.scriptNext({ pieces });
  const response = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'Say hi' }] }),
  });
  const relayed = await response.text();
  await proxy.whenIdle();
  const recorded = (await mneme.messages({ channelId: 'proxy:ann' }).catch(() => ({ messages: [] }))).messages;
  return { relayed, recorded: recorded.map((message) => message.content.slice(0, 12)) };
}

describe('a streamed reply through the proxy, however its lines end and its bytes are cut (attack 32d)', () => {
  it('records a stream whose lines end with a bare CR', async () => {
    const stream = `${event('Hi', '\r')}${event(' there', '\r', 'stop')}data: [DONE]\r\r`;
    const { relayed, recorded } = await relay([stream]);
    expect(relayed).toBe(stream);
    expect(recorded).toEqual(['Say hi', 'Hi there']);
  });

  it('records a reply with a line of exactly a mebibyte whose CRLF comes cut between CR and LF', async () => {
    const line = event('', '');
    const long = event('x'.repeat(1024 * 1024 - line.length), '\r\n');
    const cut = long.indexOf('\r') + 1;
    // Empty pieces are pauses: the LF comes well after the CR.
    const pauses = Array.from({ length: 10 }, () => '');
    const { recorded } = await relay([long.slice(0, cut), ...pauses, long.slice(cut), event('', '\n', 'stop')]);
    expect(recorded).toEqual(['Say hi', 'xxxxxxxxxxxx']);
  });
});
