import type { z } from 'zod';
import type { AccessRule, Principal } from '../core/access.js';
import type { Mneme } from '../core/mneme.js';
import type { Viewer } from '../core/types.js';

type InputSchema = z.ZodType | undefined;
type Parsed<Schema extends InputSchema> = Schema extends z.ZodType ? z.output<Schema> : undefined;

/** A request's parts as its route's schemas parsed them (undefined where the route declares no schema). */
export interface RouteInput<Params = unknown, Query = unknown, Body = unknown> {
  params: Params;
  query: Query;
  body: Body;
}

type AccessKind = AccessRule<unknown>['kind'];

/** What an access rule hands the handler: nothing for `open`, the principal, and for `viewer` the viewer. */
type Grant<Kind extends AccessKind> = Kind extends 'open'
  ? unknown
  : Kind extends 'viewer'
    ? { principal: Principal; viewer: Viewer | undefined }
    : { principal: Principal };

/** What a handler receives: the engine, the parsed input and what its access rule grants. */
export type RouteRequest<Input, Kind extends AccessKind> = Input & { mneme: Mneme } & Grant<Kind>;

/**
 * One endpoint: its schemas, who may call it, and a handler that receives parsed, typed input.
 * The router, the access check and the OpenAPI document are all built from this.
 */
export interface RouteDefinition<
  Params extends InputSchema,
  Query extends InputSchema,
  Body extends InputSchema,
  Kind extends AccessKind,
  Response extends z.ZodType,
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/api/memories/{id}`. */
  path: string;
  /**
   * The operation's stable name in the OpenAPI document, camelCase, verb first (`searchMemories`,
   * `getChannel`): generated clients name their methods after it, so it never changes once released.
   */
  operationId: string;
  /** One line: what the endpoint does. */
  summary: string;
  /** The group it is listed under (`memories`, `recall`, `ingest`, ...). */
  tag: string;
  /** What a success answers with, in words (the OpenAPI response description). */
  returns: string;
  /**
   * What a success answers with, as a zod schema (from `core/result-schemas.ts`, the schema of what the
   * engine method returns): the document's response schema. `handle` must return its type.
   */
  response: Response;
  /**
   * A POST that only reads (search, context): an `Idempotency-Key` is ignored as on a GET, so a stored
   * answer is never replayed to a caller who may no longer read it (membership is checked by the engine).
   */
  reads?: true;
  /**
   * Work that, done a second time, stores its effect twice (a memory, messages, a topic). Under an `Idempotency-Key`
   * its write transaction counts itself on the key in that transaction, so a retry after its process died before the
   * response was stored is answered 409 instead of doing it again (ADR 14, 2026-12-04). Such work writes in one
   * transaction (`test/attack25-keyed-crash.test.ts` checks each). Work that may be done again (an upsert, a purge,
   * maintenance) leaves it out: its retry after such a crash does it again, completing what the first left undone.
   */
  creates?: true;
  /** Success status; 200 unless said. */
  status?: 200 | 201 | 202;
  /** Problems the route answers beyond every route's (401, 403, default), by status: when each is answered. */
  problems?: Readonly<Record<number, string>>;
  /** The path parameters' schema, when the path has any. */
  params?: Params;
  /** The query string's schema, when the endpoint reads one. */
  query?: Query;
  /** The JSON body's schema (shared with the library), when the endpoint takes one. */
  body?: Body;
  /** Who may call it; checked by the app before the handler runs. */
  access: AccessRule<RouteInput<Parsed<Params>, Parsed<Query>, Parsed<Body>>> & { kind: Kind };
  handle(
    request: RouteRequest<RouteInput<Parsed<Params>, Parsed<Query>, Parsed<Body>>, Kind>,
  ): Promise<z.output<Response>>;
}

/** A route of the table, its types erased (the app parses with the route's own schemas before calling it). */
export type Route = RouteDefinition<InputSchema, InputSchema, InputSchema, AccessKind, z.ZodType>;

/**
 * Declares a route. Required: `access` (who may call it), `operationId` and `response` (the zod schema of
 * what it returns), so no route reaches the OpenAPI document untyped or unnamed. The handler's input is
 * typed by the schemas the route declares, and its result must match `response`. A new route:
 *
 * ```ts
 * defineRoute({
 *   method: 'get', path: '/api/things/{id}', operationId: 'getThing', summary: 'One thing', tag: 'things',
 *   returns: 'The thing', response: ThingSchema, // core/result-schemas.ts, checked against the engine's type
 *   params: z.strictObject({ id: ThingIdSchema }),
 *   access: { kind: 'viewer', requested: () => undefined },
 *   handle: async ({ mneme, params }) => mneme.thing(params.id),
 * });
 * ```
 *
 * A result the document has no schema for yet gets one in `core/result-schemas.ts` (`.meta({ id })` names it
 * as a component) and a line in `result-schemas.test.ts` holding it equal to the engine's type; a request in
 * `http-app.test.ts` must answer the route's success, which that file parses with `response` (it fails on a
 * route none of its requests reached).
 */
export function defineRoute<
  Params extends InputSchema = undefined,
  Query extends InputSchema = undefined,
  Body extends InputSchema = undefined,
  Kind extends AccessKind = never,
  Response extends z.ZodType = z.ZodType,
>(definition: RouteDefinition<Params, Query, Body, Kind, Response>): Route {
  return definition;
}
