import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRoute, type Route } from './http-route.js';
import { apiRoutes } from './http-routes.js';

/** What is wrong with each route's access rule, one line a route; empty when every rule is valid. */
function accessProblems(routes: readonly Route[]): string[] {
  return routes.flatMap((route) => {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    const access = route.access as Partial<Record<string, unknown>> | undefined;
    switch (access?.kind) {
      case 'admin':
      case 'open':
        return typeof access.reason === 'string' && access.reason.trim() !== ''
          ? []
          : [`${name}: an ${access.kind} rule needs a reason`];
      case 'self':
        return typeof access.user === 'function' ? [] : [`${name}: a self rule needs user(input)`];
      case 'viewer':
        return typeof access.requested === 'function' ? [] : [`${name}: a viewer rule needs requested(input)`];
      default:
        return [`${name}: no access rule`];
    }
  });
}

describe('the HTTP route table', () => {
  it('gives every route a valid access rule', () => {
    expect(accessProblems(apiRoutes)).toEqual([]);
  });

  it('opens only the health check and the OpenAPI document to callers without a key', () => {
    const open = apiRoutes.filter((route) => route.access.kind === 'open').map((route) => route.path);
    expect(open).toEqual(['/api/health', '/openapi.json']);
  });

  it('refuses to compile a route without an access rule, and the table check reports one that slips through', () => {
    const handle = async () => ({});
    const described = {
      method: 'get',
      operationId: 'x',
      summary: 'x',
      tag: 'x',
      returns: 'x',
      response: z.object({}),
      handle,
    } as const;
    // @ts-expect-error a route without `access` does not compile
    const withoutAccess = defineRoute({ ...described, path: '/nowhere' });
    // @ts-expect-error an open route without a reason does not compile
    const withoutReason = defineRoute({ ...described, path: '/open', access: { kind: 'open' } });
    const blankReason = defineRoute({ ...described, path: '/blank', access: { kind: 'open', reason: ' ' } });
    const routes = [withoutAccess, withoutReason, blankReason];
    expect(accessProblems(routes)).toEqual([
      'GET /nowhere: no access rule',
      'GET /open: an open rule needs a reason',
      'GET /blank: an open rule needs a reason',
    ]);
  });

  it('names every operation once, in camelCase, verb first', () => {
    const operationIds = apiRoutes.map((route) => route.operationId);
    expect(new Set(operationIds).size).toBe(operationIds.length);
    for (const operationId of operationIds) expect(operationId).toMatch(/^[a-z]+(?:[A-Z][a-z]*)*$/);
  });

  it('refuses to compile a route without an operationId or a response schema, or whose handler returns another type', () => {
    const access = { kind: 'open', reason: 'a test' } as const;
    const route = { method: 'get', path: '/thing', summary: 'x', tag: 'x', returns: 'x', access } as const;
    const response = z.strictObject({ name: z.string() });
    const handle = async () => ({ name: 'kestrel' });
    // @ts-expect-error a route without an operationId does not compile
    defineRoute({ ...route, response, handle });
    // @ts-expect-error a route without a response schema does not compile
    defineRoute({ ...route, operationId: 'getThing', handle });
    // @ts-expect-error a handler whose result is not what its response schema describes does not compile
    defineRoute({ ...route, operationId: 'getThing', response, handle: async () => ({ name: 7 }) });
    expect(defineRoute({ ...route, operationId: 'getThing', response, handle }).operationId).toBe('getThing');
  });
});
