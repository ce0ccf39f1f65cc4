import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import type { ChatModel } from '../models/chat-model.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { canonicalModelName, knownEmbeddingDimensions } from '../models/embedding-model-traits.js';
import { createOllamaChatModel, DEFAULT_OLLAMA_CHAT_MODEL } from '../models/ollama/ollama-chat-model.js';
import { DEFAULT_OLLAMA_URL, listOllamaModels } from '../models/ollama/ollama-client.js';
import {
  createOllamaEmbeddingModel,
  DEFAULT_OLLAMA_EMBEDDING_MODEL,
  probeOllamaEmbeddingDimensions,
} from '../models/ollama/ollama-embedding-model.js';
import { createOpenAiCompatibleChatModel } from '../models/openai-compatible/openai-compatible-chat-model.js';
import { DEFAULT_OPENAI_URL } from '../models/openai-compatible/openai-compatible-client.js';
import {
  createOpenAiCompatibleEmbeddingModel,
  probeOpenAiCompatibleEmbeddingDimensions,
} from '../models/openai-compatible/openai-compatible-embedding-model.js';
import { hasCredentials, hasQuery, type Sleep, withoutCredentials } from '../models/provider-http.js';
import {
  createTransformersEmbeddingModel,
  DEFAULT_TRANSFORMERS_MODEL,
  type TransformersModule,
} from '../models/transformers/transformers-embedding-model.js';

/** Where the model providers are and how to reach them. Every field has a default. */
export interface ProviderConnections {
  /** `MNEME_OLLAMA_URL`; `http://127.0.0.1:11434` by default. */
  ollamaUrl?: string;
  /** `MNEME_OPENAI_URL`: an OpenAI-compatible base URL ending in `/v1`; OpenAI's own by default. */
  openaiUrl?: string;
  /** `MNEME_OPENAI_API_KEY`, sent as a bearer token. */
  openaiApiKey?: string;
  /** `MNEME_EMBEDDER_DIMENSIONS`: the vector length of a model mneme does not know (else probed with one call). */
  embedderDimensions?: number;
  /** `MNEME_TRANSFORMERS_MODELS`: a folder of ONNX models for air-gapped use; nothing is downloaded. */
  transformersModels?: string;
  /** `MNEME_TRANSFORMERS_CACHE`: where downloaded ONNX models are kept. */
  transformersCache?: string;
}

/** Provider settings as read from the environment by `loadConfig`. */
export interface ProviderSettings extends ProviderConnections {
  /** `MNEME_EMBEDDER`: `auto` (the default for the CLI), `none`, `ollama[:model]`, `openai:<model>`, `transformers[:model]`. */
  embedder: string;
  /** `MNEME_CHAT`: `none` (the default), `auto`, `ollama[:model]`, `openai:<model>`. */
  chat: string;
}

/** What the provider resolution may be given instead of the real thing (tests, detection timeouts). */
export interface ProviderDependencies {
  fetch?: typeof fetch;
  sleep?: Sleep;
  /** Loads `@huggingface/transformers`; the real dynamic import by default. */
  loadTransformers?: () => Promise<TransformersModule>;
  /** How long detection waits for Ollama to answer; 1.5 s by default. */
  detectionTimeoutMs?: number;
  /**
   * The dimensions the database's vector index holds for a model id (`openai:house-embedder`), if it holds that
   * model: asked for a model mneme does not know before the server is, so a database that indexes the model opens
   * without a call (a provider that is down, or answers one start with vectors of another length, would otherwise
   * fail every command or empty the index).
   */
  indexedDimensions?: (modelId: string) => Promise<number | undefined>;
}

/** A resolved model, or null, and why: what `mneme doctor` prints. */
export interface ResolvedModel<Model> {
  model: Model | null;
  /** The setting as given: `auto`, `ollama:nomic-embed-text`, ... */
  setting: string;
  reason: string;
}

/** A provider choice parsed from `MNEME_EMBEDDER` or `MNEME_CHAT`. */
export interface ModelChoice {
  provider: 'auto' | 'none' | 'ollama' | 'openai' | 'transformers';
  /** Undefined: the provider's default model. */
  model: string | undefined;
}

