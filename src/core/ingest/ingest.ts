import type {
  AppendedMessage,
  IngestFileProgress,
  JoinMark,
  Message,
  NewMessage,
  SpaceJoin,
  StoredMessage,
} from '../../storage/message-store.js';
import { audienceMark, checkMarkedSpaces, settleAudienceMarks } from '../derived-audience.js';
import type { EngineContext } from '../engine-context.js';
import { committedAs, ErrorCode, MnemeError } from '../errors.js';
import { createMembership } from '../membership.js';
import {
  type IngestExchangeInput,
  IngestExchangeInputSchema,
  IngestFileProgressSchema,
  type IngestInput,
  IngestInputSchema,
  parseInput,
  TopicIdSchema,
  type TurnsInput,
  TurnsInputSchema,
} from '../schemas.js';
import { ownerKey } from '../scope.js';
import type { Viewer } from '../types.js';
import {
  type ChatCommand,
  type ChatCommandResult,
  type CommandMessage,
  parseChatCommand,
  prepareChatCommands,
} from './chat-commands.js';
import { createExtraction, type ExtractionReport } from './extraction.js';
import type { ExtractionScheduler } from './extraction-scheduler.js';
import { isSkippedMessage } from './ingest-policy.js';

/** Most messages and exchanges one `ingestMany` call takes. */
export const MAX_INGEST_BATCH = 1_000;

/** What `ingest` and `ingestExchange` return, at once: extraction runs in the background. */
export interface IngestResult {
  /**
   * The appended messages with their ids (an exchange: the user message, then the reply); a message
   * its channel already had under its `externalId` is the stored one, with `duplicate: true`.
   */
  messages: AppendedMessage[];
  /** True when every message of the input was already stored: nothing was appended, run or scheduled. */
  duplicate: boolean;
  /**
   * False when the extraction queue was full and this job was dropped; nothing is lost: the
   * catch-up pass extracts the messages later (also after a restart).
   */
  queued: boolean;
  /**
   * What a `/remember` or `/forget` in the user message did, or null (also when the policy's
   * `chatCommands` is off or its `skip` rule skips the message).
   */
  command: ChatCommandResult | null;
}

/** The write side of the engine (the message log and every path from messages to memories). */
export interface MnemeIngest {
  /**
   * Appends one message to the channel's log and returns at once; facts are extracted in the
   * background. A user message `/remember <text>` or `/forget <pattern>` is also run as a command
   * (policy `ingest.chatCommands`, on by default), unless the `ingest.skip` rule skips the message.
   */
  ingest(input: IngestInput, options?: IngestOptions): Promise<IngestResult>;
  /** Appends a user message and the assistant's reply in one transaction and returns at once. */
  ingestExchange(input: IngestExchangeInput, options?: IngestOptions): Promise<IngestResult>;
  /**
   * Appends many messages and exchanges (an exchange is an input with `userMessage`) in one
   * transaction, in order: for importing history. Every input is validated first; when one is
   * invalid nothing is written (INVALID_INPUT names it by position). At most 1000 a call.
   */
  ingestMany(
    inputs: ReadonlyArray<IngestInput | IngestExchangeInput>,
    options?: IngestManyOptions,
  ): Promise<IngestResult[]>;
  /** How far `ingestMany`'s `file` option recorded a file (by resolved path), or null. */
  ingestProgress(path: string): Promise<IngestFileProgress | null>;
  /**
   * Conversation extraction of a topic: its messages not yet extracted become session memories
   * (source `conversation`). Also runs automatically (see `ConversationTriggerSchema`), except for a
   * topic of a project that is not managed.
   */
  extract(topicId: string): Promise<ExtractionReport & { topicId: string }>;
  /**
   * Work-session extraction: the session's messages not yet extracted become memories of its
   * project (source `work`). Runs automatically every 10 user messages; CONFLICT unless the
   * session belongs to a managed project.
   */
  extractWork(sessionId: string): Promise<ExtractionReport & { sessionId: string; projectId: string }>;
  /** The viewer of a work session: it sees global memories and those of the session's project. */
  workSessionViewer(sessionId: string): Promise<Viewer>;
  /** Turn memory: the last N messages of a channel (the policy's default, at most 50), oldest first. */
  turns(input: TurnsInput): Promise<Message[]>;
  /** Resolves once every message ingested so far has been through extraction. */
  whenIdle(): Promise<void>;
}

