import { ErrorCode, isMnemeError } from './errors.js';

/** How long, from its first failure, a write made after its caller was answered waits for a busy database. */
export const BUSY_RETRY_MS = 60_000;
const FIRST_BUSY_PAUSE_MS = 250;
const LONGEST_BUSY_PAUSE_MS = 5_000;

/**
 * `work`, run again while it fails because another process holds the database (STORE_BUSY having written nothing:
 * no `committed` result, which a retry would store twice), after pauses of 0.25 s doubling to 5 s, for up to
 * `BUSY_RETRY_MS` from its first failure; then its error is thrown. For the writes a face makes after it answered (the
 * exchange the proxy and the AI SDK middleware record once the reply is out): their caller cannot send them again,
 * as it would a 503. `onWait` hears the first busy failure.
 */
export async function retryWhileBusy<T>(work: () => Promise<T>, onWait?: (error: unknown) => void): Promise<T> {
  let firstFailure: number | undefined;
  for (let pause = FIRST_BUSY_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_BUSY_PAUSE_MS)) {
    try {
      return await work();
    } catch (error) {
      const busy = isMnemeError(error) && error.code === ErrorCode.StoreBusy && error.committed === undefined;
      // Counted from the first failure, the attempts' own busy waits included: a stop (SIGTERM) that waits for these
      // writes waits about a minute at most.
      const now = Date.now();
      firstFailure ??= now;
      if (!busy || now - firstFailure >= BUSY_RETRY_MS) throw error;
      if (now === firstFailure) onWait?.(error);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
