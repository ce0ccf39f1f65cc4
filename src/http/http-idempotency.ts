import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Principal } from '../core/access.js';
import { MnemeError } from '../core/errors.js';
import type { IdempotencyKeys } from '../core/idempotency.js';
import type { Route, RouteInput } from './http-route.js';

/** The methods an `Idempotency-Key` applies to; on reads (GET, and POSTs marked `reads`) it is ignored. */
const writeMethods: ReadonlySet<Route['method']> = new Set(['post', 'put', 'patch', 'delete']);

/**
 * Runs a route's work under the request's `Idempotency-Key`, if it sent one to a write route (ADR 14):
 * the first request does the work and its success is stored; a retry with the same key and request
 * gets the stored status and body again (with `Idempotent-Replayed: true`) without the work. A failed
 * first request stores nothing, so a retry does the work, unless it committed its writes before it failed (its
 * error carries what it committed, `MnemeError.committed`): that is stored as its answer.
 */
export async function respondIdempotently(
  context: Context,
  keys: IdempotencyKeys,
  route: Route,
  principal: Principal | undefined,
  input: RouteInput,
  work: () => Promise<{ status: number; body: unknown }>,
): Promise<Response> {
  const key = context.req.header('idempotency-key');
  const json = (status: number, body: string, replayed: boolean) =>
    context.body(body, status as ContentfulStatusCode, {
      'Content-Type': 'application/json',
      ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}),
    });
  if (key === undefined || principal === undefined || !writeMethods.has(route.method) || route.reads) {
    const { status, body } = await work();
    return json(status, JSON.stringify(body), false);
  }
  const request = { method: route.method, path: context.req.path, ...input };
  const begun = await keys.begin({ principal, key, request });
  if (!('complete' in begun)) return json(begun.status, begun.body, true);
  let response: { status: number; body: string };
  try {
    const { status, body } = await (route.creates ? begun.run(work) : work());
    response = { status, body: JSON.stringify(body) };
  } catch (error) {
    // Work that committed before it failed (the error says so) is answered, to the retry under this key, with what
    // it committed: done again, what it stored would be stored twice (attack22). Anything else is given back.
    if (error instanceof MnemeError && error.committed !== undefined) {
      const committed = { status: route.status ?? 200, body: JSON.stringify(error.committed) };
      await begun.complete(committed).catch(() => {});
    } else {
      await begun.release().catch(() => {});
    }
    throw error;
  }
  await begun.complete(response);
  return json(response.status, response.body, false);
}
