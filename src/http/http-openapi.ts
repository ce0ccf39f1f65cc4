import { z } from 'zod';
import type { Route } from './http-routes.js';

const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** The OpenAPI 3.1 document of the HTTP API, generated from the same route table and zod schemas the server uses. */
export function buildOpenApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters: unknown[] = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => ({
      name: match[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (route.query) {
      const properties = (jsonSchemaOf(route.query).properties ?? {}) as Record<string, unknown>;
      for (const [name, schema] of Object.entries(properties)) {
        parameters.push({ name, in: 'query', required: false, schema });
      }
    }
    const status = String(route.status ?? 200);
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method] = {
      summary: route.summary,
      tags: [route.tag],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(route.body) } } } }
        : {}),
      responses: {
        [status]: { description: 'Success', content: { 'application/json': { schema: {} } } },
        default: {
          description: 'A problem (RFC 9457)',
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'mneme',
      version: '0.1.0',
      description: 'Long-term memory for conversational AI agents. Errors are application/problem+json.',
    },
    components: {
      schemas: { Problem: problemSchema },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths: {
      '/api/health': {
        get: { summary: 'Liveness (no authentication)', security: [], responses: { '200': { description: 'ok' } } },
      },
      ...paths,
    },
  };
}
