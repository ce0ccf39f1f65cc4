import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createMneme } from '../config/create-mneme.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import { MAX_MESSAGE_CHARS } from '../core/schemas.js';
import { createFixedClock } from '../testing.js';
import type { GenerateResult, PromptMessage, StreamPart } from './ai-sdk-prompt.js';
import { type MiddlewareMneme, type MnemeMiddlewareOptions, mnemeMiddleware } from './mneme-middleware.js';

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};

/** A generated reply of the mock model: `text`, finished with `stop`. */
function reply(text: string): GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/** A stream whose parts the test hands over one by one, and closes (or breaks) when it chooses. */
function controlledStream() {
  let controller: ReadableStreamDefaultController<StreamPart> | undefined;
  const stream = new ReadableStream<StreamPart>({
    start(started) {
      controller = started;
    },
  });
  const control = () => {
    if (controller === undefined) throw new Error('the stream has not started');
    return controller;
  };
  return {
    stream,
    send: (...parts: StreamPart[]) => {
      for (const part of parts) control().enqueue(part);
    },
    close: () => control().close(),
  };
}

const streamStart: StreamPart = { type: 'stream-start', warnings: [] };
const textDelta = (delta: string): StreamPart => ({ type: 'text-delta', id: 't1', delta });
const finish: StreamPart = { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage };

/** The system messages of a prompt the model received. */
const systemTexts = (prompt: readonly PromptMessage[]) =>
  prompt.flatMap((message) => (message.role === 'system' ? [message.content] : []));

/** What a warning hook received. */
interface Warning {
  error: unknown;
  phase: string;
}

