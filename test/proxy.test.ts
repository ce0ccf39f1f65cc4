import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { MAX_MESSAGE_CHARS } from '../src/core/schemas.js';
import { type RunningProxyServer, startProxyServer } from '../src/proxy/proxy-server.js';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-proxy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const UPSTREAM_KEY = 'sk-upstream-secret';

interface World {
  /** The database file. */
  path: string;
  mneme: Mneme;
  upstream: FakeUpstream;
  proxy: RunningProxyServer;
  log: string[];
  /** The API key bound to each named user, and an administrator key. */
  keys: { ann: string; bob: string; admin: string };
  client(key: string, headers?: Record<string, string>): OpenAI;
  /** The messages of a channel, once every exchange handed to ingest is written and extracted. */
  settled(channelId: string): Promise<Array<{ role: string; content: string; senderId: string }>>;
}

let world: World;
let database = 0;

beforeEach(async () => {
  database += 1;
  const path = join(folder, `proxy-${database}.db`);
  const mneme = await createMneme({ path });
  const upstream = await startFakeUpstream();
  const log: string[] = [];
  const proxy = await startProxyServer({
    mneme,
    upstream: upstream.url,
    upstreamApiKey: UPSTREAM_KEY,
    port: 0,
    log: (line) => log.push(line),
  });
  const keys = {
    ann: (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key,
    bob: (await mneme.apiKeys.create({ label: 'bob app', userId: 'bob' })).key,
    admin: (await mneme.apiKeys.create({ label: 'operator' })).key,
  };
  world = {
    path,
    mneme,
    upstream,
    proxy,
    log,
    keys,
    client: (key, headers = {}) =>
      new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: headers }),
    async settled(channelId) {
      await proxy.whenIdle();
      await mneme.whenIdle();
      const page = await mneme.messages({ channelId });
      return page.messages.map(({ role, content, senderId }) => ({ role, content, senderId }));
    },
  };
});

afterEach(async () => {
  await world.proxy.close();
  await world.upstream.close();
  await world.mneme.close();
});

/** The messages the upstream received in its `index`th completion request. */
function sentMessages(index: number): Array<{ role: string; content: string }> {
  const completions = world.upstream.requests.filter((request) => request.path === '/v1/chat/completions');
  const body = completions[index]?.body as { messages: Array<{ role: string; content: string }> } | undefined;
  if (!body) throw new Error(`the upstream received no completion request number ${index}`);
  return body.messages;
}

