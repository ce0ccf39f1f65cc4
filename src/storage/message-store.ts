import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Memory } from '../core/types.js';
import type { SpaceKind } from './membership-store.js';
import type { NewMemory, WriteContext } from './memory-store.js';

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
  /** A chat platform's id of the message (its event id), unique per channel and sender, or null. */
  externalId: string | null;
  /** ISO-8601. */
  createdAt: string;
}

/** A message `append` was given, as stored: a duplicate is the message stored before, not a new row. */
export interface AppendedMessage extends Message {
  /** True when the message was already stored (same channel and external id) and nothing was appended for it. */
  duplicate: boolean;
}

/** A message as `append` returns it: with what its `command` wrote, when it had one and was appended (not a duplicate). */
export interface StoredMessage extends AppendedMessage {
  written?: CommandWritten;
}

/**
 * What a message's chat command writes in the transaction of its append (ADR 30), so that a message and its command
 * are stored together or not at all: `remember`, a memory whose source is the message (its id filled in there);
 * `forget`, the archive of every active memory of `userId` among `owners` whose content `matches` says yes to, as the
 * transaction finds them (so also those the messages before it in the append remember).
 */
export type CommandWrite =
  | { remember: Omit<NewMemory, 'sourceMessageIds'>; context: WriteContext }
  | {
      forget: { owners: readonly string[]; userId: string; matches(content: string): boolean };
      context: WriteContext;
    };

/** What a message's chat command wrote in its append. */
export interface CommandWritten {
  remembered: Memory | null;
  forgotten: Memory[];
}

/** How far `mneme ingest` got in one file: the last line committed, and a hash of the lines up to it. */
export interface IngestFileProgress {
  /** The file's resolved path. */
  path: string;
  /** The number of the last line whose messages are committed (1-based). */
  line: number;
  /** SHA-256 (hex) of lines 1..line, each followed by a newline: tells a changed file. */
  prefixSha256: string;
  /**
   * When writing: the line the file's record must hold before this write (0: no record). A record
   * elsewhere means another run is ingesting the file: the append is refused (CONFLICT, `issues` on
   * `file`) and nothing of it is written. Left out, the record is overwritten whatever it holds.
   */
  after?: number | undefined;
}

/** The CONFLICT an append with a file's progress gets when the file's record moved under its run. */
export function fileProgressMoved(path: string, expected: number, found: number): MnemeError {
  const message = `the ingest progress of ${path} is at line ${found}, not ${expected} as this run expected: another run is ingesting it`;
  return new MnemeError(ErrorCode.Conflict, `${message}; nothing of this batch was written`, {
    issues: [{ path: 'file', message }],
  });
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
  /** A chat platform's id of the message, unique per channel and sender; null or left out: none. */
  externalId?: string | null;
  createdAt: number;
  /**
   * Spaces the sender becomes a member of (if not one yet), in the append's transaction, when this
   * message is appended; nothing when it is a duplicate (its first append did that).
   */
  joins?: readonly SpaceJoin[];
  /** What its chat command writes, in the append's transaction, when the message is appended (not a duplicate). */
  command?: CommandWrite;
}

/** A membership an appended message brings: its sender joins the space at `at` (epoch milliseconds). */
export interface SpaceJoin {
  kind: SpaceKind;
  id: string;
  at: number;
  /**
   * The sender starts the space with this message and may not join it once it exists (`joinsOnlyNewSpaces`): when
   * the space exists as the append's transaction begins (another append started it, an administrator declared it,
   * since the caller looked) and the sender is not a member of it, the append is refused (`spaceStartedMeanwhile`)
   * and writes nothing.
   */
  onlyIfNew?: boolean;
}

/** What an append writes besides its messages, in their transaction. */
export interface AppendOptions {
  file?: IngestFileProgress & { at: number };
  /** Users whose display name the append sets (a sender's `senderName` that differs from the stored one). */
  names?: ReadonlyArray<{ id: string; displayName: string }>;
  /** Topics the messages name, created when they do not exist. */
  topics?: readonly string[];
  /** When `names` and `topics` are written (epoch milliseconds). */
  at?: number;
  /**
   * For each membership the append writes (a join whose sender is not a member of the space when the transaction
   * writes it), a row of `maintenance_state` written in the same transaction, as `mark` gives it (a row already
   * there is kept), and pushed to `written`: an audience change's mark (ADR 5), durable with the membership.
   */
  joinMarks?: {
    mark(join: SpaceJoin & { userId: string }): JoinMark;
    written: JoinMark[];
  };
  /**
   * The number of purges (`MessageStore.purges`) when what the messages' commands write was prepared: when a purge
   * has run since, the append is refused (STORE_BUSY, send it again) and writes nothing, since a `/remember`
   * prepared before its sender's purge would otherwise store the purged sender's words after it.
   */
  purges?: number;
  /** The API key (id) the messages were sent with: the append is refused (`keyGone`) unless it is still active. */
  keyId?: number;
}

