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
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path, e.g. `/api/memories/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** What a success answers with (the OpenAPI response description). */
  returns: string;
  /**
   * A POST that only reads (search, context): an `Idempotency-Key` is ignored as on a GET, so a stored
   * answer is never replayed to a caller who may no longer read it (membership is checked by the engine).
   */
  reads?: true;
  /** Success status; 200 unless said. */
  status?: 200 | 201 | 202;
  /** The path parameters' schema, when the path has any. */
  params?: Params;
  /** The query string's schema, when the endpoint reads one. */
  query?: Query;
  /** The JSON body's schema (shared with the library), when the endpoint takes one. */
  body?: Body;
  /** Who may call it; checked by the app before the handler runs. */
  access: AccessRule<RouteInput<Parsed<Params>, Parsed<Query>, Parsed<Body>>> & { kind: Kind };
  handle(request: RouteRequest<RouteInput<Parsed<Params>, Parsed<Query>, Parsed<Body>>, Kind>): Promise<unknown>;
}

/** A route of the table, its input types erased (the app parses with the route's own schemas before calling it). */
export type Route = RouteDefinition<InputSchema, InputSchema, InputSchema, AccessKind>;

/** Declares a route: the handler's input is typed by the schemas it declares, and `access` is required. */
export function defineRoute<
  Params extends InputSchema = undefined,
  Query extends InputSchema = undefined,
  Body extends InputSchema = undefined,
  Kind extends AccessKind = never,
>(definition: RouteDefinition<Params, Query, Body, Kind>): Route {
  return definition;
}
