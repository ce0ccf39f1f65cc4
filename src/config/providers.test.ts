import { afterEach, describe, expect, it } from 'vitest';
import { recordingSleep, unusedLoopbackUrl } from '../../test/loopback-server.js';
import { ErrorCode } from '../core/errors.js';
import { type FakeProviderServer, startFakeProviderServer } from '../models/fake/fake-provider-server.fixture.js';
import type { TransformersModule } from '../models/transformers/transformers-embedding-model.js';
import { checkChatModel, checkEmbeddingModel } from './provider-checks.js';
import { parseModelChoice, readProviderSettings, resolveChatModel, resolveEmbedder } from './providers.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const notInstalled = async (): Promise<TransformersModule> => {
  throw Object.assign(new Error("Cannot find package '@huggingface/transformers'"), { code: 'ERR_MODULE_NOT_FOUND' });
};

describe('provider settings', () => {
  it('reads the environment: auto embeddings and no chat model unless told otherwise', () => {
    expect(readProviderSettings({})).toEqual({ embedder: 'auto', chat: 'none' });
    expect(
      readProviderSettings({
        MNEME_EMBEDDER: ' openai:text-embedding-3-small ',
        MNEME_CHAT: 'ollama:llama3.2:3b',
        MNEME_OLLAMA_URL: 'http://127.0.0.1:9999',
        MNEME_OPENAI_URL: 'http://127.0.0.1:8000/v1',
        MNEME_OPENAI_API_KEY: 'sk-x',
        MNEME_EMBEDDER_DIMENSIONS: '512',
        MNEME_TRANSFORMERS_MODELS: '/srv/models',
        MNEME_TRANSFORMERS_CACHE: '',
      }),
    ).toEqual({
      embedder: 'openai:text-embedding-3-small',
      chat: 'ollama:llama3.2:3b',
      ollamaUrl: 'http://127.0.0.1:9999',
      openaiUrl: 'http://127.0.0.1:8000/v1',
      openaiApiKey: 'sk-x',
      embedderDimensions: 512,
      transformersModels: '/srv/models',
    });
  });

  it('parses each provider form and keeps the colons of Ollama model tags', () => {
    expect(parseModelChoice('auto', 'embedder')).toEqual({ provider: 'auto', model: undefined });
    expect(parseModelChoice('ollama', 'embedder')).toEqual({ provider: 'ollama', model: undefined });
    expect(parseModelChoice('ollama:llama3.2:3b', 'chat')).toEqual({ provider: 'ollama', model: 'llama3.2:3b' });
    expect(parseModelChoice('Transformers:Xenova/bge-small-en-v1.5', 'embedder')).toEqual({
      provider: 'transformers',
      model: 'Xenova/bge-small-en-v1.5',
    });
  });

  it('refuses settings it does not understand, saying which forms exist', () => {
    expect(() => parseModelChoice('cohere', 'embedder')).toThrow(
      'MNEME_EMBEDDER=cohere is not understood; use auto, none, ollama[:model], openai:<model> or transformers[:model]',
    );
    expect(() => parseModelChoice('transformers', 'chat')).toThrow(/MNEME_CHAT=transformers is not understood/);
    expect(() => parseModelChoice('openai', 'chat')).toThrow(
      'MNEME_CHAT=openai needs a model, e.g. openai:gpt-4o-mini',
    );
    expect(() => parseModelChoice('none:x', 'embedder')).toThrow(
      expect.objectContaining({ code: ErrorCode.ConfigInvalid }),
    );
  });
});

