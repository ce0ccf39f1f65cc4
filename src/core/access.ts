import { ErrorCode, MnemeError } from './errors.js';
import type { Viewer } from './types.js';

/**
 * Who is calling a face. An administrator may act for any viewer; a user-bound caller acts only
 * as that user: the viewer's `userId` is forced to its own, so other users' personal memories stay
 * out of reach, and it may purge only its own data.
 */
export type Principal = { kind: 'admin'; label: string } | { kind: 'user'; userId: string; label: string };

/** The viewer a principal may use for a request that asked for `requested`. */
export function viewerFor(principal: Principal, requested: Viewer | undefined): Viewer | undefined {
  if (principal.kind === 'admin') return requested;
  return { ...requested, userId: principal.userId };
}

/** Refuses unless the principal may act on this user's data. */
export function assertMayActFor(principal: Principal, userId: string): void {
  if (principal.kind === 'user' && principal.userId !== userId) {
    throw new MnemeError(ErrorCode.Forbidden, `this key acts as user ${principal.userId} and cannot act for ${userId}`);
  }
}

/** Refuses unless the principal is an administrator. */
export function assertAdmin(principal: Principal, what: string): void {
  if (principal.kind !== 'admin') {
    throw new MnemeError(ErrorCode.Forbidden, `${what} needs an administrator key (this key is bound to a user)`);
  }
}
