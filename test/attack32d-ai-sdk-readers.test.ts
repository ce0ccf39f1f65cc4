import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamPart } from '../src/ai-sdk/ai-sdk-prompt.js';
import { type MiddlewareMneme, mnemeMiddleware } from '../src/ai-sdk/mneme-middleware.js';
import { createMneme } from '../src/config/create-mneme.js';
import { holdWriteLock } from './write-lock.js';

/**
 * Attack 32d on ADR 47 in the AI SDK middleware. A reply built on what the channel's readers may not see is not
 * recorded where a reader came while it was made; two ways past that check:
 * - the block of a channel only its user read held a project's memory (the viewer named a project), not a personal
 *   one: the check looked only for personal memories, and the reply went into the channel after Bob joined it;
 * - the check was made once, before the wait for a database another process held (up to a minute): a member added
 *   during that wait was not seen, and the reply was written after it.
 * And a user removed from the channel while the reply came was made its member again by the reply's write.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack32d-ai-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};
const parts = (text: string): StreamPart[] => [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: text },
  { type: 'text-end', id: 't1' },
  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
];

/** A stream whose parts the test hands over, and closes when it chooses. */
function controlledStream() {
  let controller: ReadableStreamDefaultController<StreamPart> | undefined;
  const stream = new ReadableStream<StreamPart>({
    start(started) {
      controller = started;
    },
  });
  return {
    stream,
    send(...sent: StreamPart[]) {
      for (const part of sent) controller?.enqueue(part);
    },
    close: () => controller?.close(),
  };
}

describe('the AI SDK middleware recording where a reader came while the reply was made (attack 32d)', () => {
  it('records no reply built on a project memory in a channel that gained another member before it ended', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    try {
      await mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
      await mneme.remember({
        content: 'The Falcon launch is on March 3, kept from the press until then',
        scope: 'project',
        projectId: 'falcon',
      });
      const warnings: unknown[] = [];
      const middleware = mnemeMiddleware({
        mneme,
        viewer: { userId: 'ann', channelId: 'ann-notes', projectId: 'falcon' },
        onError: (error) => warnings.push(error),
      });
      const chunks = controlledStream();
      const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
      const result = streamText({
        model: wrapLanguageModel({ model, middleware }),
        prompt: 'When is the Falcon launch?',
      });
      const reader = result.textStream.getReader();
      const [start, textStart, delta, textEnd, finish] = parts('On March 3.');
      chunks.send(start as StreamPart, textStart as StreamPart, delta as StreamPart);
      expect(await reader.read()).toEqual({ done: false, value: 'On March 3.' });
      // Bob joins Ann's notes while the reply is being made: he would read it there.
      await mneme.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann', 'bob'] });
      chunks.send(textEnd as StreamPart, finish as StreamPart);
      chunks.close();
      while (!(await reader.read()).done) {}
      await middleware.settled();

      const prompt = JSON.stringify(model.doStreamCalls[0]?.prompt ?? []);
      expect(prompt).toContain('March 3');
      expect(await mneme.turns({ channelId: 'ann-notes' })).toEqual([]);
      expect(warnings).toEqual([
        expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringMatching(/gained another reader/) }),
      ]);
    } finally {
      await mneme.close();
    }
  });

  it('looks at the channel again after waiting for a database another process held', async () => {
    const path = join(folder, 'busy.db');
    const engine = await createMneme({ path, busyTimeoutMs: 50, logger: { warn: () => {}, info: () => {} } });
    try {
      await engine.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann'] });
      await engine.remember({
        content: 'Ann keeps her bank PIN 4921 for the book fund',
        scope: 'personal',
        userId: 'ann',
      });
      let lock: { release(): void } | undefined;
      const busy: unknown[] = [];
      // The engine as the middleware sees it; the first write that meets the lock releases it and, before the
      // middleware tries again, Bob joins the channel.
      const watched: MiddlewareMneme = {
        channel: (id) => engine.channel(id),
        context: (input) => engine.context(input),
        ingestExchange: (input, options) =>
          engine.ingestExchange(input, options).catch(async (error: unknown) => {
            busy.push(error);
            if (lock) {
              lock.release();
              lock = undefined;
              await engine.putChannel({ id: 'ann-notes', visibility: 'private', members: ['ann', 'bob'] });
            }
            throw error;
          }),
      };
      const warnings: unknown[] = [];
      const middleware = mnemeMiddleware({
        mneme: watched,
        viewer: { userId: 'ann', channelId: 'ann-notes' },
        onError: (error) => warnings.push(error),
      });
      const chunks = controlledStream();
      const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
      const result = streamText({
        model: wrapLanguageModel({ model, middleware }),
        prompt: 'What about the book fund?',
      });
      const reading = result.consumeStream();
      lock = holdWriteLock(path);
      chunks.send(...parts('Your PIN is 4921.'));
      chunks.close();
      await reading;
      await middleware.settled();

      expect(JSON.stringify(model.doStreamCalls[0]?.prompt ?? [])).toContain('4921');
      expect(busy).toEqual([expect.objectContaining({ code: 'STORE_BUSY' })]);
      expect(await engine.turns({ channelId: 'ann-notes' })).toEqual([]);
      expect(warnings).toEqual([
        expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringMatching(/gained another reader/) }),
      ]);
    } finally {
      await engine.close();
    }
  }, 30_000);

  it('records nothing, and makes no member again, for a user removed from the channel while the reply came', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    try {
      await mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann', 'bob'] });
      const warnings: unknown[] = [];
      const middleware = mnemeMiddleware({
        mneme,
        viewer: { userId: 'bob', channelId: 'book-club' },
        onError: (error) => warnings.push(error),
      });
      const chunks = controlledStream();
      const model = new MockLanguageModelV3({ doStream: async () => ({ stream: chunks.stream }) });
      const result = streamText({ model: wrapLanguageModel({ model, middleware }), prompt: 'Next month we read Dune' });
      const reading = result.consumeStream();
      const [start, textStart, delta, ...rest] = parts('Dune it is.');
      chunks.send(start as StreamPart, textStart as StreamPart, delta as StreamPart);
      while (model.doStreamCalls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await mneme.putChannel({ id: 'book-club', visibility: 'private', members: ['ann'] });
      chunks.send(...rest);
      chunks.close();
      await reading;
      await middleware.settled();

      expect((await mneme.channel('book-club')).members).toEqual(['ann']);
      expect(await mneme.turns({ channelId: 'book-club' })).toEqual([]);
      expect(warnings).toEqual([
        expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringMatching(/bob is no longer a member/) }),
      ]);
    } finally {
      await mneme.close();
    }
  });
});
