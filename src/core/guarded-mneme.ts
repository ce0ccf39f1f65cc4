import type { Principal } from './access.js';
import { accessOf } from './access-view.js';
import type { EngineContext } from './engine-context.js';
import { ErrorCode, MnemeError } from './errors.js';
import type { IngestResult } from './ingest/ingest.js';
import { channelMessages, listChannels, MessagePageInputSchema } from './inspection.js';
import { createMembership } from './membership.js';
import type { Mneme } from './mneme.js';
import {
  ChannelIdSchema,
  ContextInputSchema,
  DisplayNameInputSchema,
  GetInputSchema,
  HistoryInputSchema,
  IngestInputSchema,
  ListFilterSchema,
  MemoryActionInputSchema,
  parseInput,
  RecallInputSchema,
  RememberInputSchema,
  TopicIdSchema,
  TurnsInputSchema,
  UpdateInputSchema,
  UserIdSchema,
} from './schemas.js';
import { ownerKey, visibleOwners } from './scope.js';
import type { Viewer } from './types.js';
import { requireVisible } from './visibility.js';

type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/** The engine's reads that show memories, made for one reader's view of their retrievals (ADR 52). */
export type MemoryReads = Pick<Mneme, 'recall' | 'context' | 'get' | 'update' | 'forget' | 'restore' | 'list'>;

/**
 * The engine as one user may use it (ADR 5). Every input is parsed first (so bad input is still
 * INVALID_INPUT), then checked: the user's viewer carries its own id and names only spaces it belongs
 * to (public channels may be read by anyone); it writes user messages as itself into channels it is in,
 * its own personal memories, and room or project memories of its spaces, never global ones; it changes
 * only memories it authored, and pins only personal ones; versions name the principal's label as the
 * actor, whatever the input says; store-wide operations are refused. Refusals are FORBIDDEN; a memory
 * (or message) it may not see stays NOT_FOUND.
 */