/** The FORBIDDEN an append gets when the key its messages were sent with was revoked (or its user purged) meanwhile. */
export function keyGone(): MnemeError {
  return new MnemeError(
    ErrorCode.Forbidden,
    'the API key these messages were sent with was revoked (or its user purged) while they were sent; nothing was written',
  );
}

/** The FORBIDDEN an append gets when a space its sender was to start exists by then, without them (`SpaceJoin.onlyIfNew`). */
export function spaceStartedMeanwhile(join: SpaceJoin, userId: string): MnemeError {
  return new MnemeError(
    ErrorCode.Forbidden,
    `recording a message: user ${userId} is not a member of ${join.kind} ${join.id}, which was started or declared while the message was sent; nothing was written; an administrator adds members`,
  );
}

/** The joins of the messages that may only start their space (`SpaceJoin.onlyIfNew`), each with its sender. */
export function joinsOnlyIfNew(messages: readonly NewMessage[]): Array<{ join: SpaceJoin; userId: string }> {
  return messages.flatMap((message) =>
    (message.joins ?? []).filter((join) => join.onlyIfNew === true).map((join) => ({ join, userId: message.senderId })),
  );
}

/** The INVALID_INPUT an append gets when the message a reply answers was deleted (purged) after it was checked. */
export function replyGone(replyTo: number): MnemeError {
  const problem = `no message ${replyTo}: it was deleted (its sender purged) while this was sent; nothing was written`;
  return new MnemeError(ErrorCode.InvalidInput, `invalid message: replyTo: ${problem}`, {
    issues: [{ path: 'replyTo', message: problem }],
  });
}

/** The STORE_BUSY an append gets when a purge ran while its commands were prepared (`AppendOptions.purges`). */
export function purgedMeanwhile(): MnemeError {
  return new MnemeError(
    ErrorCode.StoreBusy,
    "a user's data was purged while these messages' chat commands were prepared; nothing was written: send them again",
  );
}

/** A `maintenance_state` row an append writes with a membership (`AppendOptions.joinMarks`). */
export interface JoinMark {
  /** Its `channel_id` key. */
  key: string;
  task: string;
  watermark: number;
  details: Record<string, unknown>;
}

/** The message log: append-only, full-text indexed, read by extraction, recall and maintenance. */
export interface MessageStore {
  /**
   * Appends the messages in one transaction, in order; returns them with their ids. A message whose
   * channel already has one with its `externalId` (stored before, or earlier in this call) is not
   * appended: the stored one comes back with `duplicate: true`. So is a reply (`repliesToPrevious`)
   * without an external id of its own after a duplicate, when the duplicate already has a reply of the
   * same sender and role. Race-safe: of two concurrent calls with one external id, one appends it.
   * With `file`, that file's progress is written in the same transaction, and so are the `joins` of
   * the messages appended, the display names in `names` and the topics in `topics` (created when
   * missing, without project or title), at `at`, and what each appended message's `command` writes (returned as its
   * `written`): a refused append writes none of them.
   */
  append(messages: readonly NewMessage[], options?: AppendOptions): Promise<StoredMessage[]>;
  /** How many purges the database has had (`AppendOptions.purges`). */
  purges(): Promise<number>;
  /** The progress recorded for a file (by resolved path), or null when none was. */
  ingestFile(path: string): Promise<IngestFileProgress | null>;
  /** The messages with these ids that exist, in the order asked. */
  get(ids: readonly number[]): Promise<Message[]>;
  /** Up to `limit` messages of a channel with an id greater than `afterMessageId` (0: from the start), oldest first. */
  listAfter(channelId: string, afterMessageId: number, limit: number): Promise<Message[]>;
  /** Up to `limit` messages of a channel with an id less than `beforeMessageId`, the latest of them, oldest first. */
  listBefore(channelId: string, beforeMessageId: number, limit: number): Promise<Message[]>;
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
  /** Every topic that has at least one message, sorted. */
  topicIds(): Promise<string[]>;
  /** Full-text match of any of `terms` (quoted by the adapter) in one channel's messages, best first. */
  searchText(channelId: string, terms: readonly string[], limit: number): Promise<Message[]>;
}
