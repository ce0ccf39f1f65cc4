import { ErrorCode, MnemeError } from './errors.js';
import type { Viewer } from './types.js';

/**
 * Who is calling a face. An administrator may act for any viewer; a user-bound caller acts only
 * as that user: the viewer's `userId` is forced to its own, so other users' personal memories stay
 * out of reach, and it may purge only its own data.
 */
/**
 * Who a request acts as. An administrator key's `keyId` tells two keys of one label apart (the
 * service's `--open` mode has none); labels are for people and need not be unique. `keyCreatedAt`
 * (epoch ms) is when that key was made. A user key's `keyId` lets its posts be written only while it is
 * active (`IngestOptions.keyId`).
 */
export type Principal =
  | { kind: 'admin'; label: string; keyId?: number; keyCreatedAt?: number }
  | { kind: 'user'; userId: string; label: string; keyId?: number };

/**
 * Who may call an operation of a face, declared with the operation's input; `Input` is that input, parsed.
 *
 * - `admin`: administrator keys only; `reason` says why user-bound keys are refused.
 * - `self`: an administrator, or a user-bound key acting for its own user; `user` names the user the
 *   request acts for (a list when it acts for several, as a batch; undefined when it acts for none).
 * - `viewer`: any key; `requested` is the viewer the request asks for, and a user-bound key's
 *   `userId` is forced into it (see `viewerFor`).
 * - `open`: no key at all; `reason` says why.
 */
export type AccessRule<Input> =
  | { kind: 'admin'; reason: string }
  | { kind: 'self'; user(input: Input): string | readonly string[] | undefined }
  | { kind: 'viewer'; requested(input: Input): Viewer | undefined }
  | { kind: 'open'; reason: string };

/**
 * Applies a rule to an authenticated principal: throws FORBIDDEN when the rule refuses it, and returns
 * the viewer a `viewer` rule lets the request act as (undefined for the other rules). `what` names the
 * operation in the refusal.
 */
export function admit<Input>(
  principal: Principal,
  rule: AccessRule<Input>,
  input: Input,
  what: string,
): Viewer | undefined {
  if (rule.kind === 'open') return undefined;
  if (rule.kind === 'admin') {
    assertAdmin(principal, what);
    return undefined;
  }
  if (rule.kind === 'viewer') return viewerFor(principal, rule.requested(input));
  const users = rule.user(input);
  for (const userId of typeof users === 'string' ? [users] : (users ?? [])) assertMayActFor(principal, userId);
  return undefined;
}

/** The viewer a principal may use for a request that asked for `requested`. */
function viewerFor(principal: Principal, requested: Viewer | undefined): Viewer | undefined {
  if (principal.kind === 'admin') return requested;
  return { ...requested, userId: principal.userId };
}

/** Refuses unless the principal may act on this user's data. */
function assertMayActFor(principal: Principal, userId: string): void {
  if (principal.kind === 'user' && principal.userId !== userId) {
    throw new MnemeError(ErrorCode.Forbidden, `this key acts as user ${principal.userId} and cannot act for ${userId}`);
  }
}

/** Refuses unless the principal is an administrator. */
function assertAdmin(principal: Principal, what: string): void {
  if (principal.kind !== 'admin') {
    throw new MnemeError(ErrorCode.Forbidden, `${what} needs an administrator key (this key is bound to a user)`);
  }
}
