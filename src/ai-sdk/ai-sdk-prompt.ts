import type { LanguageModelMiddleware } from 'ai';

/** The call options a language model receives (`LanguageModelV3CallOptions`), as the middleware sees them. */
export type CallOptions = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params'];
/** One message of the prompt a language model receives: system, user, assistant or tool. */
export type PromptMessage = CallOptions['prompt'][number];
/** What a model's `doGenerate` returns. */
export type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
/** What a model's `doStream` returns. */
export type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
/** One part of a model's stream (`text-delta`, `finish`, `error`, ...). */
export type StreamPart = StreamResult['stream'] extends ReadableStream<infer Part> ? Part : never;

/** The turn a prompt ends with: the latest user message's text, and whether the user spoke last. */
export interface UserTurn {
  /** The text parts of the latest user message, joined by newlines (files are left out). */
  text: string;
  /** True when the prompt ends with that message; false in a later step of a tool loop. */
  last: boolean;
}

/** The latest user message of a prompt, or null when it has none or it holds no text. */
export function latestUserTurn(prompt: readonly PromptMessage[]): UserTurn | null {
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index];
    if (message?.role !== 'user') continue;
    const text = message.content
      .flatMap((part) => (part.type === 'text' ? [part.text] : []))
      .join('\n')
      .trim();
    return text === '' ? null : { text, last: index === prompt.length - 1 };
  }
  return null;
}

/**
 * The prompt with the context block as a system message of its own: after the system messages the prompt
 * starts with, or first when it starts with none. No other message is changed.
 */
export function withContextBlock(prompt: readonly PromptMessage[], block: string): PromptMessage[] {
  const leading = prompt.findIndex((message) => message.role !== 'system');
  const at = leading === -1 ? prompt.length : leading;
  return [...prompt.slice(0, at), { role: 'system', content: block }, ...prompt.slice(at)];
}

/** The text of a generated reply: its text parts in order. */
export function replyText(result: GenerateResult): string {
  return result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
}

/**
 * Whether a part of a reply (generated or streamed) asks the app for a tool: a step of a tool loop, whatever its
 * finish reason says (OpenAI and several OpenAI-compatible servers say `stop` beside the calls they ask for). A tool
 * the provider ran itself (a web search) ends no step.
 */
export function asksForTool(part: { type: string; providerExecuted?: boolean | undefined }): boolean {
  return part.type === 'tool-call' && part.providerExecuted !== true;
}

/** Whether a finished reply is a complete assistant turn worth keeping: not a tool call, not an error. */
export function isFinalReply(finishReason: GenerateResult['finishReason']): boolean {
  return finishReason.unified !== 'tool-calls' && finishReason.unified !== 'error';
}