/** Reads the provider settings from an environment: `auto` embeddings and no chat model unless told otherwise. */
export function readProviderSettings(environment: Record<string, string | undefined>): ProviderSettings {
  const value = (name: string) => {
    const text = environment[name]?.trim();
    return text ? text : undefined;
  };
  const dimensions = value('MNEME_EMBEDDER_DIMENSIONS');
  const settings: ProviderSettings = {
    embedder: value('MNEME_EMBEDDER') ?? 'auto',
    chat: value('MNEME_CHAT') ?? 'none',
  };
  const optional = {
    ollamaUrl: value('MNEME_OLLAMA_URL'),
    openaiUrl: value('MNEME_OPENAI_URL'),
    openaiApiKey: value('MNEME_OPENAI_API_KEY'),
    embedderDimensions: dimensions === undefined ? undefined : Number(dimensions),
    transformersModels: value('MNEME_TRANSFORMERS_MODELS'),
    transformersCache: value('MNEME_TRANSFORMERS_CACHE'),
  };
  for (const [key, entry] of Object.entries(optional)) {
    if (entry !== undefined) Object.assign(settings, { [key]: entry });
  }
  return settings;
}

/**
 * Parses `auto`, `none`, `ollama`, `ollama:<model>`, `openai:<model>`, `transformers[:<model>]`
 * (the latter for embeddings only). Ollama model names keep their own colons (`llama3.2:3b`).
 */
export function parseModelChoice(setting: string, kind: 'embedder' | 'chat'): ModelChoice {
  const variable = kind === 'embedder' ? 'MNEME_EMBEDDER' : 'MNEME_CHAT';
  const text = setting.trim();
  const colon = text.indexOf(':');
  const provider = (colon === -1 ? text : text.slice(0, colon)).toLowerCase();
  const model = colon === -1 ? undefined : text.slice(colon + 1).trim() || undefined;
  const forms =
    kind === 'embedder'
      ? 'auto, none, ollama[:model], openai:<model> or transformers[:model]'
      : 'none, auto, ollama[:model] or openai:<model>';
  const allowed =
    kind === 'embedder' ? ['auto', 'none', 'ollama', 'openai', 'transformers'] : ['auto', 'none', 'ollama', 'openai'];
  if (!allowed.includes(provider) || ((provider === 'auto' || provider === 'none') && model !== undefined)) {
    throw new MnemeError(ErrorCode.ConfigInvalid, `${variable}=${setting} is not understood; use ${forms}`);
  }
  if (provider === 'openai' && model === undefined) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `${variable}=openai needs a model, e.g. ${kind === 'embedder' ? 'openai:text-embedding-3-small' : 'openai:gpt-4o-mini'}`,
    );
  }
  return { provider: provider as ModelChoice['provider'], model };
}

/**
 * Picks the embedding model a setting names. `auto` looks only at the configured Ollama URL (a short
 * GET /api/tags) and at an installed `@huggingface/transformers` with the model already on disk; it
 * never downloads anything and never calls any other address. Nothing found: null (lexical only).
 */
