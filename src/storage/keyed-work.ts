import { AsyncLocalStorage } from 'node:async_hooks';
import { ErrorCode, MnemeError } from '../core/errors.js';

/** The claim on an Idempotency-Key that a request's work runs under: its row, as the claim wrote it. */
export interface HeldKey {
  principal: string;
  key: string;
  /** The claim's `locked_until`: a row taken over by another process since has another, and is not counted on. */
  lockedUntil: number;
}

interface KeyedWork {
  held: HeldKey;
  /** False once the work settled: what it started and outlives it (a background worker) counts nothing. */
  open: boolean;
}

const keyedWork = new AsyncLocalStorage<KeyedWork>();

/**
 * Runs a keyed request's work (ADR 14, 2026-12-04): each durable write transaction of it that changes rows also
 * counts itself on the key's row (`committed`), in that transaction. A process that dies after such a commit and
 * before the response is stored leaves the count, so the retry is told the work was done instead of doing it twice.
 */
export async function runUnderKey<T>(held: HeldKey, work: () => Promise<T>): Promise<T> {
  const state: KeyedWork = { held, open: true };
  try {
    return await keyedWork.run(state, work);
  } finally {
    state.open = false;
  }
}

/** The key whose row a durable write transaction beginning now counts itself on when it changes rows, or null. */
export function keyToCount(): HeldKey | null {
  const state = keyedWork.getStore();
  return state?.open ? state.held : null;
}

/**
 * The error of keyed work whose transaction found its claim gone when it counted itself: another request under the
 * key took it over once its 5 minutes had passed by the clock (the request ran that long, or the clock jumped
 * forward: attack 25, time), or it expired. Thrown inside the transaction, which then writes nothing: the request
 * that holds the claim now does the work, so it is not done twice.
 */
export function claimTakenOver(held: HeldKey): MnemeError {
  return new MnemeError(
    ErrorCode.Conflict,
    `the request with Idempotency-Key ${held.key} lost its claim on the key before its work was written (its 5 minutes passed by the clock and a retry took the key over, or its 24 hours passed): nothing of it was written; send the request again with the key to get the response stored under it`,
  );
}
