import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { ErrorCode, MnemeError } from '../src/core/errors.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createOllamaEmbeddingModel } from '../src/models/ollama/ollama-embedding-model.js';
import { createOpenAiCompatibleChatModel } from '../src/models/openai-compatible/openai-compatible-chat-model.js';
import { createOpenAiCompatibleEmbeddingModel } from '../src/models/openai-compatible/openai-compatible-embedding-model.js';
import { createFixedClock } from '../src/testing.js';
import { runCli } from './cli-harness.js';
import { type LoopbackServer, recordingSleep, startLoopbackServer } from './loopback-server.js';

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const clock = createFixedClock();
const fake = createFakeEmbeddingModel({ dimensions: 1536 });
const password = 'hunter2-attack24a';
const apiKey = 'sk-attack24a-0123456789abcdef';

/** An OpenAI-compatible embeddings server on loopback; its base URL. */
async function embeddingServer(): Promise<string> {
  server = await startLoopbackServer(async (request) => {
    const { input } = request.body as { input: string[] };
    const vectors = await fake.embed(input, 'document');
    return { json: { data: vectors.map((vector, index) => ({ index, embedding: Array.from(vector) })) } };
  });
  return `${server.url}/v1`;
}

/** The same URL with a user name and password in it. */
function withCredentials(url: string): string {
  return url.replace('http://', `http://mneme:${password}@`);
}

async function refusal(work: () => unknown): Promise<MnemeError> {
  try {
    await work();
  } catch (error) {
    if (error instanceof MnemeError) return error;
    throw error;
  }
  throw new Error('it was not refused');
}

describe('attack24a: a provider URL with a user name and password', () => {
  it('is refused when the engine opens, as a configuration error that does not show the password', async () => {
    const url = withCredentials(await embeddingServer());
    const warnings: string[] = [];
    const error = await refusal(() =>
      createMneme({
        path: ':memory:',
        clock,
        embedder: 'openai:text-embedding-3-small',
        providers: { openaiUrl: url },
        logger: { warn: (text) => warnings.push(text), info: (text) => warnings.push(text) },
      }),
    );
    expect(error.code).toBe(ErrorCode.ConfigInvalid);
    expect(error.message).toContain('MNEME_OPENAI_URL');
    expect(`${error.message} ${warnings.join(' ')}`).not.toContain(password);
    expect(server?.requests).toHaveLength(0);
  });

  it('is refused by the command line with the exit code of a configuration error and one line without the password', async () => {
    const url = withCredentials(await embeddingServer());
    const run = await runCli(':memory:', ['search', 'bees'], {
      env: { MNEME_EMBEDDER: 'ollama:nomic-embed-text', MNEME_OLLAMA_URL: url },
    });
    expect(run.code).toBe(9);
    expect(run.stderr).toContain('MNEME_OLLAMA_URL');
    expect(run.stderr).not.toContain(password);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('is refused by the adapters themselves, without the password in the message', async () => {
    const url = withCredentials(await embeddingServer());
    const refusals = [
      await refusal(() => createOpenAiCompatibleEmbeddingModel({ baseUrl: url, model: 'text-embedding-3-small' })),
      await refusal(() => createOpenAiCompatibleChatModel({ baseUrl: url, model: 'gpt-4o-mini' })),
      await refusal(() => createOllamaEmbeddingModel({ baseUrl: url.replace(/\/v1$/, '') })),
    ];
    for (const error of refusals) {
      expect(error.code).toBe(ErrorCode.ConfigInvalid);
      expect(error.message).not.toContain(password);
    }
    expect(server?.requests).toHaveLength(0);
  });
});

describe('attack24a: a provider URL with a query string (a key in it)', () => {
  it('is refused when the engine opens and by the adapters, without the query in the message', async () => {
    const url = `${await embeddingServer()}?key=${password}`;
    const refusals = [
      await refusal(() =>
        createMneme({
          path: ':memory:',
          clock,
          embedder: 'openai:text-embedding-3-small',
          providers: { openaiUrl: url },
          logger: { warn: () => {}, info: () => {} },
        }),
      ),
      await refusal(() => createOpenAiCompatibleEmbeddingModel({ baseUrl: url, model: 'text-embedding-3-small' })),
    ];
    for (const error of refusals) {
      expect(error.code).toBe(ErrorCode.ConfigInvalid);
      expect(error.message).toMatch(/query string/);
      expect(error.message).not.toContain(password);
    }
    expect(server?.requests).toHaveLength(0);
  });
});

describe('attack24a: a provider that echoes the API key in its errors', () => {
  it('does not put the key in the warnings of a write and a recall, nor in the error a caller sees', async () => {
    server = await startLoopbackServer(() => ({
      status: 401,
      json: { error: { message: `Incorrect API key provided: ${apiKey}. You sent Authorization: Bearer ${apiKey}` } },
    }));
    const warnings: string[] = [];
    const mneme = await createMneme({
      path: ':memory:',
      clock,
      embedder: 'openai:text-embedding-3-small',
      providers: { openaiUrl: `${server.url}/v1`, openaiApiKey: apiKey },
      backfill: false,
      logger: { warn: (text) => warnings.push(text), info: (text) => warnings.push(text) },
    });
    await mneme.remember({ content: 'Oz keeps bees on the roof' });
    expect((await mneme.recall({ query: 'bees' })).vectorLeg).toBe('model-failed');
    await mneme.close();
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    expect(warnings.join('\n')).toContain('Incorrect API key provided');
    expect(warnings.join('\n')).not.toContain(apiKey);

    const model = createOpenAiCompatibleEmbeddingModel({
      baseUrl: `${server.url}/v1`,
      apiKey,
      model: 'text-embedding-3-small',
      sleep: recordingSleep().sleep,
    });
    const error = await refusal(() => model.embed(['x'], 'query'));
    expect(error.code).toBe(ErrorCode.ModelFailed);
    expect(error.message).not.toContain(apiKey);
  });

  it('does not put the key in the error of an answer that is not JSON', async () => {
    server = await startLoopbackServer(() => ({ text: `<html>token ${apiKey} is not valid here</html>` }));
    const chat = createOpenAiCompatibleChatModel({ baseUrl: `${server.url}/v1`, apiKey, model: 'gpt-4o-mini' });
    const error = await refusal(() => chat.complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(error.message).toMatch(/not JSON/);
    expect(error.message).not.toContain(apiKey);
  });
});