describe('the AI SDK middleware', () => {
  let mneme: Mneme;
  let warnings: Warning[];

  beforeEach(async () => {
    mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T12:00:00.000Z') });
    warnings = [];
    await mneme.remember({
      content: 'Ann drinks her coffee as an oat milk flat white',
      scope: 'personal',
      userId: 'ann',
      category: 'preference',
    });
    await mneme.remember({
      content: 'Bob drinks his coffee black, a double espresso',
      scope: 'personal',
      userId: 'bob',
      category: 'preference',
    });
  });
  afterEach(async () => {
    await mneme.close();
  });

  const middlewareFor = (options: Partial<MnemeMiddlewareOptions> = {}) =>
    mnemeMiddleware({
      mneme,
      viewer: { userId: 'ann', channelId: 'dm-ann' },
      onError: (error, phase) => warnings.push({ error, phase }),
      ...options,
    });

  it('puts the recalled memory in a system message after the system prompt and leaves the user text as it was', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('An oat milk flat white, as usual.') });
    const middleware = middlewareFor();
    const question = 'How do I take my coffee?';
    const { text } = await generateText({
      model: wrapLanguageModel({ model, middleware }),
      system: 'You are a barista.',
      prompt: question,
    });
    expect(text).toBe('An oat milk flat white, as usual.');
    const [call] = model.doGenerateCalls;
    const prompt = call?.prompt ?? [];
    expect(prompt.map((message) => message.role)).toEqual(['system', 'system', 'user']);
    const [systemPrompt, block] = systemTexts(prompt);
    expect(systemPrompt).toBe('You are a barista.');
    expect(block).toContain('Ann drinks her coffee as an oat milk flat white');
    expect(block).not.toContain('espresso');
    expect(prompt[2]).toEqual({ role: 'user', content: [{ type: 'text', text: question }] });
    expect(warnings).toEqual([]);
  });

  it('puts the block first when the prompt has no system message', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('Oat milk.') });
    await generateText({ model: wrapLanguageModel({ model, middleware: middlewareFor() }), prompt: 'My coffee?' });
    const prompt = model.doGenerateCalls[0]?.prompt ?? [];
    expect(prompt.map((message) => message.role)).toEqual(['system', 'user']);
    expect(systemTexts(prompt)[0]).toContain('oat milk flat white');
  });

  it('ingests a generated exchange once, in the background, with the reply text', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('An oat milk flat white.') });
    const middleware = middlewareFor();
    await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I take my coffee?' });
    await middleware.settled();
    const turns = await mneme.turns({ channelId: 'dm-ann' });
    expect(turns.map(({ role, senderId, content }) => ({ role, senderId, content }))).toEqual([
      { role: 'user', senderId: 'ann', content: 'How do I take my coffee?' },
      { role: 'assistant', senderId: 'assistant', content: 'An oat milk flat white.' },
    ]);
    expect(turns[1]?.replyTo).toBe(turns[0]?.id);
  });

  it('records a turn longer than a message can hold by its start and its end, and warns of nothing', async () => {
    const paste = `${'The quarterly report says revenue grew. '.repeat(1500)}Which of my cats is called Miso?`;
    const model = new MockLanguageModelV3({ doGenerate: reply(`${'Miso is the tabby. '.repeat(2500)}That is all.`) });
    const middleware = middlewareFor();
    await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: paste });
    await middleware.settled();
    expect(warnings).toEqual([]);
    const [question, answer] = await mneme.turns({ channelId: 'dm-ann' });
    expect(question?.content.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(question?.content.startsWith('The quarterly report says revenue grew.')).toBe(true);
    expect(question?.content.endsWith('Which of my cats is called Miso?')).toBe(true);
    expect(question?.content).toMatch(/\n\[\.\.\. \d+ characters left out \.\.\.\]\n/);
    expect(answer?.content.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(answer?.content.endsWith('That is all.')).toBe(true);
    expect(answer?.replyTo).toBe(question?.id);
  });

  it('ingests a streamed reply once, only after the stream has ended', async () => {
    const chunks = controlledStream();
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
    const middleware = middlewareFor();
    const result = streamText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I take my coffee?' });
    const reader = result.textStream.getReader();

    chunks.send(streamStart, { type: 'text-start', id: 't1' }, textDelta('An oat milk '));
    expect(await reader.read()).toEqual({ done: false, value: 'An oat milk ' });
    chunks.send(textDelta('flat white.'), { type: 'text-end', id: 't1' }, finish);
    expect(await reader.read()).toEqual({ done: false, value: 'flat white.' });
    await middleware.settled();
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);

    chunks.close();
    expect(await reader.read()).toEqual({ done: true, value: undefined });
    await middleware.settled();
    const turns = await mneme.turns({ channelId: 'dm-ann' });
    expect(turns.map((message) => message.content)).toEqual(['How do I take my coffee?', 'An oat milk flat white.']);
    expect(warnings).toEqual([]);
  });

  it('ingests nothing while the last part of a stream has been read but the stream has not ended', async () => {
    const chunks = controlledStream();
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
    const middleware = middlewareFor();
    const { stream } = await wrapLanguageModel({ model, middleware }).doStream({
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'How do I take my coffee?' }] }],
    });
    const reader = stream.getReader();
    const parts = [streamStart, textDelta('An oat milk '), textDelta('flat white.'), finish];
    chunks.send(...parts);
    for (const part of parts) expect(await reader.read()).toEqual({ done: false, value: part });
    await middleware.settled();
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);

    chunks.close();
    expect(await reader.read()).toEqual({ done: true, value: undefined });
    await middleware.settled();
    const turns = await mneme.turns({ channelId: 'dm-ann' });
    expect(turns.map((message) => message.content)).toEqual(['How do I take my coffee?', 'An oat milk flat white.']);
  });

  it('records nothing of a stream that breaks off with an error', async () => {
    const chunks = controlledStream();
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
    const middleware = middlewareFor();
    const errors: unknown[] = [];
    const result = streamText({
      model: wrapLanguageModel({ model, middleware }),
      prompt: 'How do I take my coffee?',
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    chunks.send(streamStart, { type: 'text-start', id: 't1' }, textDelta('An oat'));
    chunks.send({ type: 'error', error: new Error('connection reset') });
    chunks.close();
    await result.consumeStream();
    await middleware.settled();
    expect(errors).toHaveLength(1);
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it('records nothing of a stream the reader cancels before its end', async () => {
    const chunks = controlledStream();
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
    const middleware = middlewareFor();
    const wrapped = wrapLanguageModel({ model, middleware });
    const { stream } = await wrapped.doStream({
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'How do I take my coffee?' }] }],
    });
    const reader = stream.getReader();
    chunks.send(streamStart, textDelta('An oat'));
    await reader.read();
    await reader.cancel();
    await middleware.settled();
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it('goes on without memories and warns when the recall fails', async () => {
    const failing: MiddlewareMneme = {
      channel: (id) => mneme.channel(id),
      context: async () => {
        throw new Error('database is locked');
      },
      ingestExchange: (input) => mneme.ingestExchange(input),
    };
    const model = new MockLanguageModelV3({ doGenerate: reply('Any coffee you like.') });
    const middleware = middlewareFor({ mneme: failing });
    const { text } = await generateText({
      model: wrapLanguageModel({ model, middleware }),
      system: 'You are a barista.',
      prompt: 'How do I take my coffee?',
    });
    expect(text).toBe('Any coffee you like.');
    expect(systemTexts(model.doGenerateCalls[0]?.prompt ?? [])).toEqual(['You are a barista.']);
    expect(warnings).toEqual([{ error: new Error('database is locked'), phase: 'recall' }]);
    await middleware.settled();
    expect(await mneme.turns({ channelId: 'dm-ann' })).toHaveLength(2);
  });

  it('writes one warning line to the logger when no onError is given', async () => {
    const lines: string[] = [];
    const failing: MiddlewareMneme = {
      channel: (id) => mneme.channel(id),
      context: async () => {
        throw new Error('database is locked');
      },
      ingestExchange: async () => {
        throw new Error('disk full');
      },
    };
    const model = new MockLanguageModelV3({ doGenerate: reply('Any coffee you like.') });
    const middleware = mnemeMiddleware({
      mneme: failing,
      viewer: { userId: 'ann', channelId: 'dm-ann' },
      logger: { warn: (line) => lines.push(line) },
    });
    const { text } = await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'Coffee?' });
    await middleware.settled();
    expect(text).toBe('Any coffee you like.');
    expect(lines).toEqual([
      'mneme: recall failed, the call goes on without memories: database is locked',
      'mneme: the exchange was not recorded: disk full',
    ]);
  });

  it('answers even when the exchange cannot be ingested, and warns', async () => {
    const refusing: MiddlewareMneme = {
      channel: (id) => mneme.channel(id),
      context: (input) => mneme.context(input),
      ingestExchange: async () => {
        // Not STORE_BUSY, which is tried again first (test/attack29a-ai-sdk-busy-store.test.ts).
        throw new MnemeError(ErrorCode.StoreFailed, 'the disk is full; free some space');
      },
    };
    const model = new MockLanguageModelV3({ doGenerate: reply('x'.repeat(200)) });
    const middleware = middlewareFor({ mneme: refusing });
    const { text } = await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'Talk a lot' });
    await middleware.settled();
    expect(text).toHaveLength(200);
    expect(warnings).toEqual([{ error: expect.any(MnemeError), phase: 'ingest' }]);
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it("never shows one user's personal memories to another", async () => {
    const answer = async (userId: string) => {
      const model = new MockLanguageModelV3({ doGenerate: reply('Coming up.') });
      const middleware = middlewareFor({ viewer: { userId, channelId: `dm-${userId}` } });
      await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I drink my coffee?' });
      await middleware.settled();
      return systemTexts(model.doGenerateCalls[0]?.prompt ?? []).join('\n');
    };
    const forAnn = await answer('ann');
    const forBob = await answer('bob');
    expect(forAnn).toContain('oat milk flat white');
    expect(forAnn).not.toContain('espresso');
    expect(forBob).toContain('double espresso');
    expect(forBob).not.toContain('oat milk');
    expect(await answer('cy')).toBe('');
  });

  it('recalls only the channel and global memories for an exchange recorded where another member reads, and personal ones without recording', async () => {
    await mneme.putChannel({ id: 'cafe-team', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.remember({
      content: 'The team coffee machine takes oat milk pods',
      scope: 'room',
      channelId: 'cafe-team',
    });
    const ask = async (options: Partial<MnemeMiddlewareOptions>) => {
      const model = new MockLanguageModelV3({ doGenerate: reply('Oat milk it is.') });
      const middleware = middlewareFor(options);
      await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'What about oat milk coffee?' });
      await middleware.settled();
      return systemTexts(model.doGenerateCalls[0]?.prompt ?? []).join('\n');
    };

    const recorded = await ask({ viewer: { userId: 'ann', channelId: 'cafe-team' } });
    const notRecorded = await ask({ viewer: { userId: 'ann', channelId: 'cafe-team' }, ingest: false });

    expect(recorded).toContain('oat milk pods');
    expect(recorded).not.toContain('flat white');
    expect(notRecorded).toContain('flat white');
    expect((await mneme.turns({ channelId: 'cafe-team' })).map((turn) => turn.senderId)).toEqual(['ann', 'assistant']);
    expect(warnings).toEqual([]);
  });

  it('records no reply built on personal memories in a channel that gained another member before the reply ended', async () => {
    await mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
    const chunks = controlledStream();
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
    const middleware = middlewareFor({ viewer: { userId: 'ann', channelId: 'ann-notes' } });
    const result = streamText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I take my coffee?' });
    const reader = result.textStream.getReader();
    chunks.send(streamStart, { type: 'text-start', id: 't1' }, textDelta('An oat milk flat white.'));
    expect(await reader.read()).toEqual({ done: false, value: 'An oat milk flat white.' });
    await mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann', 'bob'] });
    chunks.send({ type: 'text-end', id: 't1' }, finish);
    chunks.close();
    while (!(await reader.read()).done) {}
    await middleware.settled();

    expect(systemTexts(model.doStreamCalls[0]?.prompt ?? []).join('\n')).toContain('flat white');
    expect(await mneme.turns({ channelId: 'ann-notes' })).toEqual([]);
    expect(warnings).toEqual([
      {
        phase: 'ingest',
        error: expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringMatching(/gained another reader/) }),
      },
    ]);
  });

  it('ingests nothing with ingest: false, and recalls without a channel', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('Oat milk.') });
    const middleware = middlewareFor({ ingest: false, viewer: { userId: 'ann' } });
    await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I take my coffee?' });
    await middleware.settled();
    expect(systemTexts(model.doGenerateCalls[0]?.prompt ?? [])[0]).toContain('oat milk');
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
    const stats = await mneme.stats();
    expect(stats).toMatchObject({ total: 2 });
  });

  it("lets a call's providerOptions.mneme override the viewer and the ingest setting", async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('A double espresso.') });
    const middleware = middlewareFor();
    const wrapped = wrapLanguageModel({ model, middleware });
    await generateText({
      model: wrapped,
      prompt: 'How do I take my coffee?',
      providerOptions: { mneme: { userId: 'bob', channelId: 'dm-bob' } },
    });
    await generateText({ model: wrapped, prompt: 'Just checking', providerOptions: { mneme: { ingest: false } } });
    await middleware.settled();
    const block = systemTexts(model.doGenerateCalls[0]?.prompt ?? []).join('\n');
    expect(block).toContain('double espresso');
    expect(block).not.toContain('oat milk');
    const bobTurns = await mneme.turns({ channelId: 'dm-bob' });
    expect(bobTurns.map((message) => message.senderId)).toEqual(['bob', 'assistant']);
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it("never records a call for another user in the default user's channel, nor makes them its member", async () => {
    await mneme.remember({
      content: 'Ann plans a surprise party in the dm-ann channel',
      scope: 'room',
      channelId: 'dm-ann',
    });
    const model = new MockLanguageModelV3({ doGenerate: reply('Noted.') });
    const wrapped = wrapLanguageModel({ model, middleware: middlewareFor() });
    await expect(
      generateText({ model: wrapped, prompt: 'Any party plans?', providerOptions: { mneme: { userId: 'bob' } } }),
    ).rejects.toThrow(/needs a userId and a channelId/);
    await generateText({
      model: wrapped,
      prompt: 'Any party plans?',
      providerOptions: { mneme: { userId: 'bob', ingest: false } },
    });
    const block = systemTexts(model.doGenerateCalls[0]?.prompt ?? []).join('\n');
    expect(block).not.toContain('surprise party');
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it('refuses a bad providerOptions.mneme with a clear error before the model is called', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('never') });
    const wrapped = wrapLanguageModel({ model, middleware: middlewareFor() });
    await expect(
      generateText({ model: wrapped, prompt: 'Hi', providerOptions: { mneme: { userId: 42, user: 'ann' } } }),
    ).rejects.toMatchObject({
      code: ErrorCode.InvalidInput,
      message: 'invalid providerOptions.mneme: userId: userId must be a string; unknown field user',
    });
    expect(model.doGenerateCalls).toEqual([]);
  });

  it('refuses to record an exchange without a user and a channel, and says how to fix it', async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('never') });
    const wrapped = wrapLanguageModel({ model, middleware: middlewareFor({ viewer: { userId: 'ann' } }) });
    await expect(generateText({ model: wrapped, prompt: 'Hi' })).rejects.toThrow(
      /needs a userId and a channelId .* or set ingest: false/,
    );
    expect(model.doGenerateCalls).toEqual([]);
  });

  it('refuses bad options when it is created', () => {
    expect(() => mnemeMiddleware({ mneme, topK: 0 })).toThrow(
      'invalid mneme middleware options: topK: topK must be at least 1',
    );
    expect(() => mnemeMiddleware({ mneme: {} as MiddlewareMneme })).toThrow(/mneme must be an engine from createMneme/);
  });

  it('recalls nothing and records nothing when the prompt has no user message', async () => {
    const queries: unknown[] = [];
    const watched: MiddlewareMneme = {
      channel: (id) => mneme.channel(id),
      context: (input) => {
        queries.push(input);
        return mneme.context(input);
      },
      ingestExchange: (input) => mneme.ingestExchange(input),
    };
    const model = new MockLanguageModelV3({ doGenerate: reply('Hello.') });
    const middleware = middlewareFor({ mneme: watched });
    await wrapLanguageModel({ model, middleware }).doGenerate({
      prompt: [{ role: 'system', content: 'Greet the user.' }],
    });
    await middleware.settled();
    expect(queries).toEqual([]);
    expect(model.doGenerateCalls[0]?.prompt).toEqual([{ role: 'system', content: 'Greet the user.' }]);
    expect(await mneme.turns({ channelId: 'dm-ann' })).toEqual([]);
  });

  it('in a tool loop, recalls for every step and records the exchange once, with the final answer', async () => {
    const queries: unknown[] = [];
    const watched: MiddlewareMneme = {
      channel: (id) => mneme.channel(id),
      context: (input) => {
        queries.push(input);
        return mneme.context(input);
      },
      ingestExchange: (input) => mneme.ingestExchange(input),
    };
    const toolCall: GenerateResult = {
      content: [
        { type: 'text', text: 'Let me look at the menu.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'menu', input: '{}' },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
    const model = new MockLanguageModelV3({ doGenerate: [toolCall, reply('The oat milk flat white is on the menu.')] });
    const middleware = middlewareFor({ mneme: watched });
    const { text } = await generateText({
      model: wrapLanguageModel({ model, middleware }),
      prompt: 'How do I take my coffee?',
      tools: { menu: tool({ inputSchema: z.object({}), execute: async () => 'flat white, espresso' }) },
      stopWhen: stepCountIs(2),
    });
    await middleware.settled();
    expect(text).toBe('The oat milk flat white is on the menu.');
    expect(model.doGenerateCalls).toHaveLength(2);
    for (const call of model.doGenerateCalls) expect(systemTexts(call.prompt)[0]).toContain('oat milk flat white');
    expect(queries).toMatchObject([{ inspect: false }, { inspect: true }]);
    const turns = await mneme.turns({ channelId: 'dm-ann' });
    expect(turns.map((message) => message.content)).toEqual([
      'How do I take my coffee?',
      'The oat milk flat white is on the menu.',
    ]);
  });

  it('keeps two viewers apart when their streamed calls through one wrapped model overlap', async () => {
    const streams = { ann: controlledStream(), bob: controlledStream() };
    const prompts: Record<string, readonly PromptMessage[]> = {};
    const model = new MockLanguageModelV3({
      doStream: async (options) => {
        const who = options.providerOptions?.mneme?.userId === 'bob' ? 'bob' : 'ann';
        prompts[who] = options.prompt;
        return { stream: streams[who].stream };
      },
    });
    const middleware = middlewareFor();
    const wrapped = wrapLanguageModel({ model, middleware });
    const start = (userId: 'ann' | 'bob') =>
      streamText({
        model: wrapped,
        prompt: `How does ${userId} drink coffee?`,
        providerOptions: { mneme: { userId, channelId: `dm-${userId}` } },
      }).text;
    const annText = start('ann');
    const bobText = start('bob');
    await vi.waitFor(() => expect(Object.keys(prompts).sort()).toEqual(['ann', 'bob']));
    streams.ann.send(streamStart, { type: 'text-start', id: 't1' }, textDelta('Oat milk '));
    streams.bob.send(streamStart, { type: 'text-start', id: 't1' }, textDelta('Black, '), textDelta('double.'));
    streams.bob.send({ type: 'text-end', id: 't1' }, finish);
    streams.bob.close();
    streams.ann.send(textDelta('flat white.'), { type: 'text-end', id: 't1' }, finish);
    streams.ann.close();
    expect(await Promise.all([annText, bobText])).toEqual(['Oat milk flat white.', 'Black, double.']);
    await middleware.settled();

    expect(systemTexts(prompts.ann ?? []).join('\n')).toContain('oat milk flat white');
    expect(systemTexts(prompts.ann ?? []).join('\n')).not.toContain('espresso');
    expect(systemTexts(prompts.bob ?? []).join('\n')).toContain('double espresso');
    expect(systemTexts(prompts.bob ?? []).join('\n')).not.toContain('oat milk');
    const turns = async (channelId: string) =>
      (await mneme.turns({ channelId })).map(({ senderId, content }) => `${senderId}: ${content}`);
    expect(await turns('dm-ann')).toEqual(['ann: How does ann drink coffee?', 'assistant: Oat milk flat white.']);
    expect(await turns('dm-bob')).toEqual(['bob: How does bob drink coffee?', 'assistant: Black, double.']);
  });

  it("recalls through a user's view (mneme.as) with ingest: false, and only that user's memories", async () => {
    const model = new MockLanguageModelV3({ doGenerate: reply('A double espresso.') });
    const asBob = mneme.as({ kind: 'user', userId: 'bob', label: 'bob-app' });
    const middleware = middlewareFor({ mneme: asBob, ingest: false, viewer: { userId: 'bob' } });
    await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'How do I drink my coffee?' });
    const block = systemTexts(model.doGenerateCalls[0]?.prompt ?? []).join('\n');
    expect(block).toContain('double espresso');
    expect(block).not.toContain('oat milk');
    await expect(
      generateText({
        model: wrapLanguageModel({ model, middleware: middlewareFor({ mneme: asBob, viewer: { userId: 'ann' } }) }),
        prompt: 'How do I drink my coffee?',
        providerOptions: { mneme: { ingest: false } },
      }),
    ).resolves.toMatchObject({ text: 'A double espresso.' });
    expect(warnings).toEqual([{ error: expect.objectContaining({ code: ErrorCode.Forbidden }), phase: 'recall' }]);
  });
});
