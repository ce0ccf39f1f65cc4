import { z } from 'zod';
import { ErrorCode, isMnemeError, MnemeError } from '../core/errors.js';
import { matchesForgetPattern } from '../core/ingest/chat-commands.js';
import type { RecallHit } from '../core/recall/recall.js';
import {
  CategorySchema,
  ContentSchema,
  HISTORY_PAGE,
  ImportanceSchema,
  MAX_PAGE_SIZE,
  MemoryIdSchema,
  MessageContentSchema,
  MessageExternalIdSchema,
  QuerySchema,
  TopKSchema,
  VersionAfterSchema,
} from '../core/schemas.js';
import { scopeOwnerField } from '../core/scope.js';
import type { Memory, MemoryVersion } from '../core/types.js';
import type { McpSession } from './mcp-session.js';

/** What a tool returns: the structured result and a short text rendering of it. */
export interface ToolOutput {
  structured: Record<string, unknown>;
  text: string;
}

/** One MCP tool: its name, what a model reads about it, its input schema and what it does for a session. */
export interface McpTool<Schema extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: Schema;
  /** True when the tool changes nothing (the MCP `readOnlyHint`). */
  readOnly: boolean;
  run(session: McpSession, input: z.output<Schema>): Promise<ToolOutput>;
}

function defineTool<Schema extends z.ZodObject>(tool: McpTool<Schema>): McpTool {
  return tool as unknown as McpTool;
}

const ReasonSchema = z.string().trim().max(500).describe('Why, kept in the memory history').optional();
const PinnedSchema = z.boolean({ error: 'pinned must be true or false' });

/** Scopes a manual memory may have (`session` memories come from conversation extraction). */
const manualScopes = ['personal', 'room', 'project', 'global'] as const;

type ManualScope = (typeof manualScopes)[number];

/** The viewer id each scope of a manual memory needs. */
const spaceOf: Record<ManualScope, { field: 'userId' | 'channelId' | 'projectId'; name: string } | null> = {
  personal: { field: 'userId', name: 'user' },
  room: { field: 'channelId', name: 'channel' },
  project: { field: 'projectId', name: 'project' },
  global: null,
};

/** Where the session's ids come from, for messages that ask for one. */
const configureHint =
  'start mneme mcp with --user/--channel/--project (or MNEME_USER, MNEME_CHANNEL, MNEME_PROJECT), or send the Mneme-User/Mneme-Channel/Mneme-Project headers to /mcp';

function owner(memory: Memory): string {
  const field = scopeOwnerField[memory.scope];
  return field ? `${memory.scope}:${memory[field]}` : memory.scope;
}

function memoryLine(memory: Memory): string {
  const flags = [memory.category, memory.pinned ? 'pinned' : null, memory.archivedAt ? 'archived' : null];
  return `#${memory.id} [${owner(memory)}, ${flags.filter(Boolean).join(', ')}] ${memory.content}`;
}

function hitLine(hit: RecallHit): string {
  const line = `#${hit.memory.id} (score ${hit.score.toFixed(2)}, ${owner(hit.memory)}) ${hit.memory.content}`;
  return hit.explanation ? `${line}\n  ${hit.explanation}` : line;
}

function versionLine(version: MemoryVersion): string {
  const changes = Object.entries(version.changes)
    .map(([field, change]) => `${field}: ${JSON.stringify(change?.from)} -> ${JSON.stringify(change?.to)}`)
    .join('; ');
  const who = version.actor ? ` by ${version.actor}` : '';
  const why = version.reason ? ` (${version.reason})` : '';
  return `v${version.version} ${version.createdAt} ${version.action}${who}${why}${changes ? `: ${changes}` : ''}`;
}

/** The memories of the session's user that its viewer sees and that match `pattern`, as `/forget` finds them. */
async function matchingOwnMemories(session: McpSession, pattern: string): Promise<number[]> {
  const { userId } = session.viewer;
  if (userId === undefined) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      `forgetting by pattern forgets the session user's own memories, and this session has no user: forget by id, or ${configureHint}`,
    );
  }
  // The listing pages by offset, newest first. It takes archived memories too, so a memory forgotten elsewhere
  // between two pages moves no other onto a page already read; a listing whose total changed (a memory stored or
  // purged meanwhile) is read again.
  for (let listing = 0; listing < MAX_FORGET_LISTINGS; listing++) {
    const matching: number[] = [];
    let total: number | undefined;
    for (let offset = 0; ; offset += MAX_PAGE_SIZE) {
      const page = await session.mneme.list({
        viewer: session.viewer,
        userId,
        archived: 'include',
        limit: MAX_PAGE_SIZE,
        offset,
      });
      if (total !== undefined && page.total !== total) break;
      total = page.total;
      for (const memory of page.memories) {
        if (memory.archivedAt === null && matchesForgetPattern(memory.content, pattern)) matching.push(memory.id);
      }
      if (offset + MAX_PAGE_SIZE >= page.total) return matching;
    }
  }
  throw new MnemeError(
    ErrorCode.StoreBusy,
    `the memories of ${userId} changed while they were listed ${MAX_FORGET_LISTINGS} times: nothing was forgotten, try again`,
  );
}

