/**
 * The parts of an OpenAI chat completion request and reply the proxy reads or changes; everything
 * else in them passes through untouched.
 */

import { clipChars, fitMessage, MAX_MESSAGE_CHARS } from '../core/schemas.js';

/** One message of a chat completion request, as far as the proxy looks into it. */
export interface ChatMessage {
  role?: unknown;
  content?: unknown;
  [field: string]: unknown;
}

/** The text of a message's content: a string, or its text parts joined by newlines ('' when it has none). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .flatMap((part) =>
      typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text'
        ? [(part as { text?: unknown }).text]
        : [],
    )
    .filter((text): text is string => typeof text === 'string')
    .join('\n');
}

/** The text of the latest `role: user` message, or '' when there is none or it holds no text. */
export function latestUserText(messages: readonly ChatMessage[]): string {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role === 'user') return contentText(message.content).trim();
  }
  return '';
}

/** Roles that instruct the model rather than converse: the context block goes after the leading run of them. */
const instructionRoles = new Set(['system', 'developer']);

/**
 * The messages with the context block as a `system` message after the client's leading system (and
 * developer) messages, before the conversation; never inside a user's text. The input is not changed.
 */
export function withContextBlock(messages: readonly ChatMessage[], block: string): ChatMessage[] {
  let at = 0;
  while (at < messages.length && instructionRoles.has(String(messages[at]?.role))) at += 1;
  return [...messages.slice(0, at), { role: 'system', content: block }, ...messages.slice(at)];
}

/** Finish reasons of a reply that only asks for tools: the turn goes on in the client's next request. */
const toolFinishReasons = new Set(['tool_calls', 'function_call']);

/** Whether a message or a delta asks for a tool (`tool_calls` with at least one call, or the older `function_call`). */
function callsTools(message: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const { tool_calls: toolCalls, function_call: functionCall } = message as {
    tool_calls?: unknown;
    function_call?: unknown;
  };
  return (
    (Array.isArray(toolCalls) && toolCalls.length > 0) || (typeof functionCall === 'object' && functionCall !== null)
  );
}

/** The first choice of a completion or a chunk: the one with index 0, or the first listed. */
function firstChoice(choices: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(choices)) return undefined;
  const first = choices.find((choice) => (choice as { index?: unknown })?.index === 0) ?? choices[0];
  return typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : undefined;
}

/**
 * The assistant's text of a (non-streamed) chat completion: its first choice's message content, or ''.
 * A reply that calls tools is '' as well, text beside the call included ("let me look"): it is a step
 * of a tool loop, and the exchange is the client's later request that ends the loop (ADR 18).
 */
export function completionText(completion: unknown): string {
  if (typeof completion !== 'object' || completion === null) return '';
  const first = firstChoice((completion as { choices?: unknown }).choices);
  const message = first?.message;
  if (typeof message !== 'object' || message === null) return '';
  if (toolFinishReasons.has(String(first?.finish_reason)) || callsTools(message)) return '';
  return contentText((message as { content?: unknown }).content);
}

/** The longest line, or event, of a stream the collector reads; one longer leaves the reply unrecorded. */
const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * Reads a chat completion stream's server-sent events as they pass (`push` each chunk of bytes), and
 * collects the first choice's `delta.content`. Lines end with LF, CRLF or CR (as the event-stream format has
 * them); events are split on blank lines; a `data:` line holding `[DONE]` marks the end; lines that are not JSON
 * are ignored. It holds a bounded amount whatever the stream sends: the text's start and end as a message keeps them
 * (`fitMessage`), and one line (its line end aside) and one event's data of at most `MAX_EVENT_CHARS` each (a longer
 * one makes the reply incomplete). How the bytes are split into chunks changes none of this, and each character is
 * looked at a bounded number of times however small the chunks.
 */
export interface StreamCollector {
  push(chunk: Uint8Array): void;
  /** The text collected so far as a message keeps it (`fitMessage`; call after the stream ended). */
  text(): string;
  /** Whether a `data: [DONE]` event came. */
  done(): boolean;
  /**
   * Whether the stream holds a whole final reply (call after the stream ended): the first choice got a
   * finish reason (or `[DONE]` came), it asked for no tool, and no `error` event came.
   */
  complete(): boolean;
}

