import { generateText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mnemeMiddleware } from '../src/ai-sdk/mneme-middleware.js';
import { createMneme } from '../src/config/create-mneme.js';
import { ErrorCode } from '../src/core/errors.js';
import type { Mneme } from '../src/core/mneme.js';

/**
 * Attack finding (helper 151, 2026-12-05): the AI SDK middleware called the model for a viewer whose user is one of
 * mneme's own actors (`assistant`, ...; ADR 38) and then failed to record the exchange, a warning the only trace,
 * where a viewer without a channel is refused before the model is called. It is now refused the same way.
 */

let mneme: Mneme;
let warnings: string[];

beforeEach(async () => {
  mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  warnings = [];
});

afterEach(async () => {
  await mneme.close();
});

function model() {
  return new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: 'text', text: 'Green tea it is.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 2, text: 2, reasoning: undefined },
      },
      warnings: [],
    }),
  });
}

const middleware = (viewer: { userId?: string; channelId?: string }) =>
  mnemeMiddleware({ mneme, viewer, onError: (error) => warnings.push(String(error)) });

describe('the AI SDK middleware asked to record an exchange of one of mneme own actors', () => {
  it.each(['assistant', 'maintenance'])(
    'refuses the call before the model is called, naming the reserved id, through the viewer option (%s)',
    async (userId) => {
      const mock = model();
      const wrapped = wrapLanguageModel({ model: mock, middleware: middleware({ userId, channelId: 'support' }) });
      await expect(generateText({ model: wrapped, prompt: 'I always take green tea' })).rejects.toMatchObject({
        code: ErrorCode.InvalidInput,
        message: expect.stringMatching(new RegExp(`"${userId}" is reserved`)),
      });
      expect(mock.doGenerateCalls).toEqual([]);
      expect(warnings).toEqual([]);
      expect(await mneme.channels()).toEqual([]);
    },
  );

  it('refuses it through providerOptions.mneme too, and lets the same viewer recall when the call records nothing', async () => {
    const mock = model();
    const wrapped = wrapLanguageModel({ model: mock, middleware: middleware({ userId: 'ann', channelId: 'support' }) });
    const asAssistant = { mneme: { userId: 'assistant', channelId: 'support' } };
    await expect(
      generateText({ model: wrapped, prompt: 'I always take green tea', providerOptions: asAssistant }),
    ).rejects.toMatchObject({ code: ErrorCode.InvalidInput });
    expect(mock.doGenerateCalls).toEqual([]);
    const recallOnly = { mneme: { ...asAssistant.mneme, ingest: false } };
    const answer = await generateText({ model: wrapped, prompt: 'What do I drink?', providerOptions: recallOnly });
    expect(answer.text).toBe('Green tea it is.');
    expect(warnings).toEqual([]);
    expect(await mneme.channels()).toEqual([]);
  });
});
