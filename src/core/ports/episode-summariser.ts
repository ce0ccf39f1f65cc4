import { z } from 'zod';
import { ContentSchema } from '../schemas.js';

/** Longest episode summary accepted, in characters: one or two sentences. */
export const MAX_EPISODE_SUMMARY_CHARS = 600;

/** One message of an episode window, with its speaker already resolved to a display name. */
export interface EpisodeMessage {
  id: number;
  /** The speaker's display name (else their id): summaries attribute by name, never "the user". */
  speaker: string;
  role: 'user' | 'assistant';
  content: string;
  /** ISO 8601. */
  createdAt: string;
}

/** What a summariser is given: one channel's window of at least 4 messages, oldest first. */
export interface EpisodeInput {
  channelId: string;
  messages: readonly EpisodeMessage[];
}

/** What a summariser returns (a chat model's JSON output is validated against this). */
export const EpisodeSummarySchema = z.object({
  /** One or two sentences about what happened in the window, naming who said what. */
  summary: ContentSchema.max(
    MAX_EPISODE_SUMMARY_CHARS,
    `summary is longer than ${MAX_EPISODE_SUMMARY_CHARS} characters`,
  ),
});

export type EpisodeSummary = z.output<typeof EpisodeSummarySchema>;

/**
 * Turns a window of messages into the content of one `episode` memory. The offline summariser
 * (extractive, no model) is the default; a chat-model summariser implements the same interface.
 */
export interface EpisodeSummariser {
  /** e.g. `offline` or `chat:ollama:llama3.2`. */
  readonly id: string;
  summarise(input: EpisodeInput, options?: { signal?: AbortSignal }): Promise<EpisodeSummary>;
}
