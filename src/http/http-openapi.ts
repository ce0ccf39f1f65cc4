import { z } from 'zod';
import type { AccessRule } from '../core/access.js';
import { ProblemSchema } from './http-problem.js';
import type { Route } from './http-route.js';

const problemContent = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/** How each access rule reads in the document, and the 403 it can answer. */
const accessDocumentation: Record<AccessRule<unknown>['kind'], { description: string; refusal?: string }> = {
  admin: {
    description: 'Access: an administrator key only; a key bound to a user gets 403.',
    refusal: 'The key is bound to a user',
  },
  self: {
    description:
      'Access: an administrator key, or a key bound to the user the request names; a key bound to another user gets 403. A user key also writes only user messages as itself into channels (and topics) it is a member of, its own personal memories and room or project memories of spaces it belongs to, never global ones (403 otherwise).',
    refusal:
      'The key is bound to another user than the one the request names, or names a space its user does not belong to',
  },
  viewer: {
    description:
      'Access: any key; a key bound to a user acts as a viewer carrying its own userId, names only channels (public ones, or those it is a member of), topics and projects it belongs to, and changes only memories its user wrote (403 otherwise).',
    refusal: 'The key is bound to a user who is not a member of a channel, topic or project the request names',
  },
  open: { description: 'Access: no key needed.' },
};

/** The header a write takes to be retried safely (ADR 14). */
const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    "Makes a write safe to retry: the first response (2xx) is stored for 24 hours under the key and this key's principal; a retry with the same key and the same request gets it again (header `Idempotent-Replayed: true`) without the work being done again; the same key with another request is 422, and while the first is still running 409 (also 409, not done again, when a user purge erased the stored response, when the database was restored from an export since (it carries the key, not the response), or when the first request's process stopped after its work that creates a memory or messages committed and before its response was stored). 1 to 255 visible ASCII characters; a UUID is a good key.",
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/**
 * Every route's response schema and the problem schema, converted together: each schema named with
 * `.meta({ id })` (core/result-schemas.ts) becomes one component that the responses reference.
 */
function responseSchemasOf(routes: readonly Route[]): {
  responses: Record<string, unknown>;
  components: Record<string, unknown>;
} {
  const wrapper = z.strictObject({
    responses: z.strictObject(Object.fromEntries(routes.map((route) => [route.operationId, route.response]))),
    problem: ProblemSchema,
  });
  const converted = JSON.parse(
    JSON.stringify(jsonSchemaOf(wrapper, 'output')).replaceAll('"#/$defs/', '"#/components/schemas/'),
  ) as { properties: { responses: { properties: Record<string, unknown> } }; $defs: Record<string, unknown> };
  return { responses: converted.properties.responses.properties, components: converted.$defs };
}

function parametersOf(schema: z.ZodType | undefined, location: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const properties = (jsonSchemaOf(schema).properties ?? {}) as Record<string, unknown>;
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path',
    schema: property,
  }));
}

/** The OpenAPI 3.1 document of the HTTP API, generated from the same route table and zod schemas the server uses. */
export function buildOpenApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const { responses, components } = responseSchemasOf(routes);
  for (const route of routes) {
    const parameters = [
      ...parametersOf(route.params, 'path'),
      ...parametersOf(route.query, 'query'),
      ...(route.method === 'get' || route.reads || route.access.kind === 'open' ? [] : [idempotencyKeyParameter]),
    ];
    const isOpen = route.access.kind === 'open';
    const { description, refusal } = accessDocumentation[route.access.kind];
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      description: 'reason' in route.access ? `${description} Why: ${route.access.reason}.` : description,
      tags: [route.tag],
      security: isOpen ? [] : [{ bearer: [] }],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(route.body) } } } }
        : {}),
      responses: {
        [String(route.status ?? 200)]: {
          description: route.returns,
          content: { 'application/json': { schema: responses[route.operationId] } },
        },
        ...(isOpen
          ? {}
          : { '401': { description: 'No API key, or an unknown or revoked one', content: problemContent } }),
        ...(refusal ? { '403': { description: refusal, content: problemContent } } : {}),
        ...Object.fromEntries(
          Object.entries(route.problems ?? {}).map(([status, when]) => [
            status,
            { description: when, content: problemContent },
          ]),
        ),
        default: { description: 'A problem (RFC 9457)', content: problemContent },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'mneme',
      version: '0.1.0',
      description:
        'Long-term memory for conversational AI agents. Errors are application/problem+json. Once an API key exists, every route but those marked "no key needed" takes `Authorization: Bearer <key>`; each route says who may call it. Before one exists (or with `mneme serve --open`), every caller is an administrator, on loopback only: a request naming another Host, or sent by a browser for a page of another origin (its `Origin` or `Sec-Fetch-Site`), is 403.',
    },
    components: {
      schemas: components,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`mneme keys create`): `Authorization: Bearer <key>`',
        },
      },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
