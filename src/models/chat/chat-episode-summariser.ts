import type { Logger } from '../../core/engine-context.js';
import {
  type EpisodeInput,
  type EpisodeSummariser,
  EpisodeSummarySchema,
  MAX_EPISODE_SUMMARY_CHARS,
} from '../../core/ports/episode-summariser.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { createOfflineEpisodeSummariser } from '../offline/offline-episode-summariser.js';
import { askStructured, unusableReplyMessage } from './chat-structured-output.js';

/** The episode summary instructions: one or two sentences, people named, nothing invented. */
export const EPISODE_SUMMARY_PROMPT = `You summarise a window of a conversation as an episode the assistant can remember later.

Rules:
- One or two sentences, at most ${MAX_EPISODE_SUMMARY_CHARS} characters, in the past tense.
- Name the people ("Oz asked about ...", "Ana decided ..."); never write "the user". Refer to the assistant as "the assistant".
- Keep what happened, what was decided and what is still open; leave out greetings and filler.
- Use only what the messages say; do not invent details.
- Reply with JSON only: {"summary": "..."}.`;

/** The messages sent to the model for one window. */
export function episodeSummaryMessages(input: EpisodeInput): ChatMessage[] {
  const lines = input.messages.map(
    (message) =>
      `[${message.createdAt}] ${message.role === 'assistant' ? 'the assistant' : message.speaker}: ${message.content}`,
  );
  return [
    { role: 'system', content: EPISODE_SUMMARY_PROMPT },
    { role: 'user', content: [`Channel: ${input.channelId}`, '', 'Messages, oldest first:', ...lines].join('\n') },
  ];
}

/** Options of `createChatEpisodeSummariser`. */
export interface ChatEpisodeSummariserOptions {
  /** Where a window whose replies could not be used is reported; stderr by default. */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * An EpisodeSummariser backed by a chat model and structured output. Failures of the model (MODEL_FAILED:
 * unreachable, an error status) reach the caller, which summarises the window again at its next run. A window whose
 * replies cannot be used even after the retry `completeStructured` asks for (not JSON, a summary too long), or which the
 * provider refuses (400, 413, 422: longer than the model's context), gets the
 * offline summariser's summary, with a warning: the model answers the same window the same way (temperature 0), and
 * the channel's episodes would otherwise stop at that window for good.
 */
export function createChatEpisodeSummariser(
  chat: ChatModel,
  options: ChatEpisodeSummariserOptions = {},
): EpisodeSummariser {
  const logger = options.logger ?? { warn: (text: string) => process.stderr.write(`mneme: ${text}\n`) };
  const offline = createOfflineEpisodeSummariser();
  return {
    id: `chat:${chat.modelId}`,
    async summarise(input, summariseOptions = {}) {
      const request = { schema: EpisodeSummarySchema, name: 'episode', messages: episodeSummaryMessages(input) };
      const reading = await askStructured(chat, request, summariseOptions);
      if (reading.ok) return reading.value;
      const first = input.messages[0]?.id;
      const last = input.messages.at(-1)?.id;
      logger.warn(
        `the window of messages ${first} to ${last} in ${input.channelId} is summarised offline: ${unusableReplyMessage(chat, request, reading)}`,
      );
      return offline.summarise(input, summariseOptions);
    },
  };
}
