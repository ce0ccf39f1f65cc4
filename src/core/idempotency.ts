import { createHash } from 'node:crypto';
import type { IdempotencyStore } from '../storage/idempotency-store.js';
import type { Principal } from './access.js';
import type { Clock } from './clock.js';
import { ErrorCode, MnemeError } from './errors.js';

/** How long a key and the response stored under it are kept: 24 hours after the first request. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a first request still running holds its key: retries meanwhile get CONFLICT. If the process
 * died mid-request, a retry after this does the work (ADR 14).
 */
export const IDEMPOTENCY_LOCK_MS = 5 * 60 * 1000;

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** A request under an idempotency key: who sent it, the key, and what it asked (hashed). */
export interface IdempotentRequest {
  principal: Principal;
  key: string;
  /** Anything that tells two requests apart (method, path, parsed input); hashed, never stored. */
  request: unknown;
}

/** A response stored under a key. */
export interface IdempotentResponse {
  status: number;
  /** JSON text, replayed byte for byte. */
  body: string;
}

/** The first request under a key, while it holds it: stores its response, or gives the key back. */
export interface IdempotencyClaimHandle {
  /**
   * Runs work that creates (a memory, messages, a topic: done twice, stored twice) so that its write transactions
   * count themselves on the key in the same transaction: if the process dies before `complete`, the retry is told it
   * was done instead of doing it again (ADR 14, 2026-12-04). Such work writes in one transaction.
   */
  run<T>(work: () => Promise<T>): Promise<T>;
  complete(response: IdempotentResponse): Promise<void>;
  release(): Promise<void>;
}

/** Idempotency keys (the HTTP face's `Idempotency-Key`): keys are per principal and expire (ADR 14). */
export interface IdempotencyKeys {
  /**
   * Claims the key for this request: the claim when the caller is the first (do the work, then
   * `complete`, or `release` when it failed); the stored response when the same request already
   * finished. INVALID_INPUT for a malformed key or a key used before with a different request;
   * CONFLICT while the first request is still running.
   */
  begin(request: IdempotentRequest): Promise<IdempotencyClaimHandle | IdempotentResponse>;
}

/** INVALID_INPUT unless `key` is a well-formed Idempotency-Key: 1 to 255 visible ASCII characters. */
export function checkIdempotencyKey(key: string): void {
  if (!KEY_PATTERN.test(key)) {
    throw new MnemeError(
      ErrorCode.InvalidInput,
      'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good key)',
    );
  }
}

/**
 * Whose key space a principal's keys live in: a user's id (all of a user's keys share one), an
 * administrator key's own id (two administrator keys may share a label), or, for the service open
 * without a key (`--open`, or before any key was made), its label under `open:`. Before session 4 an
 * administrator key's keys lived under its label (`admin:<label>`), as the open service's did until
 * session 6 (ADR 14): nothing writes there any more, and a retry of the same request still finds its row
 * there for a day, an administrator key only a row claimed since the key was made.
 */
function keySpace(principal: Principal): { principal: string; former?: { principal: string; expiresFrom: number } } {
  if (principal.kind === 'user') return { principal: `user:${principal.userId}` };
  const byLabel = `admin:${principal.label}`;
  if (principal.keyId === undefined) {
    return { principal: `open:${principal.label}`, former: { principal: byLabel, expiresFrom: 0 } };
  }
  const since = principal.keyCreatedAt ?? 0;
  return {
    principal: `admin-key:${principal.keyId}`,
    former: { principal: byLabel, expiresFrom: since + IDEMPOTENCY_KEY_TTL_MS },
  };
}

export function createIdempotencyKeys(
  store: IdempotencyStore,
  clock: Clock,
  /** How many purges the database has had (`MessageStore.purges`): a response stored after one keeps no body. */
  purges?: () => Promise<number>,
): IdempotencyKeys {
  /**
   * The claims whose `complete` or `release` failed (the store busy: another process held the write lock), by key
   * space and key: done again before the key's next request is claimed. Else the retry a 503 asks for met the claim
   * its failed request still held and was told 409 "still running" for 5 minutes (attack21), and one whose work was
   * done would do it again after them. Of this process only: a process that dies holds the claim until it expires.
   */
  const unfinished = new Map<string, () => Promise<void>>();
  const finish = async (id: string, write: () => Promise<void>) => {
    try {
      await write();
      unfinished.delete(id);
    } catch (error) {
      unfinished.set(id, write);
      throw error;
    }
  };
  return {
    async begin({ principal, key, request }) {
      checkIdempotencyKey(key);
      const { principal: space, former } = keySpace(principal);
      const id = `${space}\u0000${key}`;
      const owed = unfinished.get(id);
      if (owed) await finish(id, owed);
      const claim = {
        principal: space,
        key,
        requestSha256: createHash('sha256').update(JSON.stringify(request)).digest('hex'),
      };
      const now = clock.now();
      const expiresAt = now + IDEMPOTENCY_KEY_TTL_MS;
      const lockedUntil = now + IDEMPOTENCY_LOCK_MS;
      // A purge while the request runs erases its response too (its body may quote the purged user; attack22b).
      const purged = purges === undefined ? {} : { purges: await purges() };
      const existing = await store.claim({
        ...claim,
        now,
        lockedUntil,
        expiresAt,
        ...(former === undefined ? {} : { formerPrincipal: former.principal, formerExpiresFrom: former.expiresFrom }),
      });
      if (existing === null) {
        return {
          run: (work) => store.underKey({ principal: space, key, lockedUntil }, work),
          complete: (response) => finish(id, () => store.complete({ ...claim, expiresAt, ...purged }, response)),
          release: () => finish(id, () => store.release(claim.principal, key, lockedUntil)),
        };
      }
      if (existing.requestSha256 !== claim.requestSha256) {
        throw new MnemeError(
          ErrorCode.InvalidInput,
          `Idempotency-Key ${key} was used with a different request; send a new key for a new request`,
        );
      }
      const lockPassed = existing.lockedUntil <= now || existing.lockedUntil > lockedUntil + IDEMPOTENCY_LOCK_MS;
      if (existing.status === null && existing.committed && lockPassed) {
        // Its work committed, then its process stopped before the response was stored: done again, it would be done twice.
        throw new MnemeError(
          ErrorCode.Conflict,
          `the request with Idempotency-Key ${key} was done before: what it wrote was committed, but it stopped before its response was stored, so it cannot be replayed and is not done again; look it up (GET), and send a new key for a new request`,
        );
      }
      if (existing.status === null) {
        throw new MnemeError(
          ErrorCode.Conflict,
          `a request with Idempotency-Key ${key} is still running; retry in a moment to get its response`,
        );
      }
      if (existing.body === null) {
        // A purge erased the response (it may have quoted the purged user), not the key, or the key came with an
        // import, which carries no response (its ids are the source's; ADR 37): the work stays done once.
        throw new MnemeError(
          ErrorCode.Conflict,
          `the request with Idempotency-Key ${key} was done before (status ${existing.status}); its stored response is not kept (erased when a user's data was purged, or not carried when the database was restored from an export), so it cannot be replayed and is not done again; look it up (GET), and send a new key for a new request`,
        );
      }
      return { status: existing.status, body: existing.body };
    },
  };
}
