import type { ChatModel, ChatRequest } from '../chat-model.js';

/** One scripted reply: fixed text, or a function of the request. */
export type ScriptedReply = string | ((request: ChatRequest) => string);

/**
 * A chat model for tests that answers from a script, in order, and records every request. When the
 * script runs out it throws, so a test notices an unexpected extra call. An aborted signal rejects
 * before the request is recorded.
 */
export function createScriptedChatModel(
  replies: readonly ScriptedReply[],
  options: { modelId?: string } = {},
): ChatModel & { readonly requests: readonly ChatRequest[] } {
  const requests: ChatRequest[] = [];
  return {
    modelId: options.modelId ?? 'scripted',
    requests,
    async complete(request, completeOptions = {}) {
      completeOptions.signal?.throwIfAborted();
      requests.push({ ...request, messages: request.messages.map((message) => ({ ...message })) });
      const reply = replies[requests.length - 1];
      if (reply === undefined) throw new Error(`the scripted chat model has no reply number ${requests.length}`);
      return typeof reply === 'function' ? reply(request) : reply;
    },
  };
}
