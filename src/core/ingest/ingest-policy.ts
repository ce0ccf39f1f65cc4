import { z } from 'zod';

const whole = (fallback: number, name: string, min: number, max: number) =>
  z
    .number({ error: `${name} must be a whole number` })
    .int(`${name} must be a whole number`)
    .min(min, `${name} must be at least ${min}`)
    .max(max, `${name} must be at most ${max}`)
    .default(fallback);

/** Most turns the turn memory keeps for a channel; older ones are never returned. */
export const MAX_TURNS = 50;

/**
 * A message of this many characters or fewer, leading and trailing spaces aside ("Thanks!", "ok see you
 * soon"), carries no durable fact: the offline extractor finds none in it, unless it says who the
 * speaker is ("I live in Oslo", "I work at Acme"), names what they like or use ("I use Vim") or states a value
 * they have ("My manager is Dana"), and, with no reply, it is not stored as a turn of its own.
 */
export const MAX_SHORT_MESSAGE_CHARS = 20;

/**
 * When a topic's conversation is extracted on its own (into session memories, source
 * `conversation`). Counted over the topic's user messages not yet extracted ("pending"), with
 * times taken from the messages themselves, so an imported history triggers the same way:
 *
 * - count: `userMessages` pending user messages (default 10), or
 * - elapsed time: at least `minUserMessages` pending (default 3) and `elapsedMinutes` (default 30)
 *   between the first pending message and the newest one, or
 * - density: at least `burstUserMessages` pending (default 5) sent within `burstMinutes` (default 5),
 *   a lively exchange worth capturing before it scrolls away.
 *
 * The rule is checked after each user message of the topic is processed by the extraction worker. A
 * topic of a project that is not managed (a work session the scoped REST design leaves alone) is
 * extracted only when `extract(topicId)` is called.
 */
export const ConversationTriggerSchema = z.strictObject({
  /** Off: topics are extracted only when `extract(topicId)` is called. */
  enabled: z.boolean({ error: 'enabled must be true or false' }).default(true),
  userMessages: whole(10, 'userMessages', 1, 10_000),
  minUserMessages: whole(3, 'minUserMessages', 1, 10_000),
  elapsedMinutes: whole(30, 'elapsedMinutes', 1, 525_600),
  burstUserMessages: whole(5, 'burstUserMessages', 2, 10_000),
  burstMinutes: whole(5, 'burstMinutes', 1, 1_440),
});

export type ConversationTrigger = z.output<typeof ConversationTriggerSchema>;

/**
 * User messages that are skipped entirely (the salience design: "ok thanks", "/help"): they stay in the
 * message log, so `turns()` shows them, but give no memory of any kind: no extracted fact (channel,
 * conversation or work extraction), no exchange memory even with an assistant reply, and a chat command
 * in them is not run. Both rules are off by default.
 */
export const SkipRuleSchema = z.strictObject({
  /** A user message of at most this many characters, leading and trailing spaces aside, is skipped; 0 turns this off. */
  maxChars: whole(0, 'skip.maxChars', 0, 10_000),
  /** A user message starting with `/` (spaces before it aside) is skipped. */
  slashPrefixed: z.boolean({ error: 'skip.slashPrefixed must be true or false' }).default(false),
});

export type SkipRule = z.output<typeof SkipRuleSchema>;

/** Whether a user message with this content is skipped entirely under `rule` (see `SkipRuleSchema`). */
export function isSkippedMessage(content: string, rule: SkipRule): boolean {
  const trimmed = content.trim();
  return (rule.maxChars > 0 && trimmed.length <= rule.maxChars) || (rule.slashPrefixed && trimmed.startsWith('/'));
}

