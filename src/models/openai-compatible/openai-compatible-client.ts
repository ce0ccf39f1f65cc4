import { createProviderClient, type ProviderClient, type ProviderHttpOptions } from '../provider-http.js';

/** OpenAI's own API; any other server that speaks the same protocol is given by `baseUrl`. */
export const DEFAULT_OPENAI_URL = 'https://api.openai.com/v1';

/** Connection options shared by the OpenAI-compatible adapters. */
export interface OpenAiCompatibleConnection extends ProviderHttpOptions {
  /** Everything before `/embeddings` or `/chat/completions`, e.g. `http://127.0.0.1:11434/v1` for Ollama. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string | undefined;
  /** Extra headers (an organisation or project header, a proxy's key). */
  headers?: Record<string, string>;
}

/** A ProviderClient for an OpenAI-compatible server whose errors name the setting to change. */
export function createOpenAiCompatibleClient(
  connection: OpenAiCompatibleConnection,
  setting: 'MNEME_EMBEDDER' | 'MNEME_CHAT',
): ProviderClient {
  return createProviderClient({
    ...connection,
    provider: 'the OpenAI-compatible server',
    baseUrl: connection.baseUrl ?? DEFAULT_OPENAI_URL,
    headers: {
      ...(connection.apiKey ? { authorization: `Bearer ${connection.apiKey}` } : {}),
      ...connection.headers,
    },
    unreachableHint: `check MNEME_OPENAI_URL or set ${setting}=none`,
    statusHint: (status) => {
      if (status === 401 || status === 403) return 'check the API key (MNEME_OPENAI_API_KEY)';
      if (status === 404) return 'check the model name and that MNEME_OPENAI_URL ends with /v1';
      return undefined;
    },
  });
}
