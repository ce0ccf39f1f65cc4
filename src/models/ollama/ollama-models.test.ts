import { afterEach, describe, expect, it } from 'vitest';
import { recordingSleep, unusedLoopbackUrl } from '../../../test/loopback-server.js';
import { ErrorCode } from '../../core/errors.js';
import { describeChatModelContract } from '../chat-model.contract.js';
import { describeEmbeddingModelContract } from '../embedding-model.contract.js';
import { createFakeEmbeddingModel } from '../fake/fake-embedding-model.js';
import {
  type FakeProviderServer,
  type FakeProviderServerOptions,
  startFakeProviderServer,
} from '../fake/fake-provider-server.fixture.js';
import { createOllamaChatModel } from './ollama-chat-model.js';
import { listOllamaModels } from './ollama-client.js';
import { createOllamaEmbeddingModel, probeOllamaEmbeddingDimensions } from './ollama-embedding-model.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function ollama(options: FakeProviderServerOptions = {}): Promise<FakeProviderServer> {
  server = await startFakeProviderServer(options);
  return server;
}

describeEmbeddingModelContract('Ollama', {
  makeModel: async () => createOllamaEmbeddingModel({ baseUrl: (await ollama()).url, batchSize: 2 }),
  failing: {
    makeModel: async () => createOllamaEmbeddingModel({ baseUrl: (await ollama({ models: [] })).url }),
    advice: 'pull the model first: ollama pull nomic-embed-text',
  },
});

describeChatModelContract('Ollama', {
  makeModel: async (reply) => createOllamaChatModel({ baseUrl: (await ollama({ chatReply: reply })).url }),
  failing: {
    makeModel: async () => createOllamaChatModel({ baseUrl: (await ollama({ models: [] })).url }),
    advice: 'pull the model first: ollama pull llama3.2',
  },
});

