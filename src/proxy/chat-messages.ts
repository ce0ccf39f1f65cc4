/**
 * The parts of an OpenAI chat completion request and reply the proxy reads or changes; everything
 * else in them passes through untouched.
 */

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

/** The assistant's text of a (non-streamed) chat completion: its first choice's message content, or ''. */
export function completionText(completion: unknown): string {
  if (typeof completion !== 'object' || completion === null) return '';
  const choices = (completion as { choices?: unknown }).choices;
  if (!Array.isArray(choices)) return '';
  const first = choices.find((choice) => (choice as { index?: unknown })?.index === 0) ?? choices[0];
  const message = (first as { message?: unknown } | undefined)?.message;
  if (typeof message !== 'object' || message === null) return '';
  return contentText((message as { content?: unknown }).content);
}

/**
 * Reads a chat completion stream's server-sent events as they pass (`push` each chunk of bytes), and
 * collects the first choice's `delta.content`. Events are split on blank lines; a `data:` line holding
 * `[DONE]` marks the end; lines that are not JSON are ignored.
 */
export interface StreamCollector {
  push(chunk: Uint8Array): void;
  /** The text collected so far (call after the stream ended). */
  text(): string;
  /** Whether a `data: [DONE]` event came. */
  done(): boolean;
}

export function createStreamCollector(): StreamCollector {
  const decoder = new TextDecoder();
  let pending = '';
  let data: string[] = [];
  let text = '';
  let finished = false;

  const dispatch = () => {
    if (data.length === 0) return;
    const payload = data.join('\n');
    data = [];
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
    const choices = (event as { choices?: unknown } | null)?.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      const index = (choice as { index?: unknown })?.index;
      if (index !== 0 && index !== undefined) continue;
      const content = (choice as { delta?: { content?: unknown } })?.delta?.content;
      if (typeof content === 'string') text += content;
    }
  };

  return {
    push(chunk) {
      pending += decoder.decode(chunk, { stream: true });
      for (;;) {
        const end = pending.indexOf('\n');
        if (end < 0) break;
        const line = pending.slice(0, end).replace(/\r$/, '');
        pending = pending.slice(end + 1);
        if (line === '') dispatch();
        else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      }
    },
    text() {
      if (pending.startsWith('data:')) data.push(pending.slice(pending.startsWith('data: ') ? 6 : 5));
      pending = '';
      dispatch();
      return text;
    },
    done: () => finished,
  };
}
