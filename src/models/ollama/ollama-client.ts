import { ErrorCode, MnemeError } from '../../core/errors.js';
import { canonicalModelName } from '../embedding-model-traits.js';
import { createProviderClient, type ProviderClient, type ProviderHttpOptions } from '../provider-http.js';

/** Where Ollama listens unless told otherwise. */
export const DEFAULT_OLLAMA_URL = 'http://127.0.0.1:11434';

/** A ProviderClient for Ollama whose errors name the setting to change (`MNEME_EMBEDDER` or `MNEME_CHAT`). */
export function createOllamaClient(
  baseUrl: string,
  model: string,
  setting: 'MNEME_EMBEDDER' | 'MNEME_CHAT',
  options: ProviderHttpOptions,
): ProviderClient {
  return createProviderClient({
    ...options,
    provider: 'Ollama',
    baseUrl,
    unreachableHint: `start it (ollama serve) or set ${setting}=none`,
    statusHint: (status, serverMessage) =>
      status === 404 || /not found|pull/i.test(serverMessage)
        ? `pull the model first: ollama pull ${model}`
        : undefined,
  });
}

/**
 * The models Ollama has pulled (`GET /api/tags`), names without the `:latest` tag. Used by detection
 * with a short timeout and no retries, so an absent Ollama costs almost nothing.
 */
export async function listOllamaModels(
  baseUrl: string,
  options: ProviderHttpOptions & { signal?: AbortSignal } = {},
): Promise<string[]> {
  const client = createOllamaClient(baseUrl, 'the model', 'MNEME_EMBEDDER', options);
  const body = (await client.getJson('/api/tags', { signal: options.signal })) as {
    models?: Array<{ name?: unknown; model?: unknown }>;
  };
  if (!Array.isArray(body?.models)) {
    throw new MnemeError(
      ErrorCode.ModelFailed,
      `the server at ${client.baseUrl} answered GET /api/tags without a "models" list; is it Ollama?`,
    );
  }
  return body.models.flatMap((entry) => {
    const name = typeof entry.name === 'string' ? entry.name : typeof entry.model === 'string' ? entry.model : null;
    return name ? [canonicalModelName(name)] : [];
  });
}