/** One server-sent event of a streamed completion: a delta of the first choice, and its finish reason. */
function chunkEvent(delta: Record<string, unknown>, finishReason: string | null = null): string {
  const chunk = { id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model: 'fake-model' };
  return `data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
}

/** Reads a streamed completion to its end: the text, or the error the client raised. */
async function readStream(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  let text = '';
  try {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    return { text };
  } catch (error) {
    return { text, error: error instanceof Error ? error.message : String(error) };
  }
}

describe('mneme proxy (in-process, the official openai client, a fake upstream on loopback)', () => {
  it('puts the recalled memory in a system message after the client system message, before the conversation', async () => {
    await world.mneme.remember({ content: 'Ann prefers green tea in the morning', scope: 'personal', userId: 'ann' });

    const completion = await world.client(world.keys.ann).chat.completions.create({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'What should I drink in the morning?' },
      ],
    });

    expect(completion.choices[0]?.message.content).toBe('Green tea suits your mornings.');
    const sent = sentMessages(0);
    expect(sent.map((message) => message.role)).toEqual(['system', 'system', 'user']);
    expect(sent[0]?.content).toBe('You are a helpful assistant.');
    expect(sent[1]?.content).toMatch(/green tea/);
    expect(sent[2]?.content).toBe('What should I drink in the morning?');
  });

  it('sends the upstream its configured key and never the mneme key or the X-Mneme headers', async () => {
    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'proxy:ann' }).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
    });
    await world.client(world.keys.ann).models.list();

    expect(world.upstream.requests).toHaveLength(2);
    for (const request of world.upstream.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
      expect(JSON.stringify(request.headers)).not.toContain(world.keys.ann);
      expect(JSON.stringify(request.headers)).not.toContain(world.keys.ann.slice(0, 12));
      expect(request.headers['x-mneme-channel']).toBeUndefined();
    }
  });

  it('never forwards the headers a client sends to pick the organization or project the upstream key bills', async () => {
    const billing = { 'OpenAI-Organization': 'org-someone-else', 'OpenAI-Project': 'proj_someone_else' };
    await world.client(world.keys.ann, billing).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
    });
    await world.client(world.keys.ann, billing).models.list();

    expect(world.upstream.requests).toHaveLength(2);
    for (const request of world.upstream.requests) {
      expect(request.headers['openai-organization']).toBeUndefined();
      expect(request.headers['openai-project']).toBeUndefined();
      expect(request.headers['user-agent']).toBeDefined();
    }
  });

  it('ingests a plain exchange once, in the user channel, and recalls it in the next request', async () => {
    const ann = world.client(world.keys.ann);
    await ann.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'I prefer oolong tea in the afternoon' }] }],
    });

    expect(await world.settled('proxy:ann')).toEqual([
      { role: 'user', content: 'I prefer oolong tea in the afternoon', senderId: 'ann' },
      { role: 'assistant', content: 'Green tea suits your mornings.', senderId: 'assistant' },
    ]);
    const recalled = await world.mneme.recall({
      query: 'oolong tea',
      viewer: { userId: 'ann', channelId: 'proxy:ann' },
    });
    expect(recalled.hits.map((hit) => hit.memory.content).join('\n')).toMatch(/oolong/);
  });

  it('records a turn longer than a message can hold by its start and its end instead of dropping the exchange', async () => {
    const ann = world.client(world.keys.ann);
    world.upstream.reply = ['Here is the summary. '.repeat(2000), 'The end.'];
    const paste = `${'Line of a long log file. '.repeat(2000)}What failed in this log?`;
    await ann.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: paste }] });
    const [question, answer] = await world.settled('proxy:ann');
    expect(question?.content.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(question?.content.startsWith('Line of a long log file.')).toBe(true);
    expect(question?.content.endsWith('What failed in this log?')).toBe(true);
    expect(question?.content).toContain(` characters left out ...]`);
    expect(answer?.content.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(answer?.content.endsWith('The end.')).toBe(true);
    expect(world.log.join('\n')).not.toMatch(/failed/);
  });

  it('records a retried completion once when it carries the same Idempotency-Key, and a key reused for another message records that one', async () => {
    const ann = world.client(world.keys.ann);
    const ask = (text: string, key?: string) =>
      ann.chat.completions.create(
        { model: 'fake-model', messages: [{ role: 'user', content: text }] },
        key === undefined ? {} : { headers: { 'Idempotency-Key': key } },
      );
    await ask('I moved to Lisbon in March', 'retry-1');
    await ask('I moved to Lisbon in March', 'retry-1');
    await ask('I moved to Lisbon in March', 'retry-1');
    await ask('My sister lives in Porto', 'retry-1');
    const user = (content: string) => ({ role: 'user', content, senderId: 'ann' });
    const reply = { role: 'assistant', content: 'Green tea suits your mornings.', senderId: 'assistant' };
    expect(await world.settled('proxy:ann')).toEqual([
      user('I moved to Lisbon in March'),
      reply,
      user('My sister lives in Porto'),
      reply,
    ]);
    // Without a key, a client's retry is a new exchange, as before.
    await ask('I moved to Lisbon in March');
    expect(await world.settled('proxy:ann')).toHaveLength(6);
    // Bob's request under Ann's key text and key is his own exchange.
    await world
      .client(world.keys.bob)
      .chat.completions.create(
        { model: 'fake-model', messages: [{ role: 'user', content: 'I moved to Lisbon in March' }] },
        { headers: { 'Idempotency-Key': 'retry-1' } },
      );
    expect(await world.settled('proxy:bob')).toEqual([
      { ...user('I moved to Lisbon in March'), senderId: 'bob' },
      reply,
    ]);
  });

  it('refuses a malformed Idempotency-Key with 400 problem+json, forwarding nothing', async () => {
    const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${world.keys.ann}`,
        'content-type': 'application/json',
        'idempotency-key': 'k'.repeat(256),
      },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ code: 'INVALID_CHAT_REQUEST' });
    expect(world.upstream.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(0);
  });

  it('relays a streamed reply chunk by chunk, and ingests it once after the stream ended', async () => {
    const held = world.upstream.holdStreams();
    const stream = await world.client(world.keys.ann).chat.completions.create({
      model: 'fake-model',
      stream: true,
      messages: [{ role: 'user', content: 'My favourite mountain is the Matterhorn' }],
    });
    const received: string[] = [];
    let sentWhenFirstArrived = -1;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        if (received.length === 0) {
          sentWhenFirstArrived = world.upstream.sent.length;
          held.release();
        }
        received.push(content);
      }
    }

    // The first piece reached the client while the upstream had sent only the role event and that piece.
    expect(sentWhenFirstArrived).toBe(2);
    expect(world.upstream.sent.at(-1)).toBe('[DONE]');
    expect(received).toEqual(['Green ', 'tea ', 'suits ', 'your ', 'mornings.']);
    expect(await world.settled('proxy:ann')).toEqual([
      { role: 'user', content: 'My favourite mountain is the Matterhorn', senderId: 'ann' },
      { role: 'assistant', content: 'Green tea suits your mornings.', senderId: 'assistant' },
    ]);
    const recalled = await world.mneme.recall({
      query: 'Matterhorn',
      viewer: { userId: 'ann', channelId: 'proxy:ann' },
    });
    expect(recalled.hits.length).toBeGreaterThan(0);
  });

  it('cancels the upstream and ingests nothing when the client leaves in the middle of a stream', async () => {
    world.upstream.holdStreams();
    const controller = new AbortController();
    const stream = await world
      .client(world.keys.ann)
      .chat.completions.create(
        { model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'I collect old maps of Venice' }] },
        { signal: controller.signal },
      );
    const ended = world.upstream.streamEnded();
    const received: string[] = [];
    try {
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta.content;
        if (content) {
          received.push(content);
          controller.abort();
        }
      }
    } catch {
      // the openai client may raise its abort error here
    }

    expect(received).toEqual(['Green ']);
    expect(await ended).toBe('client-left');
    expect(world.upstream.sent).not.toContain('[DONE]');
    expect(await world.settled('proxy:ann')).toEqual([]);
  });

  it("never puts one user's memories in another user's upstream request", async () => {
    await world.mneme.remember({
      content: 'Ann keeps her spare key under the blue flowerpot',
      scope: 'personal',
      userId: 'ann',
    });
    await world.client(world.keys.ann).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Where is my spare key?' }],
    });
    await world.client(world.keys.bob).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Where is my spare key?' }],
    });

    expect(JSON.stringify(sentMessages(0))).toContain('blue flowerpot');
    expect(JSON.stringify(sentMessages(1))).not.toContain('flowerpot');
    expect(sentMessages(1).map((message) => message.role)).toEqual(['user']);
  });

  it("never lets a user key speak upstream in another user's name through the body's user field", async () => {
    await world.client(world.keys.bob).chat.completions.create({
      model: 'fake-model',
      user: 'ann',
      messages: [{ role: 'user', content: 'Charge this to Ann please' }],
    });
    await world.client(world.keys.bob).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'And this one to nobody' }],
    });

    const bodies = world.upstream.requests.map((request) => request.body as Record<string, unknown>);
    expect(bodies.map((body) => body.user)).toEqual(['bob', undefined]);
    expect((await world.settled('proxy:bob')).map((message) => message.senderId)).toEqual([
      'bob',
      'assistant',
      'bob',
      'assistant',
    ]);
  });

  it("takes an administrator key's user from the body's user field, and refuses the request without one", async () => {
    await world.mneme.remember({ content: 'Ann plays the cello on Sundays', scope: 'personal', userId: 'ann' });
    const admin = world.client(world.keys.admin);
    await admin.chat.completions.create({
      model: 'fake-model',
      user: 'ann',
      messages: [{ role: 'user', content: 'What do I play on Sundays?' }],
    });
    expect(JSON.stringify(sentMessages(0))).toContain('cello');

    const refused = await fetch(`${world.proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.keys.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'What do I play on Sundays?' }],
      }),
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({ status: 400, code: 'USER_REQUIRED' });
    expect(world.upstream.requests).toHaveLength(1);
    expect((await world.settled('proxy:ann')).map((message) => message.content)).toEqual([
      'What do I play on Sundays?',
      'Green tea suits your mornings.',
    ]);
  });

  it('answers 401 problem+json for a missing, unknown or revoked key, and forwards nothing', async () => {
    const revoked = await world.mneme.apiKeys.create({ label: 'old', userId: 'ann' });
    await world.mneme.apiKeys.revoke(revoked.prefix);
    for (const authorization of [undefined, 'Bearer mneme_not_a_key', `Bearer ${revoked.key}`]) {
      const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    }
    const models = await fetch(`${world.proxy.url}/v1/models`);
    expect(models.status).toBe(401);
    expect(world.upstream.requests).toEqual([]);
  });

  it('refuses a user key naming a channel it is not a member of, and forwards nothing', async () => {
    await world.mneme.putChannel({ id: 'bob-and-carol', members: ['bob', 'carol'] });
    const attempt = world.client(world.keys.ann, { 'X-Mneme-Channel': 'bob-and-carol' }).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'What did Bob say?' }],
    });
    await expect(attempt).rejects.toMatchObject({ status: 403 });
    expect(world.upstream.requests).toEqual([]);
  });

  it('records the exchange in the channel the X-Mneme-Channel header names when the user is a member', async () => {
    await world.mneme.putChannel({ id: 'ann-kitchen', visibility: 'direct', members: ['ann'] });
    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-kitchen' }).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Our oven is a Bosch from 2019' }],
    });
    expect((await world.settled('ann-kitchen')).map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(await world.mneme.messages({ channelId: 'proxy:ann' })).toMatchObject({ messages: [] });
  });

  it('reads the X-Mneme-Channel header as the UTF-8 its bytes spell, and refuses bytes that are not UTF-8', async () => {
    await world.mneme.putChannel({ id: 'ann-küche', visibility: 'direct', members: ['ann'] });
    // One byte a character on the wire: these two are the UTF-8 bytes of "ü".
    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-k\u00c3\u00bcche' }).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Our fridge hums at night' }],
    });
    expect((await world.settled('ann-küche')).map((message) => message.role)).toEqual(['user', 'assistant']);
    const latin1 = world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-k\u00fcche' }).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Our fridge hums at night' }],
    });
    await expect(latin1).rejects.toMatchObject({ status: 400 });
  });

  it('passes an upstream 429 and 500 to the client unchanged, and ingests nothing', async () => {
    const ann = world.client(world.keys.ann);
    const ask = () =>
      ann.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'I like sailing boats' }],
      });
    world.upstream.failNext({
      status: 429,
      body: { error: { message: 'Rate limit reached, slow down', type: 'rate_limit_error', code: 'rate_limited' } },
      headers: { 'retry-after': '7', 'x-request-id': 'req-429' },
    });
    const limited = await ask().catch((error: unknown) => error);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).message).toMatch(/Rate limit reached, slow down/);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('7');
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).requestID).toBe('req-429');

    world.upstream.failNext({ status: 500, body: { error: { message: 'The model crashed', type: 'server_error' } } });
    const crashed = await ask().catch((error: unknown) => error);
    expect(crashed).toBeInstanceOf(OpenAI.InternalServerError);
    expect((crashed as Error).message).toMatch(/The model crashed/);

    expect(await world.settled('proxy:ann')).toEqual([]);
  });

  it('answers 502 problem+json when the upstream cannot be reached', async () => {
    await world.upstream.close();
    const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.keys.ann}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
  });

  it('answers 502 problem+json and records nothing when an answer that is not a stream passes the size it reads', async () => {
    const small = await startProxyServer({
      mneme: world.mneme,
      upstream: world.upstream.url,
      upstreamApiKey: UPSTREAM_KEY,
      port: 0,
      maxAnswerBytes: 64 * 1024,
      log: (line) => world.log.push(line),
    });
    try {
      const ask = (content: string) =>
        fetch(`${small.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${world.keys.ann}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content }] }),
        });
      world.upstream.reply = ['A short answer.'];
      expect((await ask('Say something short')).status).toBe(200);
      world.upstream.reply = ['A long answer. '.repeat(10_000)];
      const response = await ask('Say something long');
      expect(response.status).toBe(502);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(await response.json()).toMatchObject({ code: 'UPSTREAM_ANSWER_TOO_LARGE' });
      await small.whenIdle();
      expect((await world.settled('proxy:ann')).map((message) => message.content)).toEqual([
        'Say something short',
        'A short answer.',
      ]);
      expect(world.log).toEqual([expect.stringMatching(/^the upstream's answer passed 65536 bytes/)]);
    } finally {
      await small.close();
    }
  });

  it('forwards the chat without context and logs why when recall fails', async () => {
    await world.mneme.remember({ content: 'Ann is allergic to peanuts', scope: 'personal', userId: 'ann' });
    // Another connection damages the database under the proxy: the memories' full-text index is gone.
    const other = new Database(world.path);
    other.exec('DROP TABLE memories_fts');
    other.close();

    const completion = await world.client(world.keys.ann).chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Am I allergic to peanuts?' }],
    });

    expect(completion.choices[0]?.message.content).toBe('Green tea suits your mornings.');
    expect(sentMessages(0).map((message) => message.role)).toEqual(['user']);
    expect(world.log.filter((line) => /recall failed/.test(line))).toHaveLength(1);
    expect(world.log[0]).toMatch(/forwarding without context for user ann: recall failed: /);
  });

  it('in a tool loop, records the user message once, with the final answer and not the text beside a tool call', async () => {
    const habit = await world.mneme.remember({
      content: 'Ann checks the weather in Porto before cycling',
      scope: 'personal',
      userId: 'ann',
    });
    const ann = world.client(world.keys.ann);
    const question = { role: 'user' as const, content: 'What is the weather in Porto today?' };
    const toolCall = {
      id: 'call-1',
      type: 'function' as const,
      function: { name: 'weather', arguments: '{"city":"Porto"}' },
    };
    const tools = [{ type: 'function' as const, function: { name: 'weather', parameters: { type: 'object' } } }];
    world.upstream.failNext({
      status: 200,
      body: {
        id: 'chatcmpl-t',
        object: 'chat.completion',
        created: 1,
        model: 'fake-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Let me check the forecast.', tool_calls: [toolCall] },
            finish_reason: 'tool_calls',
          },
        ],
      },
    });
    const first = await ann.chat.completions.create({ model: 'fake-model', messages: [question], tools });
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');

    world.upstream.scriptNext({
      pieces: [
        chunkEvent({ role: 'assistant', content: 'One more look.' }),
        chunkEvent({ tool_calls: [{ index: 0, ...toolCall }] }),
        chunkEvent({}, 'tool_calls'),
        'data: [DONE]\n\n',
      ],
    });
    const steps = [
      question,
      { role: 'assistant' as const, content: 'Let me check the forecast.', tool_calls: [toolCall] },
    ];
    const result = { role: 'tool' as const, tool_call_id: 'call-1', content: 'sunny, 24 degrees' };
    const second = await readStream(
      await ann.chat.completions.create({ model: 'fake-model', stream: true, messages: [...steps, result], tools }),
    );
    expect(second).toEqual({ text: 'One more look.' });

    await ann.chat.completions.create({ model: 'fake-model', messages: [...steps, result, result], tools });
    for (const index of [0, 1, 2]) expect(JSON.stringify(sentMessages(index))).toContain('before cycling');

    expect(await world.settled('proxy:ann')).toEqual([
      { role: 'user', content: 'What is the weather in Porto today?', senderId: 'ann' },
      { role: 'assistant', content: 'Green tea suits your mornings.', senderId: 'assistant' },
    ]);
    // Every step is given the memory, but only the first, where the user spoke last, reinforces it.
    expect((await world.mneme.get(habit.id)).accessCount).toBe(1);
  });

  it('records nothing of a stream that carries an error event, ends unfinished or breaks off, and tells the client', async () => {
    const ann = world.client(world.keys.ann);
    const ask = async (content: string) =>
      readStream(
        await ann.chat.completions.create({ model: 'fake-model', stream: true, messages: [{ role: 'user', content }] }),
      );

    world.upstream.scriptNext({
      pieces: [
        chunkEvent({ role: 'assistant', content: 'The capital of ' }),
        `data: ${JSON.stringify({ error: { message: 'The server had an error', type: 'server_error' } })}\n\n`,
      ],
    });
    expect(await ask('What is the capital of Peru?')).toEqual({
      text: 'The capital of ',
      error: expect.stringMatching(/The server had an error/),
    });

    world.upstream.scriptNext({ pieces: [chunkEvent({ role: 'assistant', content: 'Lima is the capi' })] });
    expect(await ask('And of Chile?')).toEqual({ text: 'Lima is the capi' });

    world.upstream.scriptNext({ pieces: [chunkEvent({ role: 'assistant', content: 'Half a ' })], break: true });
    expect(await ask('And of Bolivia?')).toEqual({
      text: 'Half a ',
      error: expect.stringMatching(/the upstream's stream broke off/),
    });

    expect(await world.settled('proxy:ann')).toEqual([]);
    expect(world.log).toEqual([expect.stringMatching(/^the upstream's stream broke off for user ann: /)]);
  });

  it('never relays the upstream key to the client, even when an upstream error echoes it', async () => {
    world.upstream.failNext({
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${UPSTREAM_KEY}`, type: 'invalid_request_error' } },
      headers: { 'x-echoed-authorization': `Bearer ${UPSTREAM_KEY}` },
    });
    const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.keys.ann}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(response.status).toBe(401);
    const body = await response.text();
    expect(body).toContain('Incorrect API key provided: ');
    expect(body).not.toContain(UPSTREAM_KEY);
    expect(response.headers.get('x-echoed-authorization')).toMatch(/^Bearer /);
    expect(JSON.stringify([...response.headers])).not.toContain(UPSTREAM_KEY);
  });

  it('records nothing in a room whose membership the user lost while the reply was streaming', async () => {
    await world.mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann', 'bob'] });
    const held = world.upstream.holdStreams();
    const stream = await world.client(world.keys.bob, { 'X-Mneme-Channel': 'book-club' }).chat.completions.create({
      model: 'fake-model',
      stream: true,
      messages: [{ role: 'user', content: 'Next month we read Dune' }],
    });
    const reading = readStream(stream);
    await world.mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann'] });
    held.release();

    expect(await reading).toEqual({ text: 'Green tea suits your mornings.' });
    expect(await world.settled('book-club')).toEqual([]);
    expect((await world.mneme.channel('book-club')).members).toEqual(['ann']);
    expect(world.log).toEqual([
      expect.stringMatching(
        /^ingesting the exchange of user bob in channel book-club failed: user bob is not a member/,
      ),
    ]);
  });

  it('recalls only the channel and global memories in a channel another member reads, for a user key and an administrator key', async () => {
    await world.mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann', 'bob'] });
    await world.mneme.remember({
      content: 'Ann keeps her bank PIN 4921 for the book fund',
      scope: 'personal',
      userId: 'ann',
    });
    await world.mneme.remember({
      content: 'The book fund pays for the next novel',
      scope: 'room',
      channelId: 'book-club',
    });
    const question = {
      model: 'fake-model',
      messages: [{ role: 'user' as const, content: 'What about the book fund?' }],
    };

    await world.client(world.keys.ann).chat.completions.create(question);
    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'book-club' }).chat.completions.create(question);
    await world.client(world.keys.admin, { 'X-Mneme-Channel': 'book-club' }).chat.completions.create({
      ...question,
      user: 'ann',
    });

    // In her own channel the PIN is hers to be reminded of; in the club, Bob reads the reply recorded there.
    expect(sentMessages(0)[0]?.content).toMatch(/4921/);
    for (const index of [1, 2]) {
      const block = sentMessages(index)[0]?.content;
      expect(block).toMatch(/next novel/);
      expect(block).not.toMatch(/4921/);
    }
    expect((await world.settled('book-club')).map((message) => message.senderId)).toEqual([
      'ann',
      'assistant',
      'ann',
      'assistant',
    ]);
  });

  it('recalls no personal memory in a public channel, even one whose only member is the caller', async () => {
    await world.mneme.putChannel({ id: 'ann-blog', visibility: 'public', members: ['ann'] });
    await world.mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
    await world.mneme.remember({
      content: 'Ann keeps her bank PIN 4921 for the book fund',
      scope: 'personal',
      userId: 'ann',
    });
    const question = {
      model: 'fake-model',
      messages: [{ role: 'user' as const, content: 'What about the book fund?' }],
    };

    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-notes' }).chat.completions.create(question);
    await world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-blog' }).chat.completions.create(question);

    expect(sentMessages(0)[0]?.content).toMatch(/4921/);
    expect(
      sentMessages(1)
        .map((message) => message.content)
        .join('\n'),
    ).not.toMatch(/4921/);
  });

  it('records nothing built on personal memories in a channel that gained another member while the reply was streaming', async () => {
    await world.mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
    await world.mneme.remember({
      content: 'Ann keeps her bank PIN 4921 for the book fund',
      scope: 'personal',
      userId: 'ann',
    });
    const held = world.upstream.holdStreams();
    const stream = await world.client(world.keys.ann, { 'X-Mneme-Channel': 'ann-notes' }).chat.completions.create({
      model: 'fake-model',
      stream: true,
      messages: [{ role: 'user', content: 'What about the book fund?' }],
    });
    const reading = readStream(stream);
    await world.mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann', 'bob'] });
    held.release();

    expect(await reading).toEqual({ text: 'Green tea suits your mornings.' });
    expect(sentMessages(0)[0]?.content).toMatch(/4921/);
    expect(await world.settled('ann-notes')).toEqual([]);
    expect(world.log).toEqual([
      expect.stringMatching(/^the exchange of user ann was not recorded: channel ann-notes gained another reader/),
    ]);
  });

  it('records nothing for a key revoked while its reply was streaming', async () => {
    const laptop = await world.mneme.apiKeys.create({ label: 'ann laptop', userId: 'ann' });
    const held = world.upstream.holdStreams();
    const stream = await world.client(laptop.key).chat.completions.create({
      model: 'fake-model',
      stream: true,
      messages: [{ role: 'user', content: 'My locker code is 1234' }],
    });
    const reading = readStream(stream);
    await world.mneme.apiKeys.revoke(laptop.prefix);
    held.release();

    expect(await reading).toEqual({ text: 'Green tea suits your mornings.' });
    expect(await world.settled('proxy:ann')).toEqual([]);
    expect(world.log).toEqual([
      expect.stringMatching(
        /^ingesting the exchange of user ann in channel proxy:ann failed: the API key is unknown or revoked/,
      ),
    ]);
  });

  it('never relays a cookie the upstream sets, as it never forwards the client its cookies', async () => {
    world.upstream.failNext({
      status: 200,
      body: { choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }] },
      headers: { 'set-cookie': 'upstream_session=operator-account; Path=/', 'x-request-id': 'req-1' },
    });
    const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.keys.ann}`, 'content-type': 'application/json', cookie: 'a=b' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('req-1');
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(world.upstream.requests[0]?.headers.cookie).toBeUndefined();
  });

  it('relays GET /v1/models', async () => {
    const models = await world.client(world.keys.bob).models.list();
    expect(models.data.map((model) => model.id)).toEqual(['fake-model']);
    expect(world.upstream.requests.map((request) => `${request.method} ${request.path}`)).toEqual(['GET /v1/models']);
  });

  it('answers a body that is not JSON with 400 problem+json, forwarding and ingesting nothing', async () => {
    for (const body of [
      '{"model": "fake-model", "messages": [',
      '[1, 2]',
      '{"model": "fake-model", "messages": "hi"}',
    ]) {
      const response = await fetch(`${world.proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${world.keys.ann}`, 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    }
    expect(world.upstream.requests).toEqual([]);
    expect(await world.settled('proxy:ann')).toEqual([]);
  });
});

describe('mneme proxy on a database without keys', () => {
  it('answers like mneme serve: open on loopback, every caller an administrator who must name the user', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    const upstream = await startFakeUpstream();
    const proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: () => {} });
    try {
      await mneme.remember({ content: 'Oz rides a red bicycle', scope: 'personal', userId: 'oz' });
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'anything', maxRetries: 0 });
      await expect(
        client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'my bicycle?' }] }),
      ).rejects.toMatchObject({ status: 400 });
      await client.chat.completions.create({
        model: 'fake-model',
        user: 'oz',
        messages: [{ role: 'user', content: 'What colour is my bicycle?' }],
      });
      expect(JSON.stringify(upstream.requests[0]?.body)).toContain('red bicycle');
      expect(upstream.requests[0]?.headers.authorization).toBeUndefined();
      await expect(startProxyServer({ mneme, upstream: upstream.url, host: '0.0.0.0', port: 0 })).rejects.toThrow(
        /refusing to listen on 0.0.0.0 without authentication/,
      );
    } finally {
      await proxy.close();
      await upstream.close();
      await mneme.close();
    }
  });

  it('answers 508 problem+json, forwarding once and recording nothing, when the upstream is the proxy itself', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    const port = await freePort();
    const log: string[] = [];
    const proxy = await startProxyServer({
      mneme,
      upstream: `http://127.0.0.1:${port}/v1`,
      port,
      log: (line) => log.push(line),
    });
    try {
      const answer = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake-model', user: 'oz', messages: [{ role: 'user', content: 'Hello there' }] }),
      });
      expect(answer.status).toBe(508);
      expect(await answer.json()).toMatchObject({ code: 'UPSTREAM_LOOP', status: 508 });
      expect(log).toEqual([expect.stringMatching(/leads back to this mneme proxy/)]);
      await proxy.whenIdle();
      await mneme.whenIdle();
      expect((await mneme.messages({ channelId: 'proxy:oz' })).messages).toEqual([]);
    } finally {
      await proxy.close();
      await mneme.close();
    }
  });
});

/** A port nothing listens on now, for a server that must know its own address before it starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
