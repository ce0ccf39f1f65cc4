import { z } from 'zod';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { ChatModel } from '../chat-model.js';
import { canonicalModelName } from '../embedding-model-traits.js';
import type { ProviderHttpOptions } from '../provider-http.js';
import { createOllamaClient, DEFAULT_OLLAMA_URL } from './ollama-client.js';

/** Options of `createOllamaChatModel`. */
export interface OllamaChatModelOptions extends ProviderHttpOptions {
  /** Ollama's address; `http://127.0.0.1:11434` by default. */
  baseUrl?: string;
  /** The model; `llama3.2` by default. */
  model?: string;
}

/** The default Ollama chat model. */
export const DEFAULT_OLLAMA_CHAT_MODEL = 'llama3.2';

const ChatResponseSchema = z.object({ message: z.object({ content: z.string() }) });

/**
 * Chat through Ollama's `/api/chat` (`stream: false`). A request's JSON schema goes in `format`, so
 * Ollama constrains the reply to it; temperature is 0 unless the request says otherwise. The model id
 * is `ollama:<model>`. Chat requests wait up to 2 minutes by default: a local model may be loading.
 */
export function createOllamaChatModel(options: OllamaChatModelOptions = {}): ChatModel {
  const model = canonicalModelName(options.model ?? DEFAULT_OLLAMA_CHAT_MODEL);
  const client = createOllamaClient(options.baseUrl ?? DEFAULT_OLLAMA_URL, model, 'MNEME_CHAT', {
    timeoutMs: 120_000,
    ...options,
  });
  return {
    modelId: `ollama:${model}`,
    async complete(request, completeOptions = {}) {
      const body = await client.postJson(
        '/api/chat',
        {
          model,
          messages: request.messages.map(({ role, content }) => ({ role, content })),
          stream: false,
          ...(request.jsonSchema ? { format: request.jsonSchema.schema } : {}),
          options: { temperature: request.temperature ?? 0 },
        },
        { signal: completeOptions.signal },
      );
      const parsed = ChatResponseSchema.safeParse(body);
      if (!parsed.success) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `Ollama at ${client.baseUrl} answered POST /api/chat without a message; is this an Ollama server?`,
        );
      }
      return parsed.data.message.content;
    },
  };
}