describe('provider URLs', () => {
  it('refuses a URL that is not http(s) for the provider that uses it, at start, and ignores it for the others', async () => {
    const refused = { code: ErrorCode.ConfigInvalid };
    await expect(resolveEmbedder('openai:text-embedding-3-small', { openaiUrl: 'notaurl' })).rejects.toMatchObject({
      ...refused,
      message: 'MNEME_OPENAI_URL=notaurl is not an http:// or https:// URL (e.g. http://127.0.0.1:8000/v1)',
    });
    await expect(resolveEmbedder('ollama', { ollamaUrl: 'ftp://host' })).rejects.toMatchObject({
      ...refused,
      message: 'MNEME_OLLAMA_URL=ftp://host is not an http:// or https:// URL (e.g. http://127.0.0.1:11434)',
    });
    // auto asks Ollama: its URL is checked there too, before any call.
    await expect(resolveEmbedder('auto', { ollamaUrl: '127.0.0.1:11434' })).rejects.toMatchObject(refused);
    await expect(resolveChatModel('openai:gpt-4o-mini', { openaiUrl: 'notaurl' })).rejects.toMatchObject(refused);
    await expect(resolveChatModel('ollama', { ollamaUrl: 'notaurl' })).rejects.toMatchObject(refused);
    // A provider that does not use the variable does not read it.
    expect((await resolveEmbedder('none', { openaiUrl: 'notaurl', ollamaUrl: 'notaurl' })).model).toBeNull();
    const nowhere = await unusedLoopbackUrl();
    const ollama = await resolveEmbedder('ollama', { ollamaUrl: nowhere, openaiUrl: 'notaurl' });
    expect(ollama.model).toMatchObject({ modelId: 'ollama:nomic-embed-text' });
  });
});

describe('choosing the embedding model', () => {
  it('uses Ollama when auto finds it on the configured URL with the model pulled', async () => {
    server = await startFakeProviderServer({ models: ['nomic-embed-text:latest'] });
    const resolved = await resolveEmbedder('auto', { ollamaUrl: server.url }, { loadTransformers: notInstalled });
    expect(resolved.model).toMatchObject({ modelId: 'ollama:nomic-embed-text', dimensions: 768 });
    expect(resolved.reason).toBe(`auto: Ollama answers at ${server.url} and has nomic-embed-text`);
    expect(server.requests.map((request) => `${request.method} ${request.path}`)).toEqual(['GET /api/tags']);
  });

  it('falls back to lexical search when auto finds neither Ollama with the model nor transformers', async () => {
    server = await startFakeProviderServer({ models: ['llama3.2'] });
    const resolved = await resolveEmbedder('auto', { ollamaUrl: server.url }, { loadTransformers: notInstalled });
    expect(resolved.model).toBeNull();
    expect(resolved.reason).toBe(
      `auto: no embedding model found (Ollama at ${server.url} answers but has no nomic-embed-text (ollama pull nomic-embed-text); @huggingface/transformers is not installed): lexical search only`,
    );

    const nowhere = await unusedLoopbackUrl();
    const offline = await resolveEmbedder('auto', { ollamaUrl: nowhere }, { loadTransformers: notInstalled });
    expect(offline.reason).toMatch(new RegExp(`Ollama is not reachable at ${nowhere}`));
  });

  it('gives up on an Ollama that does not answer quickly, without retrying', async () => {
    server = await startFakeProviderServer();
    server.answerAlways({ hang: true });
    const resolved = await resolveEmbedder(
      'auto',
      { ollamaUrl: server.url },
      { loadTransformers: notInstalled, detectionTimeoutMs: 500 },
    );
    expect(resolved.model).toBeNull();
    expect(server.requests).toHaveLength(1);
  });

  it('uses transformers in auto mode only with the model already on disk, never downloading', async () => {
    const nowhere = await unusedLoopbackUrl();
    const requested: unknown[] = [];
    const module: TransformersModule = {
      env: {},
      AutoTokenizer: {
        from_pretrained: async (_model, options) => {
          requested.push(options);
          return () => ({ attention_mask: { data: [1], dims: [1, 1] } });
        },
      },
      AutoModel: {
        from_pretrained: async (_model, options) => {
          requested.push(options);
          return Object.assign(async () => ({}), { config: { hidden_size: 384 } });
        },
      },
    };
    const resolved = await resolveEmbedder(
      'auto',
      { ollamaUrl: nowhere, transformersCache: '/var/cache/mneme' },
      { loadTransformers: async () => module },
    );
    expect(resolved.model).toMatchObject({ modelId: 'transformers:Xenova/all-MiniLM-L6-v2', dimensions: 384 });
    expect(requested).toEqual([
      { cache_dir: '/var/cache/mneme', local_files_only: true },
      { cache_dir: '/var/cache/mneme', local_files_only: true },
    ]);
  });

  it('builds the configured provider without calling it when the dimensions are known', async () => {
    const nowhere = await unusedLoopbackUrl();
    const ollama = await resolveEmbedder('ollama', { ollamaUrl: nowhere });
    expect(ollama.model).toMatchObject({ modelId: 'ollama:nomic-embed-text', dimensions: 768 });
    const openai = await resolveEmbedder('openai:text-embedding-3-large', {
      openaiUrl: nowhere,
      embedderDimensions: 256,
    });
    expect(openai.model).toMatchObject({ modelId: 'openai:text-embedding-3-large', dimensions: 256 });
    expect((await resolveEmbedder('none')).model).toBeNull();
  });

  it('asks the server once for the dimensions of a model it does not know', async () => {
    server = await startFakeProviderServer({ models: ['bge-custom'], dimensions: 1024 });
    const resolved = await resolveEmbedder('ollama:bge-custom', { ollamaUrl: server.url });
    expect(resolved.model).toMatchObject({ modelId: 'ollama:bge-custom', dimensions: 1024 });
    expect(server.requests.map((request) => request.path)).toEqual(['/api/embed']);
  });

  it('says how to add transformers when it is configured but not installed', async () => {
    await expect(resolveEmbedder('transformers', {}, {})).rejects.toThrow(/npm install @huggingface\/transformers/);
  });
});

