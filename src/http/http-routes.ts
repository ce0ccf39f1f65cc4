import { z } from 'zod';
import { committedAs, ErrorCode } from '../core/errors.js';
import { MAX_INGEST_BATCH } from '../core/ingest/ingest.js';
import { MAX_MESSAGE_PAGE } from '../core/inspection.js';
import { MaintainRequestSchema } from '../core/maintenance/maintain.js';
import {
  AnalyticsSeriesSchema,
  ChannelSchema,
  ChannelSummarySchema,
  ContextResultSchema,
  IngestBatchResultSchema,
  IngestResultSchema,
  MaintenanceReportSchema,
  MaintenanceStatusSchema,
  MemoryLinkSchema,
  MemoryPageSchema,
  MemorySchema,
  MemoryStatsSchema,
  MemoryVersionSchema,
  MessagePageSchema,
  MessageSchema,
  PolicyStateSchema,
  ProjectSchema,
  PurgeReportSchema,
  RecallResultSchema,
  TopicExtractionReportSchema,
  TopicSchema,
  UserSchema,
  WorkExtractionReportSchema,
} from '../core/result-schemas.js';
import {
  ChannelIdSchema,
  ContextInputSchema,
  CreateProjectInputSchema,
  CreateTopicInputSchema,
  DisplayNameInputSchema,
  HISTORY_PAGE,
  HistoryQuerySchema,
  type IngestExchangeInput,
  IngestExchangeInputSchema,
  type IngestInput,
  IngestInputSchema,
  ListQuerySchema,
  MAX_PAGE_SIZE,
  MemoryCreateSchema,
  MemoryIdSchema,
  MemoryPatchSchema,
  PutChannelInputSchema,
  queryNumber,
  RecallInputSchema,
  TopicIdSchema,
  TurnsQuerySchema,
  UserIdSchema,
  ViewerSchema,
} from '../core/schemas.js';
import type { Viewer } from '../core/types.js';
import { buildOpenApiDocument } from './http-openapi.js';
import { HttpProblem } from './http-problem.js';
import { defineRoute, type Route } from './http-route.js';

const HealthSchema = z.strictObject({ status: z.literal('ok') });
const OpenApiDocumentSchema = z.record(z.string(), z.unknown()).describe('An OpenAPI 3.1 document');

const UserParamsSchema = z.strictObject({ id: UserIdSchema });
const ChannelParamsSchema = z.strictObject({ id: ChannelIdSchema });

/**
 * A request about one memory: its id in the path and, in the query (`?userId=&channelId=&projectId=&topicId=`),
 * the viewer who must be able to see it when any id is given.
 */
const memoryRequest = {
  params: z.strictObject({ id: MemoryIdSchema }),
  query: ViewerSchema,
  access: {
    kind: 'viewer',
    requested: ({ query }: { query: Viewer }) => (Object.keys(query).length > 0 ? query : undefined),
  },
} as const;

/** A page of a channel's messages as the query string gives it: `?after=<message id>&limit=`. */
const MessagePageQuerySchema = z.strictObject({
  after: queryNumber('after', z.number().int().min(0, 'after must not be negative')).default(0),
  limit: queryNumber(
    'limit',
    z
      .number()
      .int()
      .min(1, 'limit must be at least 1')
      .max(MAX_MESSAGE_PAGE, `limit must be at most ${MAX_MESSAGE_PAGE}`),
  ).default(50),
});

/** Extraction over a whole topic (a conversation or a work session): administrator keys only. */
const topicExtraction = {
  kind: 'admin',
  reason: "it runs over every message of the topic, possibly several users', and returns the new memories' content",
} as const;

/** The input schema's JSON Schema, for the document of a body whose items the engine validates itself. */
const documented = (schema: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return rest;
};

/**
 * `POST /api/messages/batch`: messages and exchanges (an item with `userMessage`), each checked by
 * `ingestMany`, which names a bad one by its index and writes nothing of the batch.
 */
