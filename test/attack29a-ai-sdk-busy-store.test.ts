import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import { type MiddlewareMneme, mnemeMiddleware } from '../src/ai-sdk/mneme-middleware.js';
import { createMneme } from '../src/config/create-mneme.js';
import { holdWriteLock } from './write-lock.js';

/**
 * Attack finding (helper 151, 2026-12-05), as for the proxy (`attack29a-proxy-busy-store.test.ts`): while another
 * process held the database's write lock for longer than the busy timeout, the AI SDK middleware answered the call
 * and then dropped its exchange with a warning. The app has its reply and does not send the exchange again; the
 * middleware now waits for the lock (up to a minute of pauses) before it gives up.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack29a-ai-busy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('an exchange the AI SDK middleware records while another process holds the database', () => {
  it('is written once the lock is released, not dropped with a warning', async () => {
    const path = join(folder, 'busy.db');
    const engine = await createMneme({ path, busyTimeoutMs: 50, logger: { warn: () => {}, info: () => {} } });
    const failures: unknown[] = [];
    // The engine as the middleware sees it, with each failed attempt to record noted.
    const watched: MiddlewareMneme = {
      channel: (id) => engine.channel(id),
      context: (input) => engine.context(input),
      ingestExchange: (input, options) =>
        engine.ingestExchange(input, options).catch((error: unknown) => {
          failures.push(error);
          throw error;
        }),
    };
    const warnings: unknown[] = [];
    const memory = mnemeMiddleware({
      mneme: watched,
      viewer: { userId: 'ann', channelId: 'dm-ann' },
      onError: (error) => warnings.push(error),
    });
    const model = new MockLanguageModelV3({
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
    try {
      const lock = holdWriteLock(path);
      try {
        const { text } = await generateText({
          model: wrapLanguageModel({ model, middleware: memory }),
          prompt: 'I always take green tea in the morning',
        });
        expect(text).toBe('Green tea it is.');
        // The first attempt met the lock (or, given up, warned); the lock goes away only after that.
        while (failures.length === 0 && warnings.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      } finally {
        lock.release();
      }
      await memory.settled();
      expect(warnings).toEqual([]);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expect(failure).toMatchObject({ code: 'STORE_BUSY' });
      const turns = await engine.turns({ channelId: 'dm-ann' });
      expect(turns.map((message) => `${message.senderId}: ${message.content}`)).toEqual([
        'ann: I always take green tea in the morning',
        'assistant: Green tea it is.',
      ]);
    } finally {
      await engine.close();
    }
  }, 30_000);
});
