import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StreamPart } from '../src/ai-sdk/ai-sdk-prompt.js';
import { mnemeMiddleware } from '../src/ai-sdk/mneme-middleware.js';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';

/**
 * Attack finding (helper 151, 2026-12-05): the AI SDK middleware took a step for a final reply by its finish reason
 * alone. Providers that report `stop` beside the tool calls they ask for (OpenAI-compatible servers such as older
 * Ollama and llama.cpp builds, mapped as they say) had the first step of a tool loop recorded with the text beside
 * the call ("Let me look at the menu."), then the step that ends the loop recorded again: the user message twice,
 * and a reply nobody was given as an answer. The proxy already took a reply that calls tools for a step (ADR 18);
 * the middleware now does too, whatever the finish reason says.
 */

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};
const stop = { unified: 'stop', raw: 'stop' } as const;

let mneme: Mneme;
let warnings: unknown[];

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  warnings = [];
});

afterEach(async () => {
  await mneme.close();
});

const menu = { menu: tool({ inputSchema: z.object({}), execute: async () => 'flat white, espresso' }) };

function middleware() {
  return mnemeMiddleware({
    mneme,
    viewer: { userId: 'ann', channelId: 'dm-ann' },
    onError: (error) => warnings.push(error),
  });
}

async function turns() {
  return (await mneme.turns({ channelId: 'dm-ann' })).map((message) => `${message.role}: ${message.content}`);
}

describe('a tool loop whose provider reports stop beside the tool call', () => {
  it('records the exchange once, with the answer that ends the loop, when generated', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            { type: 'text', text: 'Let me look at the menu.' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'menu', input: '{}' },
          ],
          finishReason: stop,
          usage,
          warnings: [],
        },
        {
          content: [{ type: 'text', text: 'The flat white is on the menu.' }],
          finishReason: stop,
          usage,
          warnings: [],
        },
      ],
    });
    const memory = middleware();
    const { text } = await generateText({
      model: wrapLanguageModel({ model, middleware: memory }),
      prompt: 'What coffee is there?',
      tools: menu,
      stopWhen: stepCountIs(3),
    });
    await memory.settled();
    expect(text).toBe('The flat white is on the menu.');
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(await turns()).toEqual(['user: What coffee is there?', 'assistant: The flat white is on the menu.']);
    expect(warnings).toEqual([]);
  });

  it('records the exchange once, with the answer that ends the loop, when streamed', async () => {
    const steps: StreamPart[][] = [
      [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: 'Let me look at the menu.' },
        { type: 'text-end', id: 't1' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'menu', input: '{}' },
        { type: 'finish', finishReason: stop, usage },
      ],
      [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't2' },
        { type: 'text-delta', id: 't2', delta: 'The flat white is on the menu.' },
        { type: 'text-end', id: 't2' },
        { type: 'finish', finishReason: stop, usage },
      ],
    ];
    let step = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        const parts = steps[step++] ?? [];
        return {
          stream: new ReadableStream({
            start(controller) {
              for (const part of parts) controller.enqueue(part);
              controller.close();
            },
          }),
        };
      },
    });
    const memory = middleware();
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: memory }),
      prompt: 'What coffee is there?',
      tools: menu,
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('The flat white is on the menu.');
    await memory.settled();
    expect(step).toBe(2);
    expect(await turns()).toEqual(['user: What coffee is there?', 'assistant: The flat white is on the menu.']);
    expect(warnings).toEqual([]);
  });

  it('still records a reply beside a tool the provider ran itself, which ends no step', async () => {
    const memory = middleware();
    const params = {
      prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Any news today?' }] }],
    };
    const model = new MockLanguageModelV3({});
    const transformed = await memory.transformParams?.({ type: 'generate', params, model });
    if (transformed === undefined) throw new Error('the middleware has no transformParams');
    await memory.wrapGenerate?.({
      params: transformed,
      model,
      doStream: async () => {
        throw new Error('not streamed');
      },
      doGenerate: async () => ({
        content: [
          { type: 'tool-call', toolCallId: 's1', toolName: 'web_search', input: '{}', providerExecuted: true },
          { type: 'text', text: 'The harbour reopened today.' },
        ],
        finishReason: stop,
        usage,
        warnings: [],
      }),
    });
    await memory.settled();
    expect(await turns()).toEqual(['user: Any news today?', 'assistant: The harbour reopened today.']);
  });
});