const IngestBatchSchema = z.strictObject({
  messages: z
    .array(
      z
        .custom<IngestInput | IngestExchangeInput>(
          (item) => typeof item === 'object' && item !== null && !Array.isArray(item),
          { error: 'each item must be a message or an exchange (an object)' },
        )
        .meta({ anyOf: [documented(IngestInputSchema), documented(IngestExchangeInputSchema)] }),
      { error: 'messages must be a list of messages and exchanges' },
    )
    .min(1, 'messages must not be empty')
    .max(MAX_INGEST_BATCH, `messages holds more than ${MAX_INGEST_BATCH} items; send several batches`),
});

/** The user a message or exchange acts for (a user message's sender, an exchange's user), when it names one as text. */
function speakerOf(item: IngestInput | IngestExchangeInput): string[] {
  const { role = 'user', sender, userId } = item as { role?: unknown; sender?: unknown; userId?: unknown };
  const speaker = 'userMessage' in item ? userId : role === 'user' ? sender : undefined;
  return typeof speaker === 'string' ? [speaker.trim()] : [];
}

let openApiDocument: Record<string, unknown> | undefined;

/** Every endpoint of the HTTP face. */
export const apiRoutes: readonly Route[] = [
  defineRoute({
    method: 'get',
    path: '/api/health',
    operationId: 'getHealth',
    response: HealthSchema,
    summary: 'Liveness: whether the database can still be served',
    tag: 'service',
    returns: '`{ status: "ok" }`',
    problems: {
      503: 'STORE_FAILED: the SQLite database file, -wal or -shm this server opened was removed, moved or replaced under it, so it refuses every write until the file is put back or it is restarted; `detail` says which file. A lock held elsewhere, a full disk or a PostgreSQL server away do not fail it: each request is answered 503 STORE_BUSY with Retry-After until they pass',
    },
    access: { kind: 'open', reason: 'liveness probes carry no key' },
    handle: async ({ mneme }) => {
      const health = await mneme.health();
      if (health.status !== 'ok') throw new HttpProblem(503, ErrorCode.StoreFailed, health.reason);
      return { status: 'ok' as const };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    response: OpenApiDocumentSchema,
    summary: 'This OpenAPI document',
    tag: 'service',
    returns: 'The OpenAPI 3.1 document of the API',
    access: { kind: 'open', reason: 'clients and tools read the API description before they hold a key' },
    handle: async () => {
      openApiDocument ??= buildOpenApiDocument(apiRoutes);
      return openApiDocument;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/memories',
    operationId: 'createMemory',
    response: MemorySchema,
    summary: 'Store a manual memory (source manual; scope session refused; project needs projectId)',
    tag: 'memories',
    returns: 'The memory as stored',
    creates: true,
    status: 201,
    body: MemoryCreateSchema,
    access: { kind: 'self', user: ({ body }) => body.userId },
    handle: async ({ mneme, principal, body }) => mneme.remember({ ...body, actor: principal.label }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/memories',
    operationId: 'listMemories',
    response: MemoryPageSchema,
    summary: 'List memories by scope, owner, category and archive state, newest first',
    tag: 'memories',
    returns:
      '`{ memories, total, limit, offset }`; an administrator key lists every scope, a user key what its viewer sees',
    query: ListQuerySchema,
    access: {
      kind: 'viewer',
      requested: ({ query: { channelId, projectId, topicId } }) => ({ channelId, projectId, topicId }),
    },
    handle: async ({ mneme, principal, query, viewer }) =>
      mneme.list({ ...query, viewer: principal.kind === 'user' ? viewer : undefined }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/memories/{id}',
    operationId: 'getMemory',
    response: MemorySchema,
    summary: 'One memory',
    tag: 'memories',
    returns: 'The memory',
    ...memoryRequest,
    handle: async ({ mneme, params, viewer }) => mneme.get({ id: params.id, viewer }),
  }),
  defineRoute({
    method: 'patch',
    path: '/api/memories/{id}',
    operationId: 'updateMemory',
    response: MemorySchema,
    summary: 'Edit a memory: new content is re-embedded, a version is kept, importance is clamped to 0..1',
    tag: 'memories',
    returns: 'The memory as now stored',
    ...memoryRequest,
    body: MemoryPatchSchema,
    problems: {
      403: "FORBIDDEN: the key is bound to a user who is not a member of a space the request names, who did not write the memory, or (a new `content`) whose memory quotes another user's message (a turn between people): its words are not this user's to rewrite",
    },
    handle: async ({ mneme, principal, params, body, viewer }) =>
      mneme.update({ ...body, id: params.id, viewer, actor: principal.label }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/memories/{id}',
    operationId: 'forgetMemory',
    response: MemorySchema,
    summary: 'Forget a memory: soft delete, vector removed, restorable',
    tag: 'memories',
    returns: 'The memory, archived',
    ...memoryRequest,
    handle: async ({ mneme, principal, params, viewer }) =>
      mneme.forget({ id: params.id, viewer, actor: principal.label }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/memories/{id}/restore',
    operationId: 'restoreMemory',
    response: MemorySchema,
    summary: 'Restore a forgotten memory',
    tag: 'memories',
    returns: 'The memory, active again',
    ...memoryRequest,
    problems: {
      409: 'The audience check archived the memory: someone who would see it in its scope may not read a channel it came from (ADR 52); it stays archived',
    },
    handle: async ({ mneme, principal, params, viewer }) =>
      mneme.restore({ id: params.id, viewer, actor: principal.label }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/memories/{id}/history',
    operationId: 'getMemoryHistory',
    response: z.array(MemoryVersionSchema),
    summary: `A memory's versions after version \`after\` (0 by default), oldest first, \`limit\` at a time (1 to ${MAX_PAGE_SIZE}, ${HISTORY_PAGE} by default): who, when, what changed`,
    tag: 'memories',
    returns: 'The versions, oldest first; a full page may have more after its last version',
    params: memoryRequest.params,
    query: HistoryQuerySchema,
    access: {
      kind: 'viewer',
      requested: ({ query: { after: _after, limit: _limit, ...viewer } }) =>
        Object.keys(viewer).length > 0 ? viewer : undefined,
    },
    handle: async ({ mneme, params, query, viewer }) =>
      mneme.history({ id: params.id, viewer, after: query.after, limit: query.limit }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/memories/{id}/links',
    operationId: 'getMemoryLinks',
    response: z.array(MemoryLinkSchema),
    summary: 'Links from and to a memory',
    tag: 'memories',
    returns: 'The links: `{ sourceId, targetId, type, strength, createdAt }`',
    ...memoryRequest,
    handle: async ({ mneme, params, viewer }) => mneme.links({ id: params.id, viewer }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/memories/{id}/sources',
    operationId: 'getMemorySources',
    response: z.array(MessageSchema),
    summary: 'The messages a memory came from (user keys: only those of channels they belong to, or public ones)',
    tag: 'memories',
    returns: 'The messages: `{ id, channelId, senderId, role, content, topicId, replyTo, externalId, createdAt }`',
    ...memoryRequest,
    handle: async ({ mneme, params, viewer }) => mneme.sources({ id: params.id, viewer }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/memories/search',
    operationId: 'searchMemories',
    response: RecallResultSchema,
    summary: "Recall: hybrid search in the viewer's scopes; every hit carries score, breakdown, match and ranks",
    tag: 'recall',
    returns: '`{ mode, hits, vectorLeg, queries, weights }`',
    reads: true,
    body: RecallInputSchema,
    access: { kind: 'viewer', requested: ({ body }) => body.viewer },
    handle: async ({ mneme, body, viewer }) => mneme.recall({ ...body, viewer }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/context',
    operationId: 'buildContext',
    response: ContextResultSchema,
    summary:
      "The context block for the next reply (topK and conversation awareness from the database's policy unless given)",
    tag: 'recall',
    returns:
      "`{ text, hits, omitted, belowThreshold, words, vectorLeg }`, as the library's `context()` returns it: the block, the memories in it (block order, with the reasons each was chosen), how many found memories did not fit the word budget, how many were under the quality threshold (`context.minRelevance`), the block's word count, and the vector leg's status",
    reads: true,
    body: ContextInputSchema,
    access: { kind: 'viewer', requested: ({ body }) => body.viewer },
    handle: async ({ mneme, body, viewer }) => mneme.context({ ...body, viewer }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/messages',
    operationId: 'ingestMessage',
    response: IngestResultSchema,
    summary: 'Append one message; 202 at once, facts are extracted in the background',
    tag: 'ingest',
    returns:
      '`{ messages, duplicate, queued, command }`: the appended messages (each with `duplicate`), whether all were already stored, whether extraction was queued, what a chat command did',
    creates: true,
    status: 202,
    body: IngestInputSchema,
    access: { kind: 'self', user: ({ body }) => (body.role === 'user' ? body.sender : undefined) },
    handle: async ({ mneme, body }) => mneme.ingest(body),
  }),
  defineRoute({
    method: 'post',
    path: '/api/messages/batch',
    operationId: 'ingestBatch',
    response: IngestBatchResultSchema,
    summary: `Append up to ${MAX_INGEST_BATCH} messages and exchanges in one transaction, in order (as the library's ingestMany); a bad item refuses the whole batch, naming its index; 202 at once`,
    tag: 'ingest',
    returns:
      '`{ results }`: for each item, in order, `{ messages, duplicate, queued, command }` as `POST /api/messages` answers',
    creates: true,
    status: 202,
    body: IngestBatchSchema,
    access: { kind: 'self', user: ({ body }) => body.messages.flatMap(speakerOf) },
    handle: async ({ mneme, body }) => committedAs(mneme.ingestMany(body.messages), (results) => ({ results })),
  }),
  defineRoute({
    method: 'post',
    path: '/api/exchanges',
    operationId: 'ingestExchange',
    response: IngestResultSchema,
    summary: 'Append a user message and the assistant reply; 202 at once, extraction runs in the background',
    tag: 'ingest',
    returns:
      '`{ messages, duplicate, queued, command }`: the appended messages (each with `duplicate`), whether all were already stored, whether extraction was queued, what a chat command did',
    creates: true,
    status: 202,
    body: IngestExchangeInputSchema,
    access: { kind: 'self', user: ({ body }) => body.userId },
    handle: async ({ mneme, body }) => mneme.ingestExchange(body),
  }),
  defineRoute({
    method: 'post',
    path: '/api/memories/extract/{topicId}',
    operationId: 'extractTopic',
    response: TopicExtractionReportSchema,
    summary: 'Conversation extraction of a topic: its new messages become session memories (administrator key)',
    tag: 'ingest',
    returns: '`{ messages, created, updated, ... }`: the memories created and updated, with their content',
    params: z.strictObject({ topicId: TopicIdSchema }),
    access: topicExtraction,
    handle: async ({ mneme, params }) => mneme.extract(params.topicId),
  }),
  defineRoute({
    method: 'post',
    path: '/api/memories/extract-work/{sessionId}',
    operationId: 'extractWorkSession',
    response: WorkExtractionReportSchema,
    summary: 'Work extraction of a session of a managed project, refused otherwise (administrator key)',
    tag: 'ingest',
    returns: '`{ messages, created, updated, ... }`: the memories created and updated, with their content',
    params: z.strictObject({ sessionId: TopicIdSchema }),
    access: topicExtraction,
    handle: async ({ mneme, params }) => mneme.extractWork(params.sessionId),
  }),
  defineRoute({
    method: 'post',
    path: '/api/topics',
    operationId: 'createTopic',
    response: TopicSchema,
    summary: 'Create or rename a topic (a conversation session), or move it into a project (administrator key)',
    tag: 'directory',
    returns: 'The topic',
    status: 201,
    body: CreateTopicInputSchema,
    access: {
      kind: 'admin',
      reason:
        "topics and their members are declared by an administrator: they decide who reads the topic's session memories, and a user key cannot make itself a member",
    },
    handle: async ({ mneme, body }) => mneme.createTopic(body),
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects',
    operationId: 'createProject',
    response: ProjectSchema,
    summary: 'Create or update a project; work sessions are extracted only for managed projects',
    tag: 'directory',
    returns: 'The project',
    status: 201,
    body: CreateProjectInputSchema,
    access: {
      kind: 'admin',
      reason: 'projects and their members are declared by an administrator, and `managed` turns on work extraction',
    },
    handle: async ({ mneme, body }) => mneme.createProject(body),
  }),
  defineRoute({
    method: 'put',
    path: '/api/channels/{id}',
    operationId: 'putChannel',
    response: ChannelSchema,
    summary:
      'Declare a channel: visibility `direct`, `private` or `public` (facts said there may become global), and its members (replacing them); each left out is kept (a new channel is private)',
    tag: 'directory',
    returns: '`{ id, visibility, members }`',
    params: ChannelParamsSchema,
    body: PutChannelInputSchema.omit({ id: true }),
    access: {
      kind: 'admin',
      reason: 'who reads a channel is declared by an administrator; a user key cannot make itself a member',
    },
    handle: async ({ mneme, params, body }) => mneme.putChannel({ ...body, id: params.id }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/channels/{id}',
    operationId: 'getChannel',
    response: ChannelSchema,
    summary: 'A channel: its visibility and members (user keys: only channels they belong to, or public ones)',
    tag: 'directory',
    returns: '`{ id, visibility, members }`',
    params: ChannelParamsSchema,
    access: { kind: 'viewer', requested: ({ params }) => ({ channelId: params.id }) },
    handle: async ({ mneme, params }) => mneme.channel(params.id),
  }),
  defineRoute({
    method: 'get',
    path: '/api/channels',
    operationId: 'listChannels',
    response: z.array(ChannelSummarySchema),
    summary: 'Every channel with messages (user keys: only channels they belong to, or public ones)',
    tag: 'directory',
    returns: 'The channels: `{ id, visibility, latestMessageId, extractedThrough }`, by id',
    access: { kind: 'viewer', requested: () => undefined },
    handle: async ({ mneme }) => mneme.channels(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/channels/{id}/messages',
    operationId: 'listChannelMessages',
    response: MessagePageSchema,
    summary: `A channel's messages after \`after\` (a message id, 0 by default), oldest first, \`limit\` at a time (1 to ${MAX_MESSAGE_PAGE}, 50 by default), each with the active memories extracted from it that the key may see (user keys: only channels they belong to, or public ones)`,
    tag: 'ingest',
    returns:
      '`{ channelId, messages, nextAfterId }`: each message with `memories: [{ id, content, scope, category, source }]`',
    params: ChannelParamsSchema,
    query: MessagePageQuerySchema,
    access: { kind: 'viewer', requested: ({ params }) => ({ channelId: params.id }) },
    handle: async ({ mneme, params, query }) =>
      mneme.messages({ channelId: params.id, afterId: query.after, limit: query.limit }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/channels/{id}/turns',
    operationId: 'listTurns',
    response: z.array(MessageSchema),
    summary:
      "Turn memory: a channel's last `count` messages (1 to 50; the policy's `ingest.turns`, 10 by default, when left out), oldest first (user keys: only channels they belong to, or public ones)",
    tag: 'ingest',
    returns:
      'The messages: `{ id, channelId, senderId, role, content, topicId, replyTo, externalId, createdAt }`, oldest first',
    params: ChannelParamsSchema,
    query: TurnsQuerySchema,
    access: { kind: 'viewer', requested: ({ params }) => ({ channelId: params.id }) },
    handle: async ({ mneme, params, query }) =>
      mneme.turns({ channelId: params.id, ...(query.count === undefined ? {} : { count: query.count }) }),
  }),
  defineRoute({
    method: 'put',
    path: '/api/users/{id}',
    operationId: 'setDisplayName',
    response: UserSchema,
    summary: 'Set the display name extracted facts use for a user',
    tag: 'directory',
    returns: 'The user',
    params: UserParamsSchema,
    body: DisplayNameInputSchema.omit({ userId: true }),
    access: { kind: 'self', user: ({ params }) => params.id },
    handle: async ({ mneme, params, body }) => mneme.setDisplayName({ ...body, userId: params.id }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/users/{id}/data',
    operationId: 'purgeUser',
    response: PurgeReportSchema,
    summary: 'Purge everything about a user (messages, memories, vectors, versions, links); returns counts',
    tag: 'users',
    returns: 'How many rows of each kind were deleted',
    params: UserParamsSchema,
    access: { kind: 'self', user: ({ params }) => params.id },
    handle: async ({ mneme, params }) => mneme.purgeUser(params.id),
  }),
  defineRoute({
    method: 'post',
    path: '/api/maintenance/run',
    operationId: 'runMaintenance',
    response: MaintenanceReportSchema,
    summary: 'Run maintenance now (decay, episodes, consolidate, link, dream; all by default); a report per task',
    tag: 'maintenance',
    returns: 'A report per task that ran',
    body: MaintainRequestSchema,
    access: { kind: 'admin', reason: 'maintenance rewrites memories of every scope' },
    handle: async ({ mneme, body }) => mneme.maintain(body),
  }),
  defineRoute({
    method: 'get',
    path: '/api/maintenance',
    operationId: 'getMaintenanceStatus',
    response: MaintenanceStatusSchema,
    summary:
      "Each maintenance task's state (watermark, last run), its last report in this process, and the extraction backlog per channel",
    tag: 'maintenance',
    returns:
      '`{ tasks: [{ task, enabled, states, lastReport, lastReportAt }], extraction: [{ channelId, watermark, backlog, lastRunAt }] }`',
    access: { kind: 'admin', reason: 'maintenance state covers every channel and scope' },
    handle: async ({ mneme }) => mneme.maintenanceStatus(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/analytics',
    operationId: 'getAnalytics',
    response: AnalyticsSeriesSchema,
    summary:
      'The series of the analytics charts: memories added per day (30 days), strength / salience / importance distributions under the decay, archives by cause, extraction backlog',
    tag: 'analytics',
    returns: '`{ addedPerDay, distributions, archivedBy, recentlyFaded, extractionBacklog }`',
    access: { kind: 'admin', reason: 'analytics count memories of every scope' },
    handle: async ({ mneme }) => mneme.analytics(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/stats',
    operationId: 'getStats',
    response: MemoryStatsSchema,
    summary: 'Totals, by scope and category, pinned, added in the last 7 days, expiring, the 5 most accessed',
    tag: 'analytics',
    returns: 'The totals',
    access: { kind: 'admin', reason: 'stats count memories of every scope and show the most accessed ones' },
    handle: async ({ mneme }) => mneme.stats(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/policy',
    operationId: 'getPolicy',
    response: PolicyStateSchema,
    summary: "The database's policy: its preset, the settings changed on top of it, and the effective policy",
    tag: 'analytics',
    returns: 'The preset, its version, the changed settings and the effective policy',
    access: { kind: 'admin', reason: "the policy says how every user's memories are kept and recalled" },
    handle: async ({ mneme }) => mneme.policy(),
  }),
];