export function guardMneme(
  engine: Mneme,
  context: EngineContext,
  principal: UserPrincipal,
  /** The engine's look for the audience changes a stopped process left, before a read the engine does not do. */
  watch: () => Promise<void>,
  /** The engine's reads as this user is shown them: the retrievals of its own personal memories only (ADR 52). */
  reads: MemoryReads,
): Mneme {
  const { userId } = principal;
  /** A post of the user: its memberships checked here, and written only while the key it came with is active. */
  const posting = { sendersAreMembers: true, ...(principal.keyId === undefined ? {} : { keyId: principal.keyId }) };
  const membership = createMembership(context);
  const refuse = (what: string): never => {
    throw new MnemeError(ErrorCode.Forbidden, `${what} needs an administrator; this caller acts as user ${userId}`);
  };
  const forOtherUser = (what: string, other: string): never => {
    throw new MnemeError(
      ErrorCode.Forbidden,
      `${what}: this caller acts as user ${userId} and cannot act for ${other}`,
    );
  };

  /** A pinned memory is in every context of its audience: a user pins only its personal memories (ADR 5). */
  const refusePin = (scope: string): never =>
    refuse(`pinning a ${scope} memory (it would be pinned into other members' contexts; pin personal memories)`);

  /** The viewer the user may use: its own id forced in, every other id one it belongs to. */
  async function viewerOf(requested: Viewer | undefined): Promise<Viewer> {
    if (requested?.userId !== undefined && requested.userId !== userId) forOtherUser('reading', requested.userId);
    const viewer = { ...requested, userId };
    await membership.assertMayView(userId, viewer);
    return viewer;
  }

  /** The memory, if the user may see it through `viewer` and authored it (personal memories included). */
  /**
   * The user's own memory, seen by the viewer it names, and that viewer: the engine's write is made for it too, so a
   * memory an audience change moves out of it after this check is refused in the write's transaction (attack 31c).
   */
  async function ownMemory(id: number, requested: Viewer | undefined, what: string) {
    const viewer = await viewerOf(requested);
    const memory = await requireVisible(context, id, viewer);
    if (memory.userId !== userId) {
      throw new MnemeError(ErrorCode.Forbidden, `${what}: memory ${id} was not written by user ${userId}`);
    }
    return { memory, viewer };
  }

  /**
   * FORBIDDEN when the memory was built from a message another user sent (a turn between people, "Ann: ...\nBob:
   * ..."): a new content would put words in that user's mouth, under their message as its source (attack28b).
   */
  async function assertQuotesNoOther(id: number, sourceMessageIds: readonly number[]): Promise<void> {
    if (sourceMessageIds.length === 0) return;
    const other = (await context.storage.messages.get(sourceMessageIds)).find(
      (message) => message.role === 'user' && message.senderId !== userId,
    );
    if (other === undefined) return;
    throw new MnemeError(
      ErrorCode.Forbidden,
      `editing the content of memory ${id}: it quotes what user ${other.senderId} said (message ${other.id}), which this caller (user ${userId}) may not rewrite; forget it, or write a memory of your own`,
    );
  }

  async function assertMayPost(input: unknown, what: string): Promise<void> {
    const parsed = parseInput(IngestInputSchema, input, what);
    if (parsed.role !== 'user') refuse(`posting a message as the ${parsed.role}`);
    if (parsed.sender !== userId) forOtherUser('posting a message', parsed.sender);
    await membership.assertMember('channel', parsed.channelId, userId, 'posting a message');
    if (parsed.replyTo !== undefined) await assertMayRead(parsed.replyTo);
    if (parsed.topicId !== undefined) {
      await membership.assertMember('topic', parsed.topicId, userId, 'posting a message into a topic');
      // Ingest makes the sender a member of the topic's project, and work extraction writes the
      // message into that project: a topic member who is not a project member may not post there.
      const projectId = (await context.storage.directory.getTopic(parsed.topicId))?.projectId;
      if (projectId) {
        await membership.assertMember('project', projectId, userId, 'posting a message into a topic of a project');
      }
    }
  }

  /** NOT_FOUND unless the message exists in a channel the user may read (so no id of another's message is confirmed). */
  async function assertMayRead(messageId: number): Promise<void> {
    const [message] = await context.storage.messages.get([messageId]);
    const readable =
      message !== undefined &&
      ((await membership.isPublic(message.channelId)) ||
        (await context.storage.memberships.isMember('channel', message.channelId, userId)));
    if (!readable) throw new MnemeError(ErrorCode.NotFound, `message ${messageId} does not exist`);
  }

  /** Whether the user may read a channel's messages: a member, or the channel is public. */
  async function mayReadChannel(channelId: string): Promise<boolean> {
    return (
      (await membership.isPublic(channelId)) ||
      (await context.storage.memberships.isMember('channel', channelId, userId))
    );
  }

  /** What a chat command of the post wrote or archived, its retrievals as this user is shown them (ADR 52). */
  const view = accessOf(userId);
  const shownCommand = (result: IngestResult): IngestResult =>
    result.command === null
      ? result
      : {
          ...result,
          command: {
            ...result.command,
            remembered: result.command.remembered && view(result.command.remembered),
            forgotten: result.command.forgotten.map(view),
          },
        };

  const exchangeRefused = () =>
    refuse('posting an exchange (it carries the assistant reply; post the user message with ingest)');

  return {
    ...engine,

    async remember(input) {
      // Naming no scope and no space: the user's own (a global memory would be refused).
      const bare =
        typeof input === 'object' &&
        input !== null &&
        ['scope', 'userId', 'channelId', 'projectId'].every((field) => !(field in input));
      const parsed = parseInput(RememberInputSchema, bare ? { ...input, userId } : input, 'memory');
      const what = `writing a ${parsed.scope} memory`;
      if (parsed.scope === 'global') refuse(what);
      if (parsed.pinned && parsed.scope !== 'personal') refusePin(parsed.scope);
      if (parsed.userId !== undefined && parsed.userId !== userId) forOtherUser(what, parsed.userId);
      // Every space the memory names, whatever its scope: a memory tagged with another user's channel,
      // topic or project is listed under that space (list filters) as if it came from there.
      if (parsed.channelId !== undefined) await membership.assertMember('channel', parsed.channelId, userId, what);
      if (parsed.projectId !== undefined) await membership.assertMember('project', parsed.projectId, userId, what);
      if (parsed.topicId !== undefined) await membership.assertMember('topic', parsed.topicId, userId, what);
      return engine.remember({ ...parsed, userId, actor: principal.label });
    },

    async recall(input) {
      const parsed = parseInput(RecallInputSchema, input, 'recall');
      return reads.recall({ ...parsed, viewer: await viewerOf(parsed.viewer) });
    },

    async context(input) {
      const parsed = parseInput(ContextInputSchema, input, 'context');
      return reads.context({ ...parsed, viewer: await viewerOf(parsed.viewer) });
    },

    async get(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'get');
      return reads.get({ id: parsed.id, viewer: await viewerOf(parsed.viewer) });
    },

    async update(input) {
      const parsed = parseInput(UpdateInputSchema, input, 'update');
      const { viewer, ...edit } = parsed;
      const { memory, viewer: seen } = await ownMemory(edit.id, viewer, 'editing');
      if (edit.pinned === true && memory.scope !== 'personal') refusePin(memory.scope);
      if (edit.content !== undefined) await assertQuotesNoOther(memory.id, memory.sourceMessageIds);
      return reads.update({ ...edit, viewer: seen, actor: principal.label });
    },

    async forget(input) {
      const parsed = parseInput(MemoryActionInputSchema, typeof input === 'number' ? { id: input } : input, 'forget');
      const { viewer, ...action } = parsed;
      const { viewer: seen } = await ownMemory(action.id, viewer, 'forgetting');
      return reads.forget({ ...action, viewer: seen, actor: principal.label });
    },

    async restore(input) {
      const parsed = parseInput(MemoryActionInputSchema, typeof input === 'number' ? { id: input } : input, 'restore');
      const { viewer, ...action } = parsed;
      const { viewer: seen } = await ownMemory(action.id, viewer, 'restoring');
      return reads.restore({ ...action, viewer: seen, actor: principal.label });
    },

    async purgeUser(id) {
      const target = parseInput(UserIdSchema, id, 'user id');
      if (target !== userId) forOtherUser('purging', target);
      return engine.purgeUser(target);
    },

    async list(filter = {}) {
      const parsed = parseInput(ListFilterSchema, filter, 'list filter');
      return reads.list({ ...parsed, viewer: await viewerOf(parsed.viewer) });
    },

    async history(input) {
      const parsed = parseInput(HistoryInputSchema, typeof input === 'object' ? input : { id: input }, 'history');
      return engine.history({ ...parsed, viewer: await viewerOf(parsed.viewer) });
    },

    async links(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'links');
      const viewer = await viewerOf(parsed.viewer);
      const links = await engine.links({ id: parsed.id, viewer });
      const others = links.map((link) => (link.sourceId === parsed.id ? link.targetId : link.sourceId));
      const visible = new Set(visibleOwners(viewer));
      const seen = new Set(
        (await context.storage.memories.get(others))
          .filter((memory) => visible.has(ownerKey(memory.scope, memory)))
          .map((memory) => memory.id),
      );
      return links.filter((link) => seen.has(link.sourceId === parsed.id ? link.targetId : link.sourceId));
    },

    async ingest(input) {
      await assertMayPost(input, 'message');
      // Checked above: no membership is written with the post (a removal meanwhile stays).
      return shownCommand(await engine.ingest(input, posting));
    },

    async sources(input) {
      const parsed = parseInput(GetInputSchema, typeof input === 'number' ? { id: input } : input, 'sources');
      const messages = await engine.sources({ id: parsed.id, viewer: await viewerOf(parsed.viewer) });
      const shown = [];
      for (const message of messages) if (await mayReadChannel(message.channelId)) shown.push(message);
      return shown;
    },

    channels: () => listChannels(context, (channelId) => mayReadChannel(channelId)),

    async messages(input) {
      const parsed = parseInput(MessagePageInputSchema, input, 'messages');
      const viewer = await viewerOf({ channelId: parsed.channelId });
      await watch();
      return channelMessages(context, parsed, async () => viewer);
    },

    ingestExchange: async () => exchangeRefused(),

    async ingestMany(inputs, options = {}) {
      if (options.file !== undefined) refuse("recording a file's ingest progress");
      if (Array.isArray(inputs)) {
        for (const [index, input] of inputs.entries()) {
          if (typeof input === 'object' && input !== null && 'userMessage' in input) exchangeRefused();
          await assertMayPost(input, `message at index ${index}`);
        }
      }
      return (await engine.ingestMany(inputs, posting)).map(shownCommand);
    },

    ingestProgress: async () => refuse("reading a file's ingest progress"),

    async setDisplayName(input) {
      const parsed = parseInput(DisplayNameInputSchema, input, 'display name');
      if (parsed.userId !== userId) forOtherUser('renaming', parsed.userId);
      return engine.setDisplayName(parsed);
    },

    async turns(input) {
      const parsed = parseInput(TurnsInputSchema, input, 'turns');
      await viewerOf({ channelId: parsed.channelId });
      return engine.turns(parsed);
    },

    async channel(id) {
      await viewerOf({ channelId: parseInput(ChannelIdSchema, id, 'channel id') });
      return engine.channel(id);
    },

    createTopic: async () => refuse('creating or changing a topic'),
    createProject: async () => refuse('creating or changing a project'),
    putChannel: async () => refuse('declaring a channel'),
    extract: async () => refuse('conversation extraction of a topic'),
    extractWork: async () => refuse('work extraction of a session'),
    async workSessionViewer(sessionId) {
      const id = parseInput(TopicIdSchema, sessionId, 'session id');
      await membership.assertMember('topic', id, userId, 'working in a session');
      return engine.workSessionViewer(id);
    },
    stats: async () => refuse('stats over every scope'),
    analytics: async () => refuse('analytics over every scope'),
    maintenanceStatus: async () => refuse("maintenance's state"),
    maintain: async () => refuse('maintenance'),
    policy: async () => refuse("reading the database's policy"),
    setPolicy: async () => refuse("changing the database's policy"),
    policyHistory: async () => refuse("reading the policy's history"),
    reembed: async () => refuse('re-embedding'),
    exportData(options = {}) {
      // A user may ask for their own data (a data-subject access request), never for another's or for all.
      if (options.userId === undefined) refuse('exporting every user');
      if (options.userId !== userId) forOtherUser('exporting', String(options.userId));
      return engine.exportData({ ...options, userId });
    },
    importData: async () => refuse('importing'),
    vectorStatus: async () => refuse('the vector index status'),
    health: () => engine.health(),
    get apiKeys() {
      return refuse('managing API keys');
    },
    get idempotency() {
      return refuse('idempotency keys (the HTTP face keeps them per principal)');
    },
    as: (other) =>
      other.kind === 'user' && other.userId === userId
        ? guardMneme(engine, context, other, watch, reads)
        : refuse('acting as another principal'),
    close: async () => refuse('closing the engine'),
  };
}
