import { z } from 'zod';
import { CategorySchema, ContentSchema, ImportanceSchema } from '../schemas.js';

/** One durable fact an extractor found in an exchange, attributed to the speaker by name. */
export const ExtractedFactSchema = z.object({
  content: ContentSchema,
  category: CategorySchema.default('fact'),
  importance: ImportanceSchema.default(0.5),
  /** About the speaker -> personal; about the room or team -> room; general or technical -> global. */
  scope: z.enum(['personal', 'room', 'global']).default('personal'),
});

/** What an extractor returns: a JSON array of facts (a model's output is validated against this). */
export const ExtractedFactsSchema = z.array(ExtractedFactSchema).max(20);

export type ExtractedFact = z.output<typeof ExtractedFactSchema>;

/** What an extractor is given: one exchange, who said it, and what is already remembered about it. */
export interface ExtractionInput {
  speaker: { userId: string; displayName: string };
  channelId: string;
  /** The user message's id in the log, to name it in a warning. */
  messageId?: number;
  userMessage: string;
  /** The assistant's reply, when the message was part of an exchange (never a person's answer to it). */
  assistantReply: string | null;
  /** When the user message was sent (ISO 8601), so relative times ("yesterday") can be dated. */
  createdAt?: string;
  /** Existing memories of the speaker related to the exchange, so the extractor can avoid repeats. */
  related: ReadonlyArray<{ id: number; content: string }>;
}

/**
 * Finds durable facts in an exchange. The offline extractor (pattern signals, no model) is the
 * default; a chat-model extractor implements the same interface.
 */
export interface FactExtractor {
  /** e.g. `offline` or `chat:ollama:llama3.2`. */
  readonly id: string;
  /**
   * True for an extractor that answers within the process, with no I/O (the offline one): extraction
   * may then write several messages in one transaction, during which the store's other calls wait.
   * Left out: one message per transaction (a model call never holds the store).
   */
  readonly inProcess?: boolean;
  /**
   * True for an extractor whose `related` memories only keep facts out of its answer (the offline one
   * leaves out a fact a related memory already says): asked without them, it finds no fact only when it
   * would find none with them, and it answers the same input the same way. Extraction then asks first
   * without related memories and searches for them (and asks again with them, when it found some) only
   * when that answer has facts, so a message that states nothing costs no full-text search. Left out:
   * the related memories are always searched first.
   */
  readonly relatedOnlyRemoves?: boolean;
  /**
   * For an extractor whose related memories only remove facts: the answer `extract` gives an input with
   * `related`, from the `facts` it gave the same input without them (no second run of its rules), or
   * null when it cannot tell from them (extraction then asks `extract` again). Left out: asked again. Its
   * answer is checked as `extract`'s is; one that throws or is not valid is asked again too.
   */
  withoutRelated?(
    facts: readonly ExtractedFact[],
    related: ReadonlyArray<{ id: number; content: string }>,
  ): ExtractedFact[] | null;
  extract(input: ExtractionInput, options?: { signal?: AbortSignal }): Promise<ExtractedFact[]>;
}