describe('the Ollama embedding model', () => {
  it('embeds in batches through /api/embed with the nomic prefix of each purpose', async () => {
    const { url, requests } = await ollama();
    const model = createOllamaEmbeddingModel({ baseUrl: url, batchSize: 2 });
    expect(model).toMatchObject({ modelId: 'ollama:nomic-embed-text', dimensions: 768 });

    const prefixed = ['search_document: a', 'search_document: bb', 'search_document: ccc'];
    expect(await model.embed(['a', 'bb', 'ccc'], 'document')).toEqual(
      await createFakeEmbeddingModel({ dimensions: 768 }).embed(prefixed, 'document'),
    );
    expect(requests.map((request) => [request.method, request.path, request.body])).toEqual([
      ['POST', '/api/embed', { model: 'nomic-embed-text', input: prefixed.slice(0, 2) }],
      ['POST', '/api/embed', { model: 'nomic-embed-text', input: prefixed.slice(2) }],
    ]);

    await model.embed(['where do I live'], 'query');
    expect(requests[2]?.body).toEqual({ model: 'nomic-embed-text', input: ['search_query: where do I live'] });
  });

  it('adds no prefix for other models, and makes no request for no texts', async () => {
    const { url, requests } = await ollama({ dimensions: 1024, models: ['mxbai-embed-large'] });
    const model = createOllamaEmbeddingModel({ baseUrl: url, model: 'mxbai-embed-large:latest' });
    expect(model).toMatchObject({ modelId: 'ollama:mxbai-embed-large', dimensions: 1024 });
    await model.embed(['plain'], 'query');
    expect(requests[0]?.body).toEqual({ model: 'mxbai-embed-large', input: ['plain'] });
    expect(await model.embed([], 'document')).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it('refuses a model whose dimensions it does not know, and probes them on request', async () => {
    expect(() => createOllamaEmbeddingModel({ model: 'my-embedder' })).toThrow(
      expect.objectContaining({
        code: ErrorCode.ConfigInvalid,
        message: expect.stringMatching(/MNEME_EMBEDDER_DIMENSIONS/),
      }),
    );
    const { url } = await ollama({ dimensions: 512, models: ['my-embedder'] });
    expect(await probeOllamaEmbeddingDimensions({ baseUrl: url, model: 'my-embedder' })).toBe(512);
  });

  it('fails clearly when the server returns vectors of the wrong length, number or shape', async () => {
    const { url, answerNext, answerAlways } = await ollama({ dimensions: 384 });
    const model = createOllamaEmbeddingModel({ baseUrl: url });
    await expect(model.embed(['x'], 'document')).rejects.toThrow(
      /returned vectors of 384 dimensions, expected 768; set the dimensions to 384 \(MNEME_EMBEDDER_DIMENSIONS\)/,
    );
    answerNext({ json: { embeddings: [] } });
    await expect(model.embed(['x'], 'document')).rejects.toThrow(
      'ollama:nomic-embed-text returned 0 vectors for 1 texts; check that it is an embedding model',
    );
    answerAlways({ json: { embedding: [1, 2] } });
    await expect(model.embed(['x'], 'document')).rejects.toThrow(/without an "embeddings" array/);
  });

  it('tells the user to pull a missing model', async () => {
    const { url } = await ollama({ models: ['llama3.2'] });
    await expect(createOllamaEmbeddingModel({ baseUrl: url }).embed(['x'], 'query')).rejects.toThrow(
      /answered 404 to POST \/api\/embed: model "nomic-embed-text" not found, try pulling it first; pull the model first: ollama pull nomic-embed-text/,
    );
  });

  it('says Ollama is not reachable and how to go on without it', async () => {
    const url = await unusedLoopbackUrl();
    const model = createOllamaEmbeddingModel({ baseUrl: url, sleep: recordingSleep().sleep });
    await expect(model.embed(['x'], 'document')).rejects.toThrow(
      `Ollama is not reachable at ${url}; start it (ollama serve) or set MNEME_EMBEDDER=none`,
    );
  });

  it('stops between batches when the signal aborts during a request', async () => {
    const { url, requests, answerNext } = await ollama();
    const controller = new AbortController();
    const model = createOllamaEmbeddingModel({ baseUrl: url, batchSize: 1 });
    answerNext({ hang: true });
    const pending = model.embed(['a', 'b', 'c'], 'document', { signal: controller.signal });
    await expect.poll(() => requests.length).toBe(1);
    controller.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
    expect(requests).toHaveLength(1);
  });
});

describe('the Ollama chat model', () => {
  it('sends the messages, the JSON schema as format, temperature 0 and stream false to /api/chat', async () => {
    const { url, requests } = await ollama({ chatReply: '{"facts": []}' });
    const chat = createOllamaChatModel({ baseUrl: url });
    expect(chat.modelId).toBe('ollama:llama3.2');
    const schema = { type: 'object', properties: { facts: { type: 'array' } }, required: ['facts'] };
    const reply = await chat.complete({
      messages: [
        { role: 'system', content: 'Extract facts.' },
        { role: 'user', content: 'I live in Lyon.' },
      ],
      jsonSchema: { name: 'facts', schema },
    });
    expect(reply).toBe('{"facts": []}');
    expect(requests[0]).toMatchObject({
      method: 'POST',
      path: '/api/chat',
      body: {
        model: 'llama3.2',
        messages: [
          { role: 'system', content: 'Extract facts.' },
          { role: 'user', content: 'I live in Lyon.' },
        ],
        stream: false,
        format: schema,
        options: { temperature: 0 },
      },
    });
  });

  it('leaves format out when no schema is asked for and fails clearly on a reply without a message', async () => {
    const { url, requests, answerNext } = await ollama();
    answerNext({ json: { done: true } });
    const chat = createOllamaChatModel({ baseUrl: url, model: 'qwen2.5:7b' });
    await expect(chat.complete({ messages: [{ role: 'user', content: 'hi' }], temperature: 0.3 })).rejects.toThrow(
      /without a message/,
    );
    expect(requests[0]?.body).toEqual({
      model: 'qwen2.5:7b',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
      options: { temperature: 0.3 },
    });
  });

  it('names MNEME_CHAT when Ollama cannot be reached for chat', async () => {
    const url = await unusedLoopbackUrl();
    const chat = createOllamaChatModel({ baseUrl: url, maxRetries: 0 });
    await expect(chat.complete({ messages: [{ role: 'user', content: 'hi' }] })).rejects.toThrow(
      /start it \(ollama serve\) or set MNEME_CHAT=none/,
    );
  });
});

describe('listing Ollama models', () => {
  it('returns the pulled models without the latest tag', async () => {
    const { url, requests } = await ollama({ models: ['nomic-embed-text', 'llama3.2:3b'] });
    expect(await listOllamaModels(url)).toEqual(['nomic-embed-text', 'llama3.2:3b']);
    expect(requests[0]).toMatchObject({ method: 'GET', path: '/api/tags' });
  });

  it('refuses a server that is not Ollama', async () => {
    const { url, answerNext } = await ollama();
    answerNext({ json: { data: [] } });
    await expect(listOllamaModels(url)).rejects.toThrow(/without a "models" list; is it Ollama\?/);
  });
});
