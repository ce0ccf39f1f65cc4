import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

/**
 * Attack 32d on ADR 18's membership check before the write, for an administrator key acting for a user. A user key
 * removed from the channel while its reply streamed writes nothing (the ingest would make it a member again). An
 * administrator key acting for Bob did write: Bob, removed from the book club while his reply streamed, was made a
 * member again by the exchange, and read the club's messages posted after his removal.
 */

let mneme: Mneme;
let upstream: FakeUpstream;
let proxy: RunningProxyServer;
let admin: string;
const log: string[] = [];

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:' });
  upstream = await startFakeUpstream();
  log.length = 0;
  proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: (line) => log.push(line) });
  admin = (await mneme.apiKeys.create({ label: 'operator' })).key;
});

afterEach(async () => {
  await proxy.close();
  await upstream.close();
  await mneme.close();
});

/** Starts a streamed completion for `user` in `channel` with the administrator key; resolves with the text read. */
async function streamFor(user: string, channel: string): Promise<string> {
  const response = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'x-mneme-channel': channel },
    body: JSON.stringify({
      model: 'fake-model',
      stream: true,
      user,
      messages: [{ role: 'user', content: 'Next month we read Dune' }],
    }),
  });
  return response.text();
}

/** Streams a completion for `user` in `channel`, runs `change` once the upstream began, and waits for every write. */
async function streamWhile(user: string, channel: string, change: () => Promise<unknown>): Promise<string> {
  const held = upstream.holdStreams();
  const reading = streamFor(user, channel);
  while (upstream.sent.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await change();
  held.release();
  const text = await reading;
  await proxy.whenIdle();
  return text;
}

describe('an administrator key acting for a user whose membership changed while the reply streamed (attack 32d)', () => {
  it('records nothing, and makes no member again, when the user was removed from the channel meanwhile', async () => {
    await mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann', 'bob'] });
    const removed = () => mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann'] });
    expect(await streamWhile('bob', 'book-club', removed)).toContain('[DONE]');
    expect((await mneme.channel('book-club')).members).toEqual(['ann']);
    expect((await mneme.messages({ channelId: 'book-club' })).messages).toEqual([]);
    expect(log).toEqual([expect.stringMatching(/bob is no longer a member of channel book-club/)]);
    // A user who was not a member when the request came is made one, as an administrator key may.
    expect(await streamFor('cy', 'book-club')).toContain('[DONE]');
    await proxy.whenIdle();
    expect((await mneme.channel('book-club')).members).toEqual(['ann', 'cy']);
  });

  it('records nothing when an administrator declared the channel without the user meanwhile', async () => {
    const declared = () => mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
    expect(await streamWhile('bob', 'ann-notes', declared)).toContain('[DONE]');
    expect((await mneme.channel('ann-notes')).members).toEqual(['ann']);
    expect((await mneme.messages({ channelId: 'ann-notes' })).messages).toEqual([]);
  });
});
