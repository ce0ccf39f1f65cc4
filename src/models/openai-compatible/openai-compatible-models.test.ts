import { afterEach, describe, expect, it } from 'vitest';
import { type LoopbackServer, recordingSleep, startLoopbackServer } from '../../../test/loopback-server.js';
import { createOpenAiCompatibleChatModel } from './openai-compatible-chat-model.js';
import {
  createOpenAiCompatibleEmbeddingModel,
  probeOpenAiCompatibleEmbeddingDimensions,
} from './openai-compatible-embedding-model.js';

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An OpenAI stand-in under `/v1`: embeddings come back in reverse order, as the protocol allows. */
function openAi(dimensions: number) {
  return startLoopbackServer((request) => {
    if (request.path === '/v1/embeddings') {
      const { input } = request.body as { input: string[] };
      const data = input.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: Array.from({ length: dimensions }, (_, slot) => (slot === 0 ? text.length : 0.5)),
      }));
      return { json: { object: 'list', data: data.reverse(), model: 'm', usage: {} } };
    }
    if (request.path === '/v1/chat/completions') {
      return {
        json: {
          id: 'c1',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: '{"ok":true}' }, finish_reason: 'stop' }],
        },
      };
    }
    return { status: 404, json: { error: { message: 'Unknown path', type: 'invalid_request_error' } } };
  });
}

describe('the OpenAI-compatible embedding model', () => {
  it('embeds in batches with the bearer key and puts vectors back in input order', async () => {
    server = await openAi(1536);
    const model = createOpenAiCompatibleEmbeddingModel({
      baseUrl: `${server.url}/v1`,
      apiKey: 'sk-test',
      model: 'text-embedding-3-small',
      batchSize: 2,
    });
    expect(model).toMatchObject({ modelId: 'openai:text-embedding-3-small', dimensions: 1536 });
    const vectors = await model.embed(['a', 'bb', 'ccc'], 'document');
    expect(vectors.map((vector) => vector[0])).toEqual([1, 2, 3]);
    expect(server.requests.map((request) => request.body)).toEqual([
      { model: 'text-embedding-3-small', input: ['a', 'bb'], encoding_format: 'float' },
      { model: 'text-embedding-3-small', input: ['ccc'], encoding_format: 'float' },
    ]);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('asks for shortened vectors only when the model supports it and fewer dimensions were chosen', async () => {
    server = await openAi(256);
    const short = createOpenAiCompatibleEmbeddingModel({
      baseUrl: `${server.url}/v1`,
      model: 'text-embedding-3-large',
      dimensions: 256,
    });
    await short.embed(['x'], 'query');
    expect(server.requests[0]?.body).toMatchObject({ dimensions: 256 });
    expect(server.requests[0]?.headers.authorization).toBeUndefined();

    const declared = createOpenAiCompatibleEmbeddingModel({
      baseUrl: `${server.url}/v1`,
      model: 'gte-small',
      dimensions: 256,
    });
    await declared.embed(['x'], 'query');
    expect(server.requests[1]?.body).not.toHaveProperty('dimensions');
  });

  it("works against Ollama's /v1 with the nomic prefixes", async () => {
    server = await openAi(768);
    const model = createOpenAiCompatibleEmbeddingModel({ baseUrl: `${server.url}/v1`, model: 'nomic-embed-text' });
    await model.embed(['Oz lives in Lyon'], 'document');
    await model.embed(['where does Oz live'], 'query');
    expect(server.requests.map((request) => (request.body as { input: string[] }).input)).toEqual([
      ['search_document: Oz lives in Lyon'],
      ['search_query: where does Oz live'],
    ]);
  });

  it('probes the dimensions of an unknown model', async () => {
    server = await openAi(640);
    expect(await probeOpenAiCompatibleEmbeddingDimensions({ baseUrl: `${server.url}/v1`, model: 'custom' })).toBe(640);
  });

  it('explains a rejected key, a rate limit that does not clear and a malformed body', async () => {
    server = await startLoopbackServer((request) => {
      if (request.headers.authorization === 'Bearer bad') {
        return { status: 401, json: { error: { message: 'Incorrect API key provided' } } };
      }
      if (request.headers.authorization === 'Bearer busy')
        return { status: 429, json: { error: { message: 'slow down' } } };
      return { text: '{"data": [' };
    });
    const model = (apiKey: string) =>
      createOpenAiCompatibleEmbeddingModel({
        baseUrl: `${server?.url}/v1`,
        apiKey,
        model: 'text-embedding-3-small',
        sleep: recordingSleep().sleep,
      });
    await expect(model('bad').embed(['x'], 'query')).rejects.toThrow(
      /answered 401 to POST \/embeddings: Incorrect API key provided; check the API key \(MNEME_OPENAI_API_KEY\)/,
    );
    await expect(model('busy').embed(['x'], 'query')).rejects.toThrow(/answered 429 .*slow down \(after 3 attempts\)/);
    await expect(model('fine').embed(['x'], 'query')).rejects.toThrow(/not JSON/);
  });
});

describe('the OpenAI-compatible chat model', () => {
  it('sends response_format json_schema, temperature 0 and the key, and returns the content', async () => {
    server = await openAi(8);
    const chat = createOpenAiCompatibleChatModel({
      baseUrl: `${server.url}/v1`,
      apiKey: 'sk-test',
      model: 'gpt-4o-mini',
    });
    expect(chat.modelId).toBe('openai:gpt-4o-mini');
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    expect(
      await chat.complete({ messages: [{ role: 'user', content: 'ok?' }], jsonSchema: { name: 'check', schema } }),
    ).toBe('{"ok":true}');
    expect(server.requests[0]).toMatchObject({
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-test' },
      body: {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'ok?' }],
        temperature: 0,
        stream: false,
        response_format: { type: 'json_schema', json_schema: { name: 'check', schema } },
      },
    });
  });

  it('reports a refusal and a reply without choices', async () => {
    server = await startLoopbackServer((_request, index) =>
      index === 0
        ? { json: { choices: [{ message: { content: null, refusal: 'I cannot help with that' } }] } }
        : { json: { choices: [] } },
    );
    const chat = createOpenAiCompatibleChatModel({ baseUrl: `${server.url}/v1`, model: 'm' });
    await expect(chat.complete({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(
      'model m refused: I cannot help with that',
    );
    await expect(chat.complete({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(/without a choice/);
  });
});
