import { afterEach, describe, expect, it } from 'vitest';
import {
  type LoopbackServer,
  recordingSleep,
  startLoopbackServer,
  unusedLoopbackUrl,
} from '../../../test/loopback-server.js';
import { ErrorCode } from '../../core/errors.js';
import { createOllamaChatModel } from './ollama-chat-model.js';
import { listOllamaModels } from './ollama-client.js';
import { createOllamaEmbeddingModel, probeOllamaEmbeddingDimensions } from './ollama-embedding-model.js';

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An Ollama stand-in: `/api/embed` returns one vector per input whose first value is the input's length. */
function ollama(dimensions = 768) {
  return startLoopbackServer((request) => {
    if (request.path === '/api/embed') {
      const { input } = request.body as { input: string[] };
      return { json: { model: 'nomic-embed-text', embeddings: input.map((text) => vectorFor(text, dimensions)) } };
    }
    if (request.path === '/api/chat') {
      return { json: { model: 'llama3.2', message: { role: 'assistant', content: '{"facts": []}' }, done: true } };
    }
    if (request.path === '/api/tags') {
      return { json: { models: [{ name: 'nomic-embed-text:latest' }, { name: 'llama3.2:3b', model: 'llama3.2:3b' }] } };
    }
    return { status: 404, json: { error: 'not found' } };
  });
}

function vectorFor(text: string, dimensions: number): number[] {
  return Array.from({ length: dimensions }, (_, index) => (index === 0 ? text.length : 0));
}

describe('the Ollama embedding model', () => {
  it('embeds in batches through /api/embed with the nomic prefix of each purpose', async () => {
    server = await ollama();
    const model = createOllamaEmbeddingModel({ baseUrl: server.url, batchSize: 2 });
    expect(model).toMatchObject({ modelId: 'ollama:nomic-embed-text', dimensions: 768 });

    const vectors = await model.embed(['a', 'bb', 'ccc'], 'document');
    expect(vectors.map((vector) => [vector.length, vector[0]])).toEqual([
      [768, 'search_document: a'.length],
      [768, 'search_document: bb'.length],
      [768, 'search_document: ccc'.length],
    ]);
    expect(vectors[0]).toBeInstanceOf(Float32Array);
    expect(server.requests.map((request) => [request.method, request.path, request.body])).toEqual([
      ['POST', '/api/embed', { model: 'nomic-embed-text', input: ['search_document: a', 'search_document: bb'] }],
      ['POST', '/api/embed', { model: 'nomic-embed-text', input: ['search_document: ccc'] }],
    ]);

    await model.embed(['where do I live'], 'query');
    expect(server.requests[2]?.body).toEqual({ model: 'nomic-embed-text', input: ['search_query: where do I live'] });
  });

  it('adds no prefix for other models, and makes no request for no texts', async () => {
    server = await ollama(1024);
    const model = createOllamaEmbeddingModel({ baseUrl: server.url, model: 'mxbai-embed-large:latest' });
    expect(model).toMatchObject({ modelId: 'ollama:mxbai-embed-large', dimensions: 1024 });
    await model.embed(['plain'], 'query');
    expect(server.requests[0]?.body).toEqual({ model: 'mxbai-embed-large', input: ['plain'] });
    expect(await model.embed([], 'document')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a model whose dimensions it does not know, and probes them on request', async () => {
    expect(() => createOllamaEmbeddingModel({ model: 'my-embedder' })).toThrow(
      expect.objectContaining({
        code: ErrorCode.ConfigInvalid,
        message: expect.stringMatching(/MNEME_EMBEDDER_DIMENSIONS/),
      }),
    );
    server = await ollama(512);
    expect(await probeOllamaEmbeddingDimensions({ baseUrl: server.url, model: 'my-embedder' })).toBe(512);
  });

  it('fails clearly when the server returns vectors of the wrong length or shape', async () => {
    server = await ollama(384);
    const model = createOllamaEmbeddingModel({ baseUrl: server.url });
    await expect(model.embed(['x'], 'document')).rejects.toThrow(/returned vectors of 384 dimensions, expected 768/);
    await server.close();
    server = await startLoopbackServer(() => ({ json: { embedding: [1, 2] } }));
    await expect(createOllamaEmbeddingModel({ baseUrl: server.url }).embed(['x'], 'document')).rejects.toThrow(
      /without an "embeddings" array/,
    );
  });

  it('tells the user to pull a missing model', async () => {
    server = await startLoopbackServer(() => ({
      status: 404,
      json: { error: 'model "nomic-embed-text" not found, try pulling it first' },
    }));
    await expect(createOllamaEmbeddingModel({ baseUrl: server.url }).embed(['x'], 'query')).rejects.toThrow(
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
});

describe('the Ollama chat model', () => {
  it('sends the messages, the JSON schema as format, temperature 0 and stream false to /api/chat', async () => {
    server = await ollama();
    const chat = createOllamaChatModel({ baseUrl: server.url });
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
    expect(server.requests[0]).toMatchObject({
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
    server = await startLoopbackServer(() => ({ json: { done: true } }));
    const chat = createOllamaChatModel({ baseUrl: server.url, model: 'qwen2.5:7b' });
    await expect(chat.complete({ messages: [{ role: 'user', content: 'hi' }], temperature: 0.3 })).rejects.toThrow(
      /without a message/,
    );
    expect(server.requests[0]?.body).toEqual({
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
    server = await ollama();
    expect(await listOllamaModels(server.url)).toEqual(['nomic-embed-text', 'llama3.2:3b']);
    expect(server.requests[0]).toMatchObject({ method: 'GET', path: '/api/tags' });
  });

  it('refuses a server that is not Ollama', async () => {
    server = await startLoopbackServer(() => ({ json: { data: [] } }));
    await expect(listOllamaModels(server.url)).rejects.toThrow(/without a "models" list; is it Ollama\?/);
  });
});