/** Options of `ingestMany`. */
export interface IngestOptions {
  /**
   * The caller checked, before this call, that the sender of every user message is a member of the
   * channel, topic and project it posts to (a user key's post). No membership is written with the
   * messages, so a member an administrator removes while the post is on its way stays removed (the
   * post reads as made just before the removal). Without it, an administrator's ingest makes each
   * sender a member of where it posts.
   */
  sendersAreMembers?: boolean;
  /**
   * The sender may start a channel or topic with these messages but not rejoin one (a stdio MCP session the operator
   * started for one user, ADR 13): a sender who is not a member of the channel, topic or topic's project it posts to,
   * when that space exists, is refused (FORBIDDEN, nothing appended); the sender joins only the spaces the messages
   * start. Left out, an administrator's ingest makes each sender a member of where it posts.
   */
  joinsOnlyNewSpaces?: boolean;
  /**
   * The API key (its id) the messages were sent with: the append is refused (FORBIDDEN, nothing written) when the key
   * is no longer active when it is written (revoked, or its user purged, while the post was on its way: attack22).
   */
  keyId?: number;
}

export interface IngestManyOptions extends IngestOptions {
  /**
   * A file's progress, written in the transaction of these inputs (how `mneme ingest --resume` knows
   * where to continue): the last line they came from and the SHA-256 of the file's lines up to it.
   */
  file?: IngestFileProgress;
}

/** One validated input, ready to append. */
interface PreparedInput {
  /** How errors name it: `message`, `exchange`, `message at index 3`. */
  what: string;
  messages: NewMessage[];
  topicId: string | undefined;
  sender: { id: string; name: string | undefined };
  command: ChatCommand | null;
}

/** The owner key of the memories of the space a sender joins: a channel's room, a topic's session, a project's. */
function spaceOwner(join: Pick<SpaceJoin, 'kind' | 'id'>): string {
  return join.kind === 'channel'
    ? ownerKey('room', { channelId: join.id })
    : join.kind === 'topic'
      ? ownerKey('session', { topicId: join.id })
      : ownerKey('project', { projectId: join.id });
}