export async function resolveEmbedder(
  setting: string,
  connections: ProviderConnections = {},
  dependencies: ProviderDependencies = {},
): Promise<ResolvedModel<EmbeddingModel>> {
  const choice = parseModelChoice(setting, 'embedder');
  const ollamaUrl = providerUrl(choice, 'ollama', connections.ollamaUrl) ?? DEFAULT_OLLAMA_URL;
  const openaiUrl = providerUrl(choice, 'openai', connections.openaiUrl) ?? DEFAULT_OPENAI_URL;
  const http = {
    ...(dependencies.fetch ? { fetch: dependencies.fetch } : {}),
    ...(dependencies.sleep ? { sleep: dependencies.sleep } : {}),
  };
  const dimensions = checkedDimensions(connections.embedderDimensions);
  const resolved = (model: EmbeddingModel | null, reason: string) => ({ model, setting, reason });

  switch (choice.provider) {
    case 'none':
      return resolved(null, 'embeddings are off: lexical search only');
    case 'ollama': {
      const model = choice.model ?? DEFAULT_OLLAMA_EMBEDDING_MODEL;
      const size =
        dimensions ??
        knownEmbeddingDimensions(model) ??
        (await dependencies.indexedDimensions?.(`ollama:${canonicalModelName(model)}`)) ??
        (await probeOllamaEmbeddingDimensions({ ...http, baseUrl: ollamaUrl, model }));
      return resolved(
        createOllamaEmbeddingModel({ ...http, baseUrl: ollamaUrl, model, dimensions: size }),
        `Ollama at ${ollamaUrl}, as configured`,
      );
    }
    case 'openai': {
      const connection = {
        ...http,
        baseUrl: openaiUrl,
        apiKey: connections.openaiApiKey,
        model: choice.model ?? '',
      };
      const size =
        dimensions ??
        knownEmbeddingDimensions(connection.model) ??
        (await dependencies.indexedDimensions?.(`openai:${canonicalModelName(connection.model)}`)) ??
        (await probeOpenAiCompatibleEmbeddingDimensions(connection));
      return resolved(
        createOpenAiCompatibleEmbeddingModel({ ...connection, dimensions: size }),
        `the OpenAI-compatible server at ${connection.baseUrl}, as configured`,
      );
    }
    case 'transformers':
      return resolved(
        await createTransformersEmbeddingModel(transformersOptions(choice.model, connections, dependencies, true)),
        'local ONNX through @huggingface/transformers, as configured',
      );
    case 'auto': {
      const notes: string[] = [];
      const ollama = await detectOllamaModel(ollamaUrl, DEFAULT_OLLAMA_EMBEDDING_MODEL, dependencies);
      if (ollama.hasModel) {
        return resolved(
          createOllamaEmbeddingModel({ ...http, baseUrl: ollamaUrl }),
          `auto: Ollama answers at ${ollamaUrl} and has ${DEFAULT_OLLAMA_EMBEDDING_MODEL}`,
        );
      }
      notes.push(ollama.note);
      try {
        const model = await createTransformersEmbeddingModel(
          transformersOptions(undefined, connections, dependencies, false),
        );
        return resolved(
          model,
          `auto: ${ollama.note}; @huggingface/transformers is installed and has ${DEFAULT_TRANSFORMERS_MODEL} on disk`,
        );
      } catch (error) {
        notes.push(transformersNote(error));
      }
      return resolved(null, `auto: no embedding model found (${notes.join('; ')}): lexical search only`);
    }
  }
}

/**
 * Picks the chat model a setting names. `auto` uses Ollama's default chat model when the configured
 * Ollama has it; `none` (the default) keeps extraction, episodes and merges offline.
 */
export async function resolveChatModel(
  setting: string,
  connections: ProviderConnections = {},
  dependencies: ProviderDependencies = {},
): Promise<ResolvedModel<ChatModel>> {
  const choice = parseModelChoice(setting, 'chat');
  const ollamaUrl = providerUrl(choice, 'ollama', connections.ollamaUrl) ?? DEFAULT_OLLAMA_URL;
  const openaiUrl = providerUrl(choice, 'openai', connections.openaiUrl) ?? DEFAULT_OPENAI_URL;
  const http = {
    ...(dependencies.fetch ? { fetch: dependencies.fetch } : {}),
    ...(dependencies.sleep ? { sleep: dependencies.sleep } : {}),
  };
  const resolved = (model: ChatModel | null, reason: string) => ({ model, setting, reason });
  switch (choice.provider) {
    case 'none':
      return resolved(null, 'no chat model: the offline extractor, summariser and merger do the work');
    case 'ollama':
      return resolved(
        createOllamaChatModel({ ...http, baseUrl: ollamaUrl, ...(choice.model ? { model: choice.model } : {}) }),
        `Ollama at ${ollamaUrl}, as configured`,
      );
    case 'openai': {
      const baseUrl = openaiUrl;
      return resolved(
        createOpenAiCompatibleChatModel({
          ...http,
          baseUrl,
          apiKey: connections.openaiApiKey,
          model: choice.model ?? '',
        }),
        `the OpenAI-compatible server at ${baseUrl}, as configured`,
      );
    }
    default: {
      const ollama = await detectOllamaModel(ollamaUrl, DEFAULT_OLLAMA_CHAT_MODEL, dependencies);
      if (ollama.hasModel) {
        return resolved(
          createOllamaChatModel({ ...http, baseUrl: ollamaUrl }),
          `auto: Ollama answers at ${ollamaUrl} and has ${DEFAULT_OLLAMA_CHAT_MODEL}`,
        );
      }
      return resolved(null, `auto: no chat model found (${ollama.note}): offline extraction and summaries`);
    }
  }
}

