import type { z } from 'zod';
import { assertAdmin, assertMayActFor, type Principal, viewerFor } from '../core/access.js';
import { type MaintainInput, MaintainInputSchema } from '../core/maintenance/maintain.js';
import type { Mneme } from '../core/mneme.js';
import {
  ContextInputSchema,
  type CreateProjectInput,
  CreateProjectInputSchema,
  type CreateTopicInput,
  CreateTopicInputSchema,
  type DisplayNameInput,
  DisplayNameInputSchema,
  type IngestExchangeInput,
  IngestExchangeInputSchema,
  type IngestInput,
  IngestInputSchema,
  type ListFilter,
  ListFilterSchema,
  MemoryPatchSchema,
  parseInput,
  RecallInputSchema,
  RememberInputSchema,
  UserIdSchema,
  ViewerSchema,
} from '../core/schemas.js';
import type { Viewer } from '../core/types.js';

/** What a handler gets: the engine, who is calling, and the request's parts. */
export interface RouteRequest {
  mneme: Mneme;
  principal: Principal;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
}

/** One endpoint: the OpenAPI document and the router are both built from this table. */
export interface Route {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/api/memories/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** The JSON body's schema (shared with the library), when the endpoint takes one. */
  body?: z.ZodType;
  /** The query string's schema, when the endpoint reads one. */
  query?: z.ZodType;
  /** Success status; 200 unless said. */
  status?: number;
  handle(request: RouteRequest): Promise<unknown>;
}

/** `?userId=&channelId=&projectId=&topicId=`: the viewer of a per-memory request. */
const ViewerQuerySchema = ViewerSchema;

/** The viewer a request acts as: the query's viewer, with a user-bound key's user forced in. */
function requestViewer(request: RouteRequest): Viewer | undefined {
  const { userId, channelId, projectId, topicId } = request.query;
  const asked =
    userId || channelId || projectId || topicId ? parseInput(ViewerQuerySchema, request.query, 'viewer') : undefined;
  return viewerFor(request.principal, asked);
}

const id = (request: RouteRequest) => request.params.id ?? '';
/** The memory a per-memory request is about, and the viewer who must be able to see it. */
const target = (request: RouteRequest) => ({ id: id(request), viewer: requestViewer(request) });