/** How messages become memories: extraction, exchange chunks, triggers and turn memory. */
export const IngestPolicySchema = z
  .strictObject({
    /** Extract facts from every user message in the background (the extraction worker). */
    extraction: z.boolean({ error: 'extraction must be true or false' }).default(true),
    /** Also store each exchange as episodic chunks embedded from user message and reply together. */
    exchangeMemories: z.boolean({ error: 'exchangeMemories must be true or false' }).default(true),
    /** The importance (0..1) of exchange memories. */
    exchangeImportance: z
      .number({ error: 'exchangeImportance must be a number between 0 and 1' })
      .min(0, 'exchangeImportance must be between 0 and 1')
      .max(1, 'exchangeImportance must be between 0 and 1')
      .default(0.5),
    /**
     * Run `/remember <text>` and `/forget <pattern>` in user messages as chat commands. Off, they are
     * messages like any other (a message starting with `/` still gives no extracted fact or exchange memory).
     */
    chatCommands: z.boolean({ error: 'chatCommands must be true or false' }).default(true),
    /** User messages skipped entirely: kept in the log, no memory of any kind (default: none). */
    skip: SkipRuleSchema.prefault({}),
    /** Words per exchange chunk. */
    chunkWords: whole(300, 'chunkWords', 10, 5_000),
    /** Words each exchange chunk repeats from the one before. */
    chunkOverlapWords: whole(50, 'chunkOverlapWords', 0, 4_999),
    /** Jaccard word overlap at or above which a new fact updates a memory instead of adding one. */
    similarityThreshold: z
      .number({ error: 'similarityThreshold must be a number between 0 and 1' })
      .min(0, 'similarityThreshold must be between 0 and 1')
      .max(1, 'similarityThreshold must be between 0 and 1')
      .default(0.35),
    /** Related memories (found by full-text search) shown to the extractor and compared with its facts. */
    relatedMemories: whole(10, 'relatedMemories', 0, 100),
    /** Turns `turns()` returns when not told how many. */
    turns: whole(10, 'turns', 1, MAX_TURNS),
    /** The automatic conversation-extraction rule for topics. */
    conversation: ConversationTriggerSchema.prefault({}),
    /** A work session (a topic of a managed project) is extracted after every this many user messages. */
    workEveryUserMessages: whole(10, 'workEveryUserMessages', 1, 10_000),
    /**
     * Seconds an extraction lease lasts unrenewed: how long another process waits before it takes over
     * a channel (or topic) whose extracting process died. A live holder renews it every third of that.
     */
    extractionLeaseSeconds: whole(30, 'extractionLeaseSeconds', 1, 3_600),
    /**
     * User messages of a channel the extraction worker writes in one transaction at most (with the
     * watermark past the last), when the extractor runs in the process (the offline one); the
     * store's other calls wait for a batch. 1: one transaction per message.
     */
    extractionBatchMessages: whole(64, 'extractionBatchMessages', 1, 1_000),
    /**
     * Milliseconds of work after which a batch of extraction ends (one message's work aside) once another
     * call of the process waits for the store; while none waits, a batch runs to `extractionBatchMessages`.
     */
    extractionBatchMs: whole(50, 'extractionBatchMs', 1, 60_000),
  })
  .refine((policy) => policy.chunkOverlapWords < policy.chunkWords, {
    message: 'chunkOverlapWords must be smaller than chunkWords',
    path: ['chunkOverlapWords'],
  });

export type IngestPolicy = z.output<typeof IngestPolicySchema>;

/** What the conversation trigger looks at: a topic's pending user messages, oldest first, as epoch milliseconds. */
export interface PendingConversation {
  userMessageTimes: readonly number[];
}

/** Which clause of the conversation trigger fired, or null when extraction is not due yet. */
export function conversationTriggerReason(
  pending: PendingConversation,
  rule: ConversationTrigger,
): 'count' | 'elapsed' | 'density' | null {
  const times = pending.userMessageTimes;
  const count = times.length;
  if (!rule.enabled || count === 0) return null;
  if (count >= rule.userMessages) return 'count';
  const first = times[0] ?? 0;
  const last = times[count - 1] ?? 0;
  const minute = 60_000;
  if (count >= rule.minUserMessages && last - first >= rule.elapsedMinutes * minute) return 'elapsed';
  if (count >= rule.burstUserMessages) {
    const windowStart = last - rule.burstMinutes * minute;
    const inBurst = times.filter((time) => time >= windowStart).length;
    if (inBurst >= rule.burstUserMessages) return 'density';
  }
  return null;
}