/** Whether the Ollama at `url` answers (quickly) and has `model`, and a note saying what was found. */
async function detectOllamaModel(
  url: string,
  model: string,
  dependencies: ProviderDependencies,
): Promise<{ hasModel: boolean; note: string }> {
  try {
    const models = await listOllamaModels(url, {
      timeoutMs: dependencies.detectionTimeoutMs ?? 1500,
      maxRetries: 0,
      ...(dependencies.fetch ? { fetch: dependencies.fetch } : {}),
    });
    if (models.includes(model)) return { hasModel: true, note: `Ollama at ${url} has ${model}` };
    return { hasModel: false, note: `Ollama at ${url} answers but has no ${model} (ollama pull ${model})` };
  } catch {
    return { hasModel: false, note: `Ollama is not reachable at ${url}` };
  }
}

function transformersOptions(
  model: string | undefined,
  connections: ProviderConnections,
  dependencies: ProviderDependencies,
  allowDownloads: boolean,
) {
  return {
    ...(model ? { model } : {}),
    ...(connections.transformersModels ? { localModelPath: connections.transformersModels } : {}),
    ...(connections.transformersCache ? { cacheDir: connections.transformersCache } : {}),
    ...(dependencies.loadTransformers ? { loadModule: dependencies.loadTransformers } : {}),
    allowDownloads,
  };
}

function transformersNote(error: unknown): string {
  const message = errorMessage(error);
  if (/not installed/.test(message)) return '@huggingface/transformers is not installed';
  return `${DEFAULT_TRANSFORMERS_MODEL} is not on disk for @huggingface/transformers (run once with MNEME_EMBEDDER=transformers to download it)`;
}

/**
 * The URL set for `provider` (`MNEME_OLLAMA_URL`, `MNEME_OPENAI_URL`) when the choice uses it (`auto` asks
 * Ollama), checked: one that is not an http(s) URL, or that holds a query string, a user name or a password, is
 * refused here, at start, rather than failing every embedding later (and being retried). Undefined when not set.
 */
function providerUrl(choice: ModelChoice, provider: 'ollama' | 'openai', url: string | undefined): string | undefined {
  const uses = choice.provider === provider || (provider === 'ollama' && choice.provider === 'auto');
  if (!uses || url === undefined) return url;
  const variable = provider === 'ollama' ? 'MNEME_OLLAMA_URL' : 'MNEME_OPENAI_URL';
  const example = provider === 'ollama' ? DEFAULT_OLLAMA_URL : 'http://127.0.0.1:8000/v1';
  let protocol: string | null = null;
  try {
    protocol = new URL(url).protocol;
  } catch {}
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `${variable}=${withoutCredentials(url)} is not an http:// or https:// URL (e.g. ${example})`,
    );
  }
  // fetch refuses a URL with credentials, and every message naming the server (the startup line, doctor, warnings)
  // would show the password.
  if (hasQuery(url)) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `${variable}=${withoutCredentials(url)} is a base URL: leave out the query string and fragment${provider === 'openai' ? ' (a key goes in MNEME_OPENAI_API_KEY)' : ''}`,
    );
  }
  if (hasCredentials(url)) {
    const key = provider === 'openai' ? '; give the key as MNEME_OPENAI_API_KEY' : '';
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `${variable}=${withoutCredentials(url)} holds a user name or password, which mneme does not send; remove them${key}`,
    );
  }
  return url;
}

function checkedDimensions(dimensions: number | undefined): number | undefined {
  if (dimensions === undefined) return undefined;
  if (!Number.isInteger(dimensions) || dimensions <= 0) {
    throw new MnemeError(ErrorCode.ConfigInvalid, 'MNEME_EMBEDDER_DIMENSIONS must be a positive whole number');
  }
  return dimensions;
}