export const apiRoutes: readonly Route[] = [
  {
    method: 'post',
    path: '/api/memories',
    summary: 'Store a manual memory (source manual; scope session refused; project needs projectId)',
    tag: 'memories',
    body: RememberInputSchema,
    status: 201,
    handle: async ({ mneme, principal, body }) => {
      const input = parseInput(RememberInputSchema, body, 'memory');
      if (input.scope === 'personal' && input.userId) assertMayActFor(principal, input.userId);
      return mneme.remember({ ...(body as object), actor: principal.label } as Parameters<Mneme['remember']>[0]);
    },
  },
  {
    method: 'get',
    path: '/api/memories',
    summary: 'List memories by scope, owner, category and archive state, newest first',
    tag: 'memories',
    query: ListFilterSchema.omit({ viewer: true }),
    handle: async ({ mneme, principal, query }) => {
      // A user-bound key lists only what its user may see; the query's strings are validated by `list`.
      const viewer = principal.kind === 'admin' ? undefined : viewerFor(principal, pickViewer(query));
      return mneme.list({ ...query, ...(viewer ? { viewer } : {}) } as ListFilter);
    },
  },
  {
    method: 'get',
    path: '/api/memories/{id}',
    summary: 'One memory',
    tag: 'memories',
    query: ViewerQuerySchema,
    handle: async (request) => request.mneme.get(target(request)),
  },
  {
    method: 'patch',
    path: '/api/memories/{id}',
    summary: 'Edit a memory: new content is re-embedded, a version is kept, importance is clamped to 0..1',
    tag: 'memories',
    body: MemoryPatchSchema,
    query: ViewerQuerySchema,
    handle: async (request) => {
      const patch = parseInput(MemoryPatchSchema, request.body, 'update');
      return request.mneme.update({
        ...patch,
        id: id(request),
        viewer: requestViewer(request),
        actor: request.principal.label,
      });
    },
  },
  {
    method: 'delete',
    path: '/api/memories/{id}',
    summary: 'Forget a memory: soft delete, vector removed, restorable',
    tag: 'memories',
    query: ViewerQuerySchema,
    handle: async (request) => request.mneme.forget({ ...target(request), actor: request.principal.label }),
  },
  {
    method: 'post',
    path: '/api/memories/{id}/restore',
    summary: 'Restore a forgotten memory',
    tag: 'memories',
    query: ViewerQuerySchema,
    handle: async (request) => request.mneme.restore({ ...target(request), actor: request.principal.label }),
  },
  {
    method: 'get',
    path: '/api/memories/{id}/history',
    summary: 'Every version of a memory: who, when, what changed',
    tag: 'memories',
    query: ViewerQuerySchema,
    handle: async (request) => request.mneme.history(target(request)),
  },
  {
    method: 'get',
    path: '/api/memories/{id}/links',
    summary: 'Links from and to a memory',
    tag: 'memories',
    query: ViewerQuerySchema,
    handle: async (request) => request.mneme.links(target(request)),
  },
  {
    method: 'post',
    path: '/api/memories/search',
    summary: "Recall: hybrid search in the viewer's scopes; every hit carries score, breakdown, match and ranks",
    tag: 'recall',
    body: RecallInputSchema,
    handle: async ({ mneme, principal, body }) => {
      const input = parseInput(RecallInputSchema, body, 'search');
      return mneme.recall({ ...input, viewer: viewerFor(principal, input.viewer) });
    },
  },
  {
    method: 'post',
    path: '/api/context',
    summary: 'The context block for the next reply (conversation-aware, topK 5 by default)',
    tag: 'recall',
    body: ContextInputSchema,
    handle: async ({ mneme, principal, body }) => {
      const input = parseInput(ContextInputSchema, body, 'context');
      const { text, hits, ...rest } = await mneme.context({ ...input, viewer: viewerFor(principal, input.viewer) });
      return { context: text, memories: hits, ...rest };
    },
  },
  {
    method: 'post',
    path: '/api/messages',
    summary: 'Append one message; 202 at once, facts are extracted in the background',
    tag: 'ingest',
    body: IngestInputSchema,
    status: 202,
    handle: async ({ mneme, principal, body }) => {
      const input = parseInput(IngestInputSchema, body, 'message');
      if (input.role === 'user') assertMayActFor(principal, input.sender);
      return mneme.ingest(body as IngestInput);
    },
  },
  {
    method: 'post',
    path: '/api/exchanges',
    summary: 'Append a user message and the assistant reply; 202 at once, extraction runs in the background',
    tag: 'ingest',
    body: IngestExchangeInputSchema,
    status: 202,
    handle: async ({ mneme, principal, body }) => {
      const input = parseInput(IngestExchangeInputSchema, body, 'exchange');
      assertMayActFor(principal, input.userId);
      return mneme.ingestExchange(body as IngestExchangeInput);
    },
  },
  {
    method: 'post',
    path: '/api/memories/extract/{topicId}',
    summary: 'Conversation extraction of a topic: its new messages become session memories',
    tag: 'ingest',
    handle: async ({ mneme, params }) => mneme.extract(params.topicId ?? ''),
  },
  {
    method: 'post',
    path: '/api/memories/extract-work/{sessionId}',
    summary: 'Work extraction of a session of a managed project (refused otherwise)',
    tag: 'ingest',
    handle: async ({ mneme, params }) => mneme.extractWork(params.sessionId ?? ''),
  },
  {
    method: 'post',
    path: '/api/topics',
    summary: 'Create or rename a topic (a conversation session), optionally in a project',
    tag: 'directory',
    body: CreateTopicInputSchema,
    status: 201,
    handle: async ({ mneme, body }) => mneme.createTopic(body as CreateTopicInput),
  },
  {
    method: 'post',
    path: '/api/projects',
    summary: 'Create or update a project; work sessions are extracted only for managed projects',
    tag: 'directory',
    body: CreateProjectInputSchema,
    status: 201,
    handle: async ({ mneme, principal, body }) => {
      assertAdmin(principal, 'managing projects');
      return mneme.createProject(body as CreateProjectInput);
    },
  },
  {
    method: 'put',
    path: '/api/users/{id}',
    summary: 'Set the display name extracted facts use for a user',
    tag: 'directory',
    body: DisplayNameInputSchema.omit({ userId: true }),
    handle: async ({ mneme, principal, params, body }) => {
      const userId = parseInput(UserIdSchema, params.id ?? '', 'user id');
      assertMayActFor(principal, userId);
      return mneme.setDisplayName({ ...(body as object), userId } as DisplayNameInput);
    },
  },
  {
    method: 'delete',
    path: '/api/users/{id}/data',
    summary: 'Purge everything about a user (messages, memories, vectors, versions, links); returns counts',
    tag: 'users',
    handle: async (request) => {
      const userId = parseInput(UserIdSchema, id(request), 'user id');
      assertMayActFor(request.principal, userId);
      return request.mneme.purgeUser(userId);
    },
  },
  {
    method: 'post',
    path: '/api/maintenance/run',
    summary: 'Run maintenance now (decay, episodes, consolidate, link, dream; all by default); a report per task',
    tag: 'maintenance',
    body: MaintainInputSchema,
    handle: async ({ mneme, principal, body }) => {
      assertAdmin(principal, 'running maintenance');
      return mneme.maintain(body as MaintainInput);
    },
  },
  {
    method: 'get',
    path: '/api/stats',
    summary: 'Totals, by scope and category, pinned, added in the last 7 days, expiring, the 5 most accessed',
    tag: 'analytics',
    handle: async ({ mneme, principal }) => {
      assertAdmin(principal, 'stats across every scope');
      return mneme.stats();
    },
  },
];

function pickViewer(query: Record<string, string>): Viewer {
  return Object.fromEntries(
    (['channelId', 'projectId', 'topicId'] as const).flatMap((key) => (query[key] ? [[key, query[key]]] : [])),
  );
}