export function createStreamCollector(): StreamCollector {
  const decoder = new TextDecoder();
  /** The pieces of the line not ended yet, and how long it is so far. */
  let open: string[] = [];
  let openChars = 0;
  /** The last chunk ended with CR: an LF that starts the next one ends the same line. */
  let afterCR = false;
  let data: string[] = [];
  let dataChars = 0;
  let text = '';
  /** Characters dropped from the middle of `text` once it grew past what a message keeps of it. */
  let leftOut = 0;
  let finished = false;
  let finishReason: string | null = null;
  let toolCalls = false;
  let failed = false;

  const dispatch = () => {
    if (data.length === 0) return;
    const payload = data.join('\n');
    data = [];
    dataChars = 0;
    if (payload.trim() === '[DONE]') {
      finished = true;
      return;
    }
    let event: unknown;
    try {
      event = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof event !== 'object' || event === null) return;
    // OpenAI reports a failure in the middle of a stream as an event with an `error` field.
    if ((event as { error?: unknown }).error != null) failed = true;
    const choices = (event as { choices?: unknown }).choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      const index = (choice as { index?: unknown })?.index;
      if (index !== 0 && index !== undefined) continue;
      const delta = (choice as { delta?: { content?: unknown } })?.delta;
      if (typeof delta?.content === 'string') append(delta.content);
      if (callsTools(delta)) toolCalls = true;
      const reason = (choice as { finish_reason?: unknown }).finish_reason;
      if (typeof reason === 'string') finishReason = reason;
    }
  };

  /** Keeps of the text what `fitMessage` keeps, with room to spare: its start, and a tail trimmed now and then. */
  const append = (delta: string) => {
    text += delta;
    if (text.length <= 4 * MAX_MESSAGE_CHARS) return;
    const start = clipChars(text, MAX_MESSAGE_CHARS);
    const end = clipChars(text, MAX_MESSAGE_CHARS, 'end');
    leftOut += text.length - start.length - end.length;
    text = start + end;
  };

  const addData = (line: string) => {
    const value = line.slice(line.startsWith('data: ') ? 6 : 5);
    dataChars += value.length;
    if (dataChars > MAX_EVENT_CHARS) {
      failed = true;
      data = [];
      return;
    }
    data.push(value);
  };

  /** One line of the stream, its line end left out. */
  const line = (value: string) => {
    if (value.length > MAX_EVENT_CHARS) failed = true;
    else if (value === '') dispatch();
    else if (value.startsWith('data:')) addData(value);
  };

  /** Reads the lines a decoded chunk ends, keeping the start of the one it leaves open. */
  const read = (chunk: string) => {
    let from = afterCR && chunk.startsWith('\n') ? 1 : 0;
    afterCR = false;
    const ends = /\r\n?|\n/g;
    ends.lastIndex = from;
    for (let end = ends.exec(chunk); end !== null; end = ends.exec(chunk)) {
      if (failed) return;
      line(open.join('') + chunk.slice(from, end.index));
      open = [];
      openChars = 0;
      from = ends.lastIndex;
      afterCR = end[0] === '\r' && from === chunk.length;
    }
    if (from === chunk.length) return;
    open.push(chunk.slice(from));
    openChars += chunk.length - from;
    // The line is longer than any kept before it ends: the reply is incomplete whatever follows.
    if (openChars > MAX_EVENT_CHARS) failed = true;
  };

  const flush = () => {
    if (!failed) read(decoder.decode());
    if (!failed && openChars > 0) line(open.join(''));
    open = [];
    openChars = 0;
    if (!failed) dispatch();
  };

  return {
    push(chunk) {
      // A reply already incomplete is never recorded: the rest of the stream is relayed but not read.
      if (failed) return;
      const decoded = decoder.decode(chunk, { stream: true });
      if (decoded !== '') read(decoded);
    },
    text() {
      flush();
      return fitMessage(text, leftOut);
    },
    done: () => finished,
    complete() {
      flush();
      const ended = finishReason !== null || finished;
      return ended && !failed && !toolCalls && !toolFinishReasons.has(finishReason ?? '');
    },
  };
}
