import { z } from 'zod';
import type { Logger } from '../../core/engine-context.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import {
  type ExtractedFact,
  ExtractedFactsSchema,
  type ExtractionInput,
  type FactExtractor,
} from '../../core/ports/fact-extractor.js';
import { withLabel } from '../../core/speaker-label.js';
import type { ChatMessage, ChatModel } from '../chat-model.js';
import { askStructured, unusableReplyMessage } from './chat-structured-output.js';

/** What the model is asked to return: an object (OpenAI's structured output wants one at the root). */
const ExtractionReplySchema = z.object({ facts: ExtractedFactsSchema });

/** Options of `createChatFactExtractor`. */
export interface ChatFactExtractorOptions {
  /** Most existing memories shown to the model for deduplication; 20 by default. */
  maxRelated?: number;
  /** Where a message whose replies could not be used is reported; stderr by default. */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * The fact extraction instructions. Facts are written about the speaker by name, never "the user";
 * existing memories are listed so the model does not repeat them; each fact gets a scope.
 */
export const FACT_EXTRACTION_PROMPT = `You pick out durable memories from one message of a conversation, for an assistant that will talk with these people again.

Rules:
- Write each fact as one short, self-contained sentence about the speaker, using the speaker's name: "Oz prefers dark mode", "Oz's daughter is called Mia". Never write "the user", "I", "me" or "you".
- Keep only what will still matter in a later conversation: preferences, personal facts, relationships, plans and dates, decisions, skills, recurring problems. Skip greetings, thanks, small talk, questions without an answer, and the assistant's own suggestions unless the speaker accepted them.
- Do not repeat a fact listed under "Already remembered". If the message changes one of them, write the new version as a new fact.
- Turn relative times ("yesterday", "next Friday") into dates, counting from when the message was sent.
- category: "preference" for likes and dislikes, "event" for something that happened or is planned at a time, "fact" for other facts about the speaker, "general" for anything else.
- importance: 0.9 for things that must not be forgotten (health, names of family, hard constraints), 0.5 for ordinary facts, 0.2 for trivia.
- scope: "personal" for facts about the speaker, "room" for facts about this channel, team or its shared work (anything said with "we", "our" or "us", even when it is technical), "global" for general or technical knowledge that is true for everyone.
- Reply with JSON only: {"facts": [{"content": "...", "category": "...", "importance": 0.5, "scope": "personal"}]}. Reply {"facts": []} when nothing is worth keeping.`;

/** The messages sent to the model for one exchange. */
export function factExtractionMessages(input: ExtractionInput, maxRelated = 20): ChatMessage[] {
  const name = input.speaker.displayName;
  const related = input.related.slice(0, maxRelated);
  const parts = [
    `Speaker: ${name}`,
    `Channel: ${input.channelId}`,
    ...(input.createdAt ? [`Sent at: ${input.createdAt}`] : []),
    '',
    `Already remembered about ${name}:`,
    ...(related.length ? related.map((memory) => `- ${memory.content}`) : ['(nothing yet)']),
    '',
    `${name} said:`,
    quote(input.userMessage),
  ];
  if (input.assistantReply !== null) parts.push('', 'The assistant replied:', quote(input.assistantReply));
  return [
    { role: 'system', content: FACT_EXTRACTION_PROMPT },
    { role: 'user', content: parts.join('\n') },
  ];
}

function quote(text: string): string {
  return `"""\n${text.replaceAll('"""', '" " "')}\n"""`;
}

/**
 * A FactExtractor backed by a chat model and structured output. It keeps facts attributed by name
 * (a stray "the user" is replaced by the speaker's name) and drops facts that repeat an existing
 * memory word for word. Failures of the model (MODEL_FAILED: unreachable, an error status) reach the
 * caller, which keeps the message for a retry. Replies that cannot be used even after the retry
 * `completeStructured` asks for (not JSON, more than 20 facts, a fact too long) give no facts, with a
 * warning: the model answers the same message the same way (temperature 0), and the channel would
 * otherwise stop at that message for good. So does a message the provider refuses (400, 413, 422: longer than the
 * model's context, say; `refusesInput`). From the third message in a row whose replies could not be used (or which
 * were refused), the model is taken not to work at all: MODEL_FAILED, and the message waits.
 */
export function createChatFactExtractor(chat: ChatModel, options: ChatFactExtractorOptions = {}): FactExtractor {
  const logger = options.logger ?? { warn: (text: string) => process.stderr.write(`mneme: ${text}\n`) };
  // Messages in a row whose replies could not be used: from the third, the model is taken not to follow the schema
  // at all, and the message fails (waits for a model that works) rather than losing its facts too.
  let unusableInARow = 0;
  return {
    id: `chat:${chat.modelId}`,
    async extract(input, extractOptions = {}) {
      const request = {
        schema: ExtractionReplySchema,
        name: 'facts',
        messages: factExtractionMessages(input, options.maxRelated),
      };
      const reading = await askStructured(chat, request, extractOptions);
      if (!reading.ok && ++unusableInARow >= UNUSABLE_IN_A_ROW) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `${unusableReplyMessage(chat, request, reading)}, for the ${ordinal(unusableInARow)} message in a row: ${reading.refused ? 'it refuses every message (check its settings: the URL, the model, what its server accepts)' : 'it does not seem to follow the JSON schema'}; choose another chat model (MNEME_CHAT), and extraction goes on from this message`,
        );
      }
      if (!reading.ok) {
        const sent = input.messageId === undefined ? '' : ` message ${input.messageId} of`;
        logger.warn(
          `no facts kept from${sent} ${input.speaker.displayName} in ${input.channelId}: ${unusableReplyMessage(chat, request, reading)}`,
        );
        return [];
      }
      unusableInARow = 0;
      const reply = reading.value;
      const known = new Set(input.related.map((memory) => normalized(memory.content)));
      const seen = new Set<string>();
      return reply.facts.flatMap((fact): ExtractedFact[] => {
        const content = labelled(attributed(fact.content, input.speaker.displayName), input.speaker);
        const key = normalized(content);
        if (known.has(key) || seen.has(key)) return [];
        seen.add(key);
        return [{ ...fact, content }];
      });
    },
  };
}

/** Messages in a row whose replies could not be used after which the chat fact extractor fails instead. */
const UNUSABLE_IN_A_ROW = 3;

function ordinal(count: number): string {
  return count === 3 ? 'third' : `${count}th`;
}

/**
 * The speaker's name in `content` followed by the id of their label where the model left it out: a speaker others
 * can be taken for is labelled `Bob (eve)` (ADR 40), and a model reads the bracket as a note ("Bob approves ..."),
 * which would keep what Eve said as a fact about Bob. Words the name is only part of ("Bobby") are left alone.
 */
function labelled(content: string, speaker: { userId: string; displayName: string }): string {
  const suffix = ` (${speaker.userId})`;
  if (!speaker.displayName.endsWith(suffix)) return content;
  return withLabel(content, speaker.displayName.slice(0, -suffix.length), speaker.userId);
}

/** Replaces "the user" (any case) with the speaker's name. */
function attributed(content: string, name: string): string {
  return content.replace(/\bthe user\b/gi, name).replace(/^user\b/i, name);
}

function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}
