import {
  type EpisodeInput,
  type EpisodeSummariser,
  EpisodeSummarySchema,
  MAX_EPISODE_SUMMARY_CHARS,
} from '../../core/ports/episode-summariser.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { completeStructured } from './chat-structured-output.js';

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

/** An EpisodeSummariser backed by a chat model and structured output; MODEL_FAILED reaches the caller. */
export function createChatEpisodeSummariser(chat: ChatModel): EpisodeSummariser {
  return {
    id: `chat:${chat.modelId}`,
    summarise: (input, options = {}) =>
      completeStructured(
        chat,
        { schema: EpisodeSummarySchema, name: 'episode', messages: episodeSummaryMessages(input) },
        options,
      ),
  };
}
