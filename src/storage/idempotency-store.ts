import type { HeldKey } from './keyed-work.js';

/** A stored idempotency key: the request it was first used with and, once that finished, its response. */
export interface IdempotencyRecord {
  /** SHA-256 (hex) of the first request (method, path, query, body). */
  requestSha256: string;
  /** The first request's response status, or null while it is still running. */
  status: number | null;
  /**
   * The first request's response body (JSON text); null while it is still running, or (status set) once
   * a purge erased it: the key stays, so the request is not done again.
   */
  body: string | null;
  /** Epoch ms until which a running first request holds the key. */
  lockedUntil: number;
  /**
   * True once the first request's work committed a write transaction that changed rows (ADR 14, 2026-12-04; work that
   * creates only). A claim with no response whose work committed is not taken over when its lock passes: its process
   * died between the work and storing the response, and the work done again would be done twice.
   */
  committed: boolean;
}

/** A claim on a key: who (the principal's key space), which key, for which request, until when. */
export interface IdempotencyClaim {
  principal: string;
  key: string;
  requestSha256: string;
  /** Epoch ms: rows whose `expiresAt` is not after it are deleted first. */
  now: number;
  /** How long the claimant holds the key while it works. */
  lockedUntil: number;
  /** When the row (and its stored response) is deleted. */
  expiresAt: number;
  /**
   * The key space this principal's keys lived in before (ADR 14, session 6): a row there for this key and this
   * request, finished or still held, is returned as this claim's existing row, so a retry that spans an upgrade
   * is not done twice. Rows there for another request are ignored.
   */
  formerPrincipal?: string;
  /** Only a former row that expires at or after this (epoch ms) counts: one claimed since then. */
  formerExpiresFrom?: number;
}

/**
 * A running row's `lockedUntil` past which the claim takes it over although it has not passed: more than twice the
 * lock's length after `now` (`claim.now` to `claim.lockedUntil`). No claim made by a correct clock reaches that far,
 * so its request's process claimed it while the clock ran fast (ADR 14, attack 25): waited for, it would refuse the
 * retry for as long as the clock was then set back. A live request that loses it so writes nothing (`claimTakenOver`).
 */
export function staleLockFrom(claim: Pick<IdempotencyClaim, 'now' | 'lockedUntil'>): number {
  return claim.lockedUntil + (claim.lockedUntil - claim.now);
}

/** Idempotency keys of the HTTP face (ADR 14): one row per principal and key, until it expires. */
export interface IdempotencyStore {
  /**
   * In one transaction: deletes expired keys, then claims this one. Returns null when the caller now
   * holds it (no row existed, or a running row of the same request whose `lockedUntil` passed, or lies further
   * ahead than `staleLockFrom`, and whose work committed nothing, taken over); otherwise the existing row, unchanged (or the former space's row: see
   * `formerPrincipal`).
   */
  claim(claim: IdempotencyClaim): Promise<IdempotencyRecord | null>;
  /**
   * Stores the response of the request that holds the key (written even if the row was deleted meanwhile). With
   * `purges`, the number of purges when the request began (`MessageStore.purges`): when a purge has run since, only
   * the status is stored, as a purge leaves every stored response (the body may quote the purged user).
   */
  complete(
    claim: Pick<IdempotencyClaim, 'principal' | 'key' | 'requestSha256' | 'expiresAt'> & { purges?: number },
    response: { status: number; body: string },
  ): Promise<void>;
  /**
   * Deletes the key while the claim that set `lockedUntil` still holds it, so the request may be tried again (it
   * failed); a claim another process took over since (its `lockedUntil` passed) is left alone.
   */
  release(principal: string, key: string, lockedUntil: number): Promise<void>;
  /**
   * Runs the work of the request holding the key (`runUnderKey`): each of its durable write transactions that changes
   * rows counts itself on the key's row in that same transaction (`IdempotencyRecord.committed`).
   */
  underKey<T>(held: HeldKey, work: () => Promise<T>): Promise<T>;
}