/** Most times `forget` lists the user's memories for a pattern before it gives up. */
const MAX_FORGET_LISTINGS = 3;

/** Every tool of the MCP face. */
export const mcpTools: readonly McpTool[] = [
  defineTool({
    name: 'remember',
    title: 'Remember',
    description:
      'Store a memory worth keeping across conversations: a fact, a preference, a decision, an event. Call it when the user says something durable about themselves or asks you to remember something; write the memory as a self-contained sentence ("Oz prefers dark mode"). Scope personal (the default when the session has a user) is seen only by that user; room by the members of the session\'s channel; project by the members of its project; global by everyone (administrators only). Returns the memory as stored, with its id.',
    input: z.strictObject({
      content: ContentSchema.describe('The memory, one self-contained statement'),
      scope: z
        .enum(manualScopes, { error: `scope must be one of ${manualScopes.join(', ')}` })
        .describe('Who sees it: personal (default with a user), room, project, or global (default without a user)')
        .optional(),
      category: CategorySchema.describe('fact, preference, event, general, or a label of your own').optional(),
      importance: ImportanceSchema.describe('How much it matters, 0 to 1 (default 0.5)').optional(),
      pinned: PinnedSchema.describe('Pin it: always in context, never decays (personal memories only)').optional(),
    }),
    readOnly: false,
    async run(session, input) {
      const { viewer } = session;
      const scope: ManualScope = input.scope ?? (viewer.userId === undefined ? 'global' : 'personal');
      // The author, and the one space the scope needs (a memory is listed under every space it names).
      const space = spaceOf[scope];
      const spaceId = space && viewer[space.field];
      if (space && spaceId === undefined) {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          `a ${scope} memory needs the session's ${space.name}: ${configureHint}`,
        );
      }
      const memory = await session.mneme.remember({
        content: input.content,
        scope,
        ...(viewer.userId === undefined ? {} : { userId: viewer.userId }),
        ...(space ? { [space.field]: spaceId } : {}),
        ...(input.category === undefined ? {} : { category: input.category }),
        ...(input.importance === undefined ? {} : { importance: input.importance }),
        ...(input.pinned === undefined ? {} : { pinned: input.pinned }),
        actor: session.actor,
      });
      return { structured: { memory }, text: `Remembered ${memoryLine(memory)}` };
    },
  }),
  defineTool({
    name: 'recall',
    title: 'Recall',
    description:
      'Search the memories this session may see for what matters to a query (full-text and semantic search, scored by relevance, importance and recency). Call it before answering when earlier conversations may hold the answer: names, preferences, past decisions. Returns the hits best first, each with its memory, score and (with explain) why it ranked there.',
    input: z.strictObject({
      query: QuerySchema.describe('What to look for, in words'),
      topK: TopKSchema.describe("How many memories at most (1 to 100; the database's default when left out)"),
      explain: z
        .boolean({ error: 'explain must be true or false' })
        .describe('Add a one-line explanation of each score')
        .optional(),
    }),
    readOnly: false,
    async run(session, input) {
      const result = await session.mneme.recall({
        query: input.query,
        viewer: session.viewer,
        ...(input.topK === undefined ? {} : { topK: input.topK }),
        ...(input.explain === undefined ? {} : { explain: input.explain }),
      });
      const text = result.hits.length === 0 ? 'No memory matches.' : result.hits.map(hitLine).join('\n');
      return { structured: { ...result }, text };
    },
  }),
  defineTool({
    name: 'context',
    title: 'Context for the next reply',
    description:
      "Build the memory block to put in the prompt before you answer: the memories most relevant to the query (and to the session channel's latest messages), formatted and trimmed to a word budget, content quoted as data. Call it once per turn with the user's message as the query. Returns the block as text, and the memories in it.",
    input: z.strictObject({
      query: QuerySchema.describe("The user's latest message, or what the reply is about"),
      topK: TopKSchema.describe("How many memories at most (the database's default when left out)"),
    }),
    readOnly: false,
    async run(session, input) {
      const result = await session.mneme.context({
        query: input.query,
        viewer: session.viewer,
        ...(input.topK === undefined ? {} : { topK: input.topK }),
      });
      return { structured: { ...result }, text: result.text === '' ? 'No memory for this query.' : result.text };
    },
  }),
  defineTool({
    name: 'forget',
    title: 'Forget',
    description:
      'Forget memories: one by its id (from recall or list), or every memory of the session user matching a pattern, like the chat command /forget (case-insensitive, * matches any text: "dark*mode"). Call it when the user asks you to forget something or a memory is wrong. Forgotten memories are archived, no longer recalled, and keep their history. Returns the memories forgotten.',
    input: z
      .strictObject({
        id: MemoryIdSchema.describe('The id of the memory to forget').optional(),
        pattern: z
          .string({ error: 'pattern must be a string' })
          .trim()
          .max(500, 'pattern is longer than 500 characters')
          .refine((text) => text.replaceAll('*', '').trim().length > 0, 'pattern must have some text besides *')
          .describe('Forget every memory of the session user whose content contains this text')
          .optional(),
        reason: ReasonSchema,
      })
      .refine((input) => (input.id === undefined) !== (input.pattern === undefined), {
        message: 'give either id or pattern, not both and not neither',
      }),
    readOnly: false,
    async run(session, input) {
      const reason = input.reason === undefined ? {} : { reason: input.reason };
      const ids = input.id === undefined ? await matchingOwnMemories(session, input.pattern ?? '') : [input.id];
      const forgotten: Memory[] = [];
      for (const id of ids) {
        try {
          forgotten.push(await session.mneme.forget({ id, viewer: session.viewer, actor: session.actor, ...reason }));
        } catch (error) {
          // A match another request forgot (or merged, or purged) since the listing is forgotten already: the
          // pattern's other matches are forgotten still, rather than the call stopping half way with a conflict.
          const gone = isMnemeError(error) && (error.code === ErrorCode.Conflict || error.code === ErrorCode.NotFound);
          if (input.id !== undefined || !gone) throw error;
        }
      }
      const text =
        input.id !== undefined
          ? `Forgot #${input.id}.`
          : forgotten.length === 0
            ? `Nothing to forget: no memory of yours matches "${input.pattern}".`
            : `Forgot ${forgotten.length} ${forgotten.length === 1 ? 'memory' : 'memories'} matching "${input.pattern}": ${forgotten.map((memory) => `#${memory.id}`).join(', ')}.`;
      return { structured: { forgotten }, text };
    },
  }),
  defineTool({
    name: 'update',
    title: 'Update a memory',
    description:
      'Correct or change a memory by its id: new content (re-embedded), category, importance, or pinned. Call it when the user corrects something you remembered, instead of storing a second, conflicting memory. A version is kept (see history). Returns the memory as now stored.',
    input: z
      .strictObject({
        id: MemoryIdSchema.describe('The id of the memory to change'),
        content: ContentSchema.describe('The new content').optional(),
        category: CategorySchema.describe('The new category').optional(),
        importance: ImportanceSchema.describe('The new importance, 0 to 1').optional(),
        pinned: PinnedSchema.describe('Pin or unpin it').optional(),
        reason: ReasonSchema,
      })
      .refine(
        (input) =>
          input.content !== undefined ||
          input.category !== undefined ||
          input.importance !== undefined ||
          input.pinned !== undefined,
        { message: 'nothing to update: give content, category, importance or pinned' },
      ),
    readOnly: false,
    async run(session, input) {
      const memory = await session.mneme.update({ ...input, viewer: session.viewer, actor: session.actor });
      return { structured: { memory }, text: `Updated ${memoryLine(memory)}` };
    },
  }),
  defineTool({
    name: 'list',
    title: 'List memories',
    description:
      'List the memories this session may see, newest first, a page at a time, optionally by scope or category, or the forgotten ones (archived: only). Call it to browse or review what is stored, not to answer a question (use recall for that). Returns the page and the total.',
    input: z.strictObject({
      scope: z
        .enum(['personal', 'room', 'project', 'session', 'global'], {
          error: 'scope must be one of personal, room, project, session, global',
        })
        .describe('Only this scope')
        .optional(),
      category: CategorySchema.describe('Only this category').optional(),
      archived: z
        .enum(['exclude', 'include', 'only'], { error: 'archived must be exclude, include or only' })
        .describe('Forgotten memories: exclude (default), include, or only')
        .optional(),
      limit: z
        .number({ error: 'limit must be a number' })
        .int('limit must be a whole number')
        .min(1, 'limit must be at least 1')
        .max(MAX_PAGE_SIZE, `limit must be at most ${MAX_PAGE_SIZE}`)
        .describe('Page size (default 20)')
        .optional(),
      offset: z
        .number({ error: 'offset must be a number' })
        .int('offset must be a whole number')
        .min(0, 'offset must not be negative')
        .describe('How many to skip')
        .optional(),
    }),
    readOnly: true,
    async run(session, input) {
      const page = await session.mneme.list({ limit: 20, ...input, viewer: session.viewer });
      const shown = page.memories.length;
      const range = shown === 0 ? 'No memories.' : `${page.offset + 1}-${page.offset + shown} of ${page.total}`;
      return { structured: { ...page }, text: [...page.memories.map(memoryLine), range].join('\n') };
    },
  }),
  defineTool({
    name: 'history',
    title: 'History of a memory',
    description: `The versions of a memory by its id, oldest first, ${HISTORY_PAGE} at a time: when it was created, edited, forgotten, restored or merged, by whom, why, and what changed. Call it when the user asks where a memory came from or how it changed. Returns the versions.`,
    input: z.strictObject({
      id: MemoryIdSchema.describe('The id of the memory'),
      after: VersionAfterSchema.describe('Only the versions after this version number (for the next page)').optional(),
    }),
    readOnly: true,
    async run(session, input) {
      const page = { id: input.id, viewer: session.viewer, limit: HISTORY_PAGE };
      const versions = await session.mneme.history(input.after === undefined ? page : { ...page, after: input.after });
      const last = versions.at(-1);
      const more =
        versions.length === HISTORY_PAGE && last ? [`More may follow: call history with after ${last.version}.`] : [];
      return { structured: { versions }, text: [...versions.map(versionLine), ...more].join('\n') };
    },
  }),
  defineTool({
    name: 'ingest_exchange',
    title: 'Record an exchange',
    description:
      "Hand one turn of the conversation to memory: the user's message and your reply. Call it after every reply; facts are extracted in the background (personal facts for the user, the exchange itself for the channel), and a message /remember <text> or /forget <pattern> is run as a command. Needs the session's user and channel. Returns the messages appended and what a command did.",
    input: z.strictObject({
      userMessage: MessageContentSchema.describe("The user's message, as they wrote it"),
      assistantReply: MessageContentSchema.describe('Your reply to it'),
      userName: z
        .string({ error: 'userName must be a string' })
        .trim()
        .min(1, 'userName must not be empty')
        .max(200, 'userName is longer than 200 characters')
        .describe('How the user is called, used in extracted facts ("Oz prefers ...")')
        .optional(),
      externalId: MessageExternalIdSchema.describe(
        "Your host's id of the user message, unique in the conversation: a call sent again with it (after a timeout) records nothing twice",
      ).optional(),
    }),
    readOnly: false,
    async run(session, input) {
      const { userId, channelId, topicId } = session.viewer;
      if (userId === undefined || channelId === undefined) {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          `recording an exchange needs the session's user and channel: ${configureHint}`,
        );
      }
      const result = await session.exchanges.ingestExchange({
        ...input,
        userId,
        channelId,
        ...(topicId === undefined ? {} : { topicId }),
      });
      const ids = result.messages.map((message) => `#${message.id}`).join(' and ');
      const command = result.command ? ` ${result.command.reply}` : '';
      return {
        structured: { ...result },
        text: `Recorded the exchange as messages ${ids}; facts are extracted in the background.${command}`,
      };
    },
  }),
  defineTool({
    name: 'stats',
    title: 'Memory statistics',
    description:
      'Totals of the whole memory store: active, forgotten and pinned memories, by scope and category, added in the last 7 days, expiring soon, messages, links, the most accessed. Administrator sessions only (it counts every user). Returns the totals.',
    input: z.strictObject({}),
    readOnly: true,
    async run(session) {
      const stats = await session.mneme.stats();
      const counts = (record: Record<string, number>) =>
        Object.entries(record)
          .map(([key, count]) => `${key} ${count}`)
          .join(', ') || 'none';
      return {
        structured: { ...stats },
        text: `${stats.active} active, ${stats.archived} archived, ${stats.pinned} pinned; by scope: ${counts(stats.byScope)}; messages ${stats.messages}, links ${stats.links}`,
      };
    },
  }),
];
