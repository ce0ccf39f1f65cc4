/** Who wrote a message: a person, the agent, or the system (chat commands' answers, notices). */
export type MessageRole = 'user' | 'assistant' | 'system';

/** One entry of the append-only message log, as storage returns it. */
export interface Message {
  id: number;
  channelId: string;
  /** The user id of a person, or the agent's id for an assistant message. */
  senderId: string;
  role: MessageRole;
  content: string;
  topicId: string | null;
  /** The message this one answers (an assistant reply points at the user message of its exchange). */
  replyTo: number | null;
  /** ISO-8601. */
  createdAt: string;
}

/** A message as core hands it to storage: validated, time in epoch milliseconds. */
export interface NewMessage {
  channelId: string;
  senderId: string;
  role: MessageRole;
  content: string;
  topicId: string | null;
  /** The id of an already stored message this one answers. */
  replyTo?: number | null;
  /**
   * When true, `replyTo` is the id of the message just before this one in the same `append` call
   * (how an exchange's reply points at its user message before either has an id).
   */
  repliesToPrevious?: boolean;
  createdAt: number;
}

/** The message log: append-only, full-text indexed, read by extraction, recall and maintenance. */
export interface MessageStore {
  /** Appends the messages in one transaction, in order; returns them with their ids. */
  append(messages: readonly NewMessage[]): Promise<Message[]>;
  /** The messages with these ids that exist, in the order asked. */
  get(ids: readonly number[]): Promise<Message[]>;
  /** Up to `limit` messages of a channel with an id greater than `afterMessageId` (0: from the start), oldest first. */
  listAfter(channelId: string, afterMessageId: number, limit: number): Promise<Message[]>;
  /** Up to `limit` messages of a topic with an id greater than `afterMessageId`, oldest first. */
  listTopicAfter(topicId: string, afterMessageId: number, limit: number): Promise<Message[]>;
  /** The last `count` messages of a channel (every role), oldest first. */
  recent(channelId: string, count: number): Promise<Message[]>;
  /** The last `count` user messages of a channel, oldest first (recall's conversation-aware mode). */
  recentUserMessages(channelId: string, count: number): Promise<Message[]>;
  /** How many messages of a channel have an id greater than `afterMessageId`, only of `role` when given. */
  countAfter(channelId: string, afterMessageId: number, role?: MessageRole): Promise<number>;
  /** How many messages of a topic have an id greater than `afterMessageId`, only of `role` when given. */
  countTopicAfter(topicId: string, afterMessageId: number, role?: MessageRole): Promise<number>;
  /** The id of the newest message of a channel, or 0 when it has none. */
  latestId(channelId: string): Promise<number>;
  /** Every channel that has at least one message, sorted. */
  channelIds(): Promise<string[]>;
  /** Full-text match of any of `terms` (quoted by the adapter) in one channel's messages, best first. */
  searchText(channelId: string, terms: readonly string[], limit: number): Promise<Message[]>;
}