/** The ingest half of the engine and the `close` of its worker. */
export function createIngest(
  context: EngineContext,
): MnemeIngest & { close(): Promise<void>; settleMarks(): Promise<void> } {
  const { storage, clock } = context;
  const extraction = createExtraction(context, context.extractor ?? null);
  const scheduler: ExtractionScheduler = context.extractionScheduler?.(extraction) ?? inlineScheduler();
  const membership = createMembership(context);
  /**
   * The user messages whose append went in and whose audience check failed (the error told the caller to send them
   * again): their channels were not scheduled, which the retry, a duplicate, then does once (session 19). Of this
   * process only: the catch-up pass extracts them anyway.
   */
  const owed = new Set<number>();
  /**
   * The marks of this process's appends whose check failed: checked again, and deleted, after its next append and at
   * `whenIdle` (a retry without an externalId, under an HTTP Idempotency-Key, is such an append), else by `maintain`.
   */
  let unsettled: JoinMark[] = [];
  /** The check of `unsettled` in progress: a read meanwhile waits for it (and fails with it), never skips it. */
  let settling: Promise<void> | null = null;
  async function settleUnsettled(): Promise<void> {
    for (;;) {
      if (settling) {
        await settling;
        continue;
      }
      if (unsettled.length === 0) return;
      const pending = unsettled;
      unsettled = [];
      settling = settleAudienceMarks(context, pending)
        .catch((error: unknown) => {
          unsettled = [...pending, ...unsettled];
          throw error;
        })
        .finally(() => {
          settling = null;
        });
    }
  }

  /** The chat command a user message runs: none when commands are off or the message is skipped entirely. */
  function commandOf(content: string): ChatCommand | null {
    const { chatCommands, skip } = context.policy.ingest;
    return chatCommands && !isSkippedMessage(content, skip) ? parseChatCommand(content) : null;
  }

  /** No worker: extraction runs when `whenIdle()` is awaited. */
  function inlineScheduler(): ExtractionScheduler {
    const controller = new AbortController();
    return {
      schedule: () => true,
      async whenIdle() {
        for (const channelId of await extraction.pendingChannels()) {
          await extraction.processChannel(channelId, controller.signal);
        }
      },
      async close() {
        controller.abort();
      },
    };
  }

  /**
   * The sender's display name, as the append will store it. `known` holds what this append read of each
   * sender's name (null: no user, or one without a name) and the names it will write, so a sender of
   * many inputs is read once an append (ADR 19, session 12); `renames` collects the names that differ
   * from the stored ones, which the append writes in the transaction of its messages (a refused append
   * renames no one). A rename by another caller between two of its inputs reads as made just after them.
   */
  async function nameOf(
    userId: string,
    displayName: string | undefined,
    known: Map<string, string | null>,
    renames: Map<string, string>,
  ): Promise<string> {
    let current = known.get(userId);
    if (current === undefined) {
      current = (await storage.directory.getUser(userId))?.displayName ?? null;
      known.set(userId, current);
    }
    if (displayName !== undefined && current !== displayName) {
      renames.set(userId, displayName);
      known.set(userId, displayName);
      return displayName;
    }
    return current ?? userId;
  }

  /** INVALID_INPUT unless every `replyTo` names a stored message of the same channel; checked before anything is written. */
  async function checkReplies(inputs: readonly PreparedInput[]): Promise<void> {
    const wanted = inputs.flatMap((input) => input.messages.flatMap((message) => message.replyTo ?? []));
    if (wanted.length === 0) return;
    const stored = new Map((await storage.messages.get([...new Set(wanted)])).map((message) => [message.id, message]));
    for (const input of inputs) {
      for (const message of input.messages) {
        if (message.replyTo == null) continue;
        const answered = stored.get(message.replyTo);
        const problem = !answered
          ? `no message ${message.replyTo}`
          : answered.channelId !== message.channelId
            ? `message ${message.replyTo} is not in channel ${message.channelId}; a reply answers a message of its own channel`
            : null;
        if (problem) {
          throw new MnemeError(ErrorCode.InvalidInput, `invalid ${input.what}: replyTo: ${problem}`, {
            issues: [{ path: 'replyTo', message: problem }],
          });
        }
      }
    }
  }

  /**
   * Appends the messages of every input in one transaction, with what their chat commands write (ADR 30), then
   * schedules extraction.
   */
  async function append(
    inputs: readonly PreparedInput[],
    options: IngestOptions & { file?: IngestFileProgress | undefined } = {},
  ): Promise<IngestResult[]> {
    const { file } = options;
    // A purge while the commands are prepared refuses the append (its sender's words would be stored after it).
    const purges = inputs.some((input) => input.command) ? await storage.messages.purges() : undefined;
    await checkReplies(inputs);
    const names = new Map<string, string>();
    const known = new Map<string, string | null>();
    const renames = new Map<string, string>();
    const topics = new Set<string>();
    for (const input of inputs) {
      names.set(input.sender.id, await nameOf(input.sender.id, input.sender.name, known, renames));
      if (input.topicId !== undefined) topics.add(input.topicId);
    }
    // The senders' new names and memberships and the new topics are written in the append's transaction:
    // one durable commit, and nothing of them when the store refuses the append. A topic is created there
    // when missing, whatever this process saw before (a purge deletes a topic only its user spoke in).
    const messages = inputs.flatMap((input) => input.messages);
    const at = clock.now();
    const joined = options.sendersAreMembers
      ? messages
      : options.joinsOnlyNewSpaces
        ? await membership.withJoinsOfNewSpaces(messages)
        : await membership.withJoins(messages);
    // A chat command is written with its message (a message stored without its command, or the command run again for
    // a retry, was session 21's fault): prepared now, before the append's transaction, and written in it.
    const commandMessages: CommandMessage[] = [];
    let position = 0;
    for (const input of inputs) {
      const message = joined[position];
      if (input.command && message)
        commandMessages.push({
          command: input.command,
          index: position,
          message,
          speakerName: names.get(input.sender.id) ?? input.sender.id,
        });
      position += input.messages.length;
    }
    const commands = new Map(
      (await prepareChatCommands(context, commandMessages)).map((command) => [command.index, command]),
    );
    const joining = joined.map((message, index) => {
      const write = commands.get(index)?.write;
      return write ? { ...message, command: write } : message;
    });
    // A sender who joins a channel, topic or project sees its memories: none may come from a channel the sender cannot
    // read (ADR 5, 2026-12-03; a room's may cite another channel, moved there by an earlier change). Each membership
    // the append writes is an audience change of its space: its mark is written with it, in the append's transaction
    // (one per space), and checked once the append is in (session 19: the memberships were asked before the append,
    // and a sender an administrator removed in between was added back with no check).
    const marks = new Map<string, ReturnType<typeof audienceMark>>();
    const joinMarks = {
      written: [] as Array<ReturnType<typeof audienceMark>>,
      mark(join: SpaceJoin) {
        const owner = spaceOwner(join);
        let mark = marks.get(owner);
        if (!mark) {
          mark = audienceMark({ owner }, at);
          marks.set(owner, mark);
        }
        return mark;
      },
    };
    const stored = await storage.messages.append(joining, {
      ...(file ? { file: { ...file, at } } : {}),
      names: [...renames].map(([id, displayName]) => ({ id, displayName })),
      topics: [...topics],
      at,
      joinMarks,
      ...(purges === undefined ? {} : { purges }),
      ...(options.keyId === undefined ? {} : { keyId: options.keyId }),
    });
    try {
      await settleAudienceMarks(context, joinMarks.written);
      // A retried message (a duplicate) writes no membership: the marks its first append wrote, left unchecked when
      // that check failed or its process died (the retry reaching another), are checked now (session 19).
      const retried = joining.filter((message, index) => message.role === 'user' && stored[index]?.duplicate);
      if (retried.length > 0) {
        const owners = new Set<string>();
        for (const message of await membership.withJoins(retried)) {
          for (const join of message.joins ?? []) owners.add(spaceOwner(join));
        }
        await checkMarkedSpaces(context, owners);
      }
      await settleUnsettled();
    } catch (error) {
      // The messages, their commands and memberships are in: the caller is told so, and how to finish the check. The
      // scheduling does not run: the retry does it.
      for (const message of stored) if (!message.duplicate && message.role === 'user') owed.add(message.id);
      unsettled.push(...joinMarks.written);
      const spaces = [...marks.keys()].join(', ') || 'the spaces of the retried messages';
      throw new MnemeError(
        error instanceof MnemeError ? error.code : ErrorCode.StoreFailed,
        `the messages (with their chat commands) were stored, but checking who may read the memories of ${spaces} failed (${error instanceof Error ? error.message : String(error)}); it is done again before this service's next read or message and by maintain, and at once when they are sent again with the same externalId (without one they are stored twice, unless sent under the same Idempotency-Key, whose answer is what was stored)`,
        { cause: error, committed: resultsOf(stored, false) },
      );
    }
    return resultsOf(stored, true);

    /** The result of each input; with `schedule`, its channel's extraction scheduled (unless a duplicate's was). */
    function resultsOf(stored: readonly StoredMessage[], schedule: boolean): IngestResult[] {
      const scheduled = new Map<string, boolean>();
      const results: IngestResult[] = [];
      let offset = 0;
      for (const input of inputs) {
        const prepared = commands.get(offset);
        const own = stored.slice(offset, offset + input.messages.length).map(({ written: _, ...message }) => message);
        const [first] = stored.slice(offset, offset + 1);
        offset += input.messages.length;
        // A duplicate's command was written with it when it was first stored: none now.
        const command = prepared && first && !first.duplicate ? prepared.result(first.written) : null;
        let queued = schedule;
        if (schedule && first) {
          // A duplicate was scheduled when it was first stored (unless that append's check failed before: `owed`).
          const owes = own.filter(
            (message) => message.role === 'user' && (!message.duplicate || owed.delete(message.id)),
          );
          if (owes.length > 0) {
            if (!scheduled.has(first.channelId)) scheduled.set(first.channelId, scheduler.schedule(first.channelId));
            queued = scheduled.get(first.channelId) ?? true;
          }
        }
        results.push({ messages: own, duplicate: own.every((message) => message.duplicate), queued, command });
      }
      return results;
    }
  }

  function prepareMessage(input: unknown, what: string): PreparedInput {
    const parsed = parseInput(IngestInputSchema, input, what);
    return {
      what,
      messages: [
        {
          channelId: parsed.channelId,
          senderId: parsed.sender,
          role: parsed.role,
          content: parsed.content,
          topicId: parsed.topicId ?? null,
          replyTo: parsed.replyTo ?? null,
          externalId: parsed.externalId ?? null,
          createdAt: parsed.createdAt ?? clock.now(),
        },
      ],
      topicId: parsed.topicId,
      sender: { id: parsed.sender, name: parsed.senderName },
      command: parsed.role === 'user' ? commandOf(parsed.content) : null,
    };
  }

  function prepareExchange(input: unknown, what: string): PreparedInput {
    const parsed = parseInput(IngestExchangeInputSchema, input, what);
    const common = {
      channelId: parsed.channelId,
      topicId: parsed.topicId ?? null,
      createdAt: parsed.createdAt ?? clock.now(),
    };
    return {
      what,
      messages: [
        {
          ...common,
          senderId: parsed.userId,
          role: 'user',
          content: parsed.userMessage,
          externalId: parsed.externalId ?? null,
        },
        {
          ...common,
          senderId: parsed.assistantId,
          role: 'assistant',
          content: parsed.assistantReply,
          repliesToPrevious: true,
          externalId: parsed.replyExternalId ?? null,
        },
      ],
      topicId: parsed.topicId,
      sender: { id: parsed.userId, name: parsed.userName },
      command: commandOf(parsed.userMessage),
    };
  }

  /** What an append writes of the senders' memberships, as the caller's options say. */
  const joinsOf = (options: IngestOptions): IngestOptions => ({
    sendersAreMembers: options.sendersAreMembers === true,
    joinsOnlyNewSpaces: options.joinsOnlyNewSpaces === true,
    ...(options.keyId === undefined ? {} : { keyId: options.keyId }),
  });

  const only = (results: Promise<IngestResult[]>) =>
    committedAs(results, ([result]) => {
      if (!result) throw new Error('append returned no result for one input');
      return result;
    });

  return {
    ingest: async (input, options = {}) => only(append([prepareMessage(input, 'message')], joinsOf(options))),
    ingestExchange: async (input, options = {}) => only(append([prepareExchange(input, 'exchange')], joinsOf(options))),

    async ingestMany(inputs, options = {}) {
      const file = options.file === undefined ? undefined : parseInput(IngestFileProgressSchema, options.file, 'file');
      if (!Array.isArray(inputs) || inputs.length > MAX_INGEST_BATCH) {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          `ingestMany takes an array of at most ${MAX_INGEST_BATCH} messages and exchanges; split larger imports`,
        );
      }
      const prepared = inputs.map((input, index) =>
        typeof input === 'object' && input !== null && 'userMessage' in input
          ? prepareExchange(input, `exchange at index ${index}`)
          : prepareMessage(input, `message at index ${index}`),
      );
      return prepared.length === 0 ? [] : append(prepared, { file, ...joinsOf(options) });
    },

    ingestProgress: async (path) =>
      storage.messages.ingestFile(parseInput(IngestFileProgressSchema.shape.path, path, 'file path')),

    extract: (topicId) => extraction.extractTopic(parseInput(TopicIdSchema, topicId, 'topic id')),
    extractWork: (sessionId) => extraction.extractWork(parseInput(TopicIdSchema, sessionId, 'session id')),

    async workSessionViewer(sessionId) {
      const id = parseInput(TopicIdSchema, sessionId, 'session id');
      const topic = await storage.directory.getTopic(id);
      if (!topic)
        throw new MnemeError(ErrorCode.NotFound, `topic ${id} does not exist; create it with createTopic first`);
      const project = topic.projectId ? await storage.directory.getProject(topic.projectId) : null;
      if (!project?.managed) {
        throw new MnemeError(
          ErrorCode.Conflict,
          `session ${id} does not belong to a managed project, so it is not a work session; use a viewer with its topicId instead`,
        );
      }
      return { projectId: project.id };
    },

    async turns(input) {
      const parsed = parseInput(TurnsInputSchema, input, 'turns');
      return storage.messages.recent(parsed.channelId, parsed.count ?? context.policy.ingest.turns);
    },

    async whenIdle() {
      // A failed check is left to the next append or `maintain` when it fails again.
      await settleUnsettled().catch(() => {});
      await scheduler.whenIdle();
    },
    close: () => scheduler.close(),
    /** Checks the marks of this engine's appends whose check failed (a read's look); throws when it fails again. */
    settleMarks: settleUnsettled,
  };
}