describe('choosing the chat model', () => {
  it('stays offline by default and uses Ollama in auto mode when it has the chat model', async () => {
    expect((await resolveChatModel('none')).model).toBeNull();
    server = await startFakeProviderServer({ models: ['llama3.2'] });
    const resolved = await resolveChatModel('auto', { ollamaUrl: server.url });
    expect(resolved.model?.modelId).toBe('ollama:llama3.2');
    const openai = await resolveChatModel('openai:gpt-4o-mini', { openaiUrl: 'http://127.0.0.1:1/v1' });
    expect(openai.model?.modelId).toBe('openai:gpt-4o-mini');
  });
});

describe('checking providers with a real call', () => {
  it('reports a working embedder and chat model', async () => {
    server = await startFakeProviderServer({ models: ['nomic-embed-text', 'llama3.2'] });
    const embedder = (await resolveEmbedder('ollama', { ollamaUrl: server.url })).model;
    const chat = (await resolveChatModel('ollama', { ollamaUrl: server.url })).model;
    if (!embedder || !chat) throw new Error('expected both models');
    expect(await checkEmbeddingModel(embedder)).toEqual({
      ok: true,
      detail: 'embedded a test sentence: 768 dimensions',
    });
    expect(await checkChatModel(chat)).toEqual({ ok: true, detail: 'answered with valid JSON' });
  });

  it('reports an unreachable provider with what to do', async () => {
    const nowhere = await unusedLoopbackUrl();
    const embedder = (await resolveEmbedder('ollama', { ollamaUrl: nowhere }, { sleep: recordingSleep().sleep })).model;
    if (!embedder) throw new Error('expected a model');
    const check = await checkEmbeddingModel(embedder);
    expect(check.ok).toBe(false);
    expect(check.detail).toMatch(
      `Ollama is not reachable at ${nowhere}; start it (ollama serve) or set MNEME_EMBEDDER=none`,
    );
  });
});
