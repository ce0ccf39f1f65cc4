import { z } from 'zod';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { ChatModel } from '../chat-model.js';
import { createOpenAiCompatibleClient, type OpenAiCompatibleConnection } from './openai-compatible-client.js';

/** Options of `createOpenAiCompatibleChatModel`. */
export interface OpenAiCompatibleChatModelOptions extends OpenAiCompatibleConnection {
  /** The model, e.g. `gpt-4o-mini`, or `llama3.2` on Ollama's `/v1`. */
  model: string;
}

const CompletionResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable().optional(), refusal: z.string().nullable().optional() }),
      }),
    )
    .min(1),
});

/**
 * Chat through any OpenAI-compatible `/chat/completions` endpoint. A request's JSON schema is sent as
 * `response_format: { type: 'json_schema' }`; temperature is 0 unless the request says otherwise.
 * The model id is `openai:<model>`.
 */
export function createOpenAiCompatibleChatModel(options: OpenAiCompatibleChatModelOptions): ChatModel {
  const client = createOpenAiCompatibleClient({ timeoutMs: 120_000, ...options }, 'MNEME_CHAT');
  return {
    modelId: `openai:${options.model}`,
    async complete(request, completeOptions = {}) {
      const body = await client.postJson(
        '/chat/completions',
        {
          model: options.model,
          messages: request.messages.map(({ role, content }) => ({ role, content })),
          temperature: request.temperature ?? 0,
          stream: false,
          ...(request.jsonSchema
            ? {
                response_format: {
                  type: 'json_schema',
                  json_schema: { name: request.jsonSchema.name, schema: request.jsonSchema.schema },
                },
              }
            : {}),
        },
        { signal: completeOptions.signal },
      );
      const parsed = CompletionResponseSchema.safeParse(body);
      if (!parsed.success) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `the OpenAI-compatible server at ${client.baseUrl} answered POST /chat/completions without a choice`,
        );
      }
      const message = parsed.data.choices[0]?.message;
      if (message?.refusal) {
        throw new MnemeError(ErrorCode.ModelFailed, `model ${options.model} refused: ${message.refusal}`);
      }
      return message?.content ?? '';
    },
  };
}
