import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../src/core/errors.js';
import { createOpenAiCompatibleChatModel } from '../src/models/openai-compatible/openai-compatible-chat-model.js';
import { createOpenAiCompatibleEmbeddingModel } from '../src/models/openai-compatible/openai-compatible-embedding-model.js';
import { type LoopbackServer, recordingSleep, startLoopbackServer } from './loopback-server.js';

/**
 * Attack finding (helper 151, 2026-12-05): a model server that answered with a redirect had mneme follow it, so the
 * text it embeds or summarises (messages, memories) went to a server nobody configured. mneme now follows no
 * redirect of a model server: the request fails with MODEL_FAILED, saying where it pointed, and nothing is sent
 * there.
 */

const API_KEY = 'sk-embedder-secret';

let servers: LoopbackServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

/** A configured server that redirects every request to a second one, which answers as a model server would. */
async function redirecting(status: number) {
  const elsewhere = await startLoopbackServer(() => ({
    json: {
      data: [{ embedding: [1, 0, 0], index: 0 }],
      choices: [{ index: 0, message: { role: 'assistant', content: '{}' }, finish_reason: 'stop' }],
    },
  }));
  const configured = await startLoopbackServer((request) => ({
    status,
    headers: { location: `${elsewhere.url}${request.path}?key=${API_KEY}` },
    text: '',
  }));
  servers.push(elsewhere, configured);
  return { elsewhere, configured };
}

describe('a model server that answers with a redirect', () => {
  it.each([301, 302, 307, 308])(
    'gets no text of an embedding sent to where it points, and the error says what to change (%i)',
    async (status) => {
      const { elsewhere, configured } = await redirecting(status);
      const embedder = createOpenAiCompatibleEmbeddingModel({
        baseUrl: `${configured.url}/v1`,
        apiKey: API_KEY,
        model: 'custom-embedder',
        dimensions: 3,
        sleep: recordingSleep().sleep,
      });
      const failure = await embedder.embed(['Ann keeps her bank PIN in the red notebook'], 'document').then(
        () => null,
        (error: unknown) => error as { code: string; message: string },
      );
      expect(failure?.code).toBe(ErrorCode.ModelFailed);
      expect(failure?.message).toMatch(new RegExp(`redirect \\(${status} to http://127\\.0\\.0\\.1:`));
      expect(failure?.message).toMatch(/set the URL/);
      expect(failure?.message).not.toContain(API_KEY);
      expect(elsewhere.requests).toEqual([]);
      // Not retried: a redirect is an answer, not an outage.
      expect(configured.requests).toHaveLength(1);
    },
  );

  it('gets no conversation a chat model summarises sent to where it points', async () => {
    const { elsewhere, configured } = await redirecting(307);
    const chat = createOpenAiCompatibleChatModel({
      baseUrl: `${configured.url}/v1`,
      apiKey: API_KEY,
      model: 'custom-chat',
      sleep: recordingSleep().sleep,
    });
    await expect(
      chat.complete({ messages: [{ role: 'user', content: 'Ann: my PIN is in the red notebook' }] }),
    ).rejects.toMatchObject({ code: ErrorCode.ModelFailed });
    expect(elsewhere.requests).toEqual([]);
  });
});
