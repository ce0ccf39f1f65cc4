import { afterEach, describe, expect, it } from 'vitest';
import { recordingSleep } from '../../../test/loopback-server.js';
import { describeChatModelContract } from '../chat-model.contract.js';
import { describeEmbeddingModelContract } from '../embedding-model.contract.js';
import { createFakeEmbeddingModel } from '../fake/fake-embedding-model.js';
import {
  type FakeProviderServer,
  type FakeProviderServerOptions,
  startFakeProviderServer,
} from '../fake/fake-provider-server.fixture.js';
import { createOpenAiCompatibleChatModel } from './openai-compatible-chat-model.js';
import {
  createOpenAiCompatibleEmbeddingModel,
  probeOpenAiCompatibleEmbeddingDimensions,
} from './openai-compatible-embedding-model.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The fake provider server; its OpenAI-compatible endpoints are under `/v1`. */
async function openAi(options: FakeProviderServerOptions = {}) {
  server = await startFakeProviderServer(options);
  return { ...server, baseUrl: `${server.url}/v1` };
}

const rejectedKey = { status: 401, json: { error: { message: 'Incorrect API key provided' } } };

/** The base URL of a server that rejects every key, as OpenAI does a revoked one. */
async function rejectingEveryKey(): Promise<string> {
  const { baseUrl, answerAlways } = await openAi();
  answerAlways(rejectedKey);
  return baseUrl;
}

describeEmbeddingModelContract('OpenAI-compatible', {
  makeModel: async () =>
    createOpenAiCompatibleEmbeddingModel({
      baseUrl: (await openAi({ dimensions: 1536 })).baseUrl,
      model: 'text-embedding-3-small',
      batchSize: 2,
    }),
  failing: {
    makeModel: async () =>
      createOpenAiCompatibleEmbeddingModel({
        baseUrl: await rejectingEveryKey(),
        apiKey: 'sk-bad',
        model: 'text-embedding-3-small',
      }),
    advice: 'check the API key (MNEME_OPENAI_API_KEY)',
  },
});

describeChatModelContract('OpenAI-compatible', {
  makeModel: async (reply) =>
    createOpenAiCompatibleChatModel({ baseUrl: (await openAi({ chatReply: reply })).baseUrl, model: 'gpt-4o-mini' }),
  failing: {
    makeModel: async () =>
      createOpenAiCompatibleChatModel({ baseUrl: await rejectingEveryKey(), apiKey: 'sk-bad', model: 'gpt-4o-mini' }),
    advice: 'check the API key (MNEME_OPENAI_API_KEY)',
  },
});

describe('the OpenAI-compatible embedding model', () => {
  it('embeds in batches with the bearer key and puts vectors back in input order', async () => {
    const { baseUrl, requests } = await openAi({ dimensions: 1536 });
    const model = createOpenAiCompatibleEmbeddingModel({
      baseUrl,
      apiKey: 'sk-test',
      model: 'text-embedding-3-small',
      batchSize: 2,
    });
    expect(model).toMatchObject({ modelId: 'openai:text-embedding-3-small', dimensions: 1536 });
    expect(await model.embed(['a', 'bb', 'ccc'], 'document')).toEqual(
      await createFakeEmbeddingModel({ dimensions: 1536 }).embed(['a', 'bb', 'ccc'], 'document'),
    );
    expect(requests.map((request) => request.body)).toEqual([
      { model: 'text-embedding-3-small', input: ['a', 'bb'], encoding_format: 'float' },
      { model: 'text-embedding-3-small', input: ['ccc'], encoding_format: 'float' },
    ]);
    expect(requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('asks for shortened vectors only when the model supports it and fewer dimensions were chosen', async () => {
    const { baseUrl, requests } = await openAi({ dimensions: 256 });
    const short = createOpenAiCompatibleEmbeddingModel({ baseUrl, model: 'text-embedding-3-large', dimensions: 256 });
    await short.embed(['x'], 'query');
    expect(requests[0]?.body).toMatchObject({ dimensions: 256 });
    expect(requests[0]?.headers.authorization).toBeUndefined();

    const declared = createOpenAiCompatibleEmbeddingModel({ baseUrl, model: 'gte-small', dimensions: 256 });
    await declared.embed(['x'], 'query');
    expect(requests[1]?.body).not.toHaveProperty('dimensions');
  });

  it("works against Ollama's /v1 with the nomic prefixes", async () => {
    const { baseUrl, requests } = await openAi();
    const model = createOpenAiCompatibleEmbeddingModel({ baseUrl, model: 'nomic-embed-text' });
    await model.embed(['Oz lives in Lyon'], 'document');
    await model.embed(['where does Oz live'], 'query');
    expect(requests.map((request) => (request.body as { input: string[] }).input)).toEqual([
      ['search_document: Oz lives in Lyon'],
      ['search_query: where does Oz live'],
    ]);
  });

  it('probes the dimensions of an unknown model', async () => {
    const { baseUrl } = await openAi({ dimensions: 640 });
    expect(await probeOpenAiCompatibleEmbeddingDimensions({ baseUrl, model: 'custom' })).toBe(640);
  });

  it('explains a rejected key, a rate limit that does not clear and a malformed body', async () => {
    const { baseUrl, answerNext } = await openAi();
    const model = (apiKey: string) =>
      createOpenAiCompatibleEmbeddingModel({
        baseUrl,
        apiKey,
        model: 'text-embedding-3-small',
        sleep: recordingSleep().sleep,
      });
    answerNext(rejectedKey);
    await expect(model('bad').embed(['x'], 'query')).rejects.toThrow(
      /answered 401 to POST \/embeddings: Incorrect API key provided; check the API key \(MNEME_OPENAI_API_KEY\)/,
    );
    const slowDown = { status: 429, json: { error: { message: 'slow down' } } };
    answerNext(slowDown, slowDown, slowDown);
    await expect(model('busy').embed(['x'], 'query')).rejects.toThrow(/answered 429 .*slow down \(after 3 attempts\)/);
    answerNext({ text: '{"data": [' });
    await expect(model('fine').embed(['x'], 'query')).rejects.toThrow(/not JSON/);
  });
});

describe('the OpenAI-compatible chat model', () => {
  it('sends response_format json_schema, temperature 0 and the key, and returns the content', async () => {
    const { baseUrl, requests } = await openAi({ chatReply: '{"ok":true}' });
    const chat = createOpenAiCompatibleChatModel({ baseUrl, apiKey: 'sk-test', model: 'gpt-4o-mini' });
    expect(chat.modelId).toBe('openai:gpt-4o-mini');
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    expect(
      await chat.complete({ messages: [{ role: 'user', content: 'ok?' }], jsonSchema: { name: 'check', schema } }),
    ).toBe('{"ok":true}');
    expect(requests[0]).toMatchObject({
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
    const { baseUrl, answerNext } = await openAi();
    answerNext(
      { json: { choices: [{ message: { content: null, refusal: 'I cannot help with that' } }] } },
      { json: { choices: [] } },
    );
    const chat = createOpenAiCompatibleChatModel({ baseUrl, model: 'm' });
    await expect(chat.complete({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(
      'model m refused: I cannot help with that',
    );
    await expect(chat.complete({ messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(/without a choice/);
  });
});
