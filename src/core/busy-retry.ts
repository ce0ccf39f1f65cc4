import { ErrorCode, isMnemeError } from './errors.js';

/** Pauses, in all, a write made after its caller was answered waits for a busy database before it fails. */
export const BUSY_RETRY_MS = 60_000;
const FIRST_BUSY_PAUSE_MS = 250;
const LONGEST_BUSY_PAUSE_MS = 5_000;

/**
 * `work`, run again while it fails because another process holds the database (STORE_BUSY having written nothing:
 * no `committed` result, which a retry would store twice), after pauses of 0.25 s doubling to 5 s, for up to
 * `BUSY_RETRY_MS` of pauses in all; then its error is thrown. For the writes a face makes after it answered (the
 * exchange the proxy and the AI SDK middleware record once the reply is out): their caller cannot send them again,
 * as it would a 503. `onWait` hears the first busy failure.
 */
export async function retryWhileBusy<T>(work: () => Promise<T>, onWait?: (error: unknown) => void): Promise<T> {
  let paused = 0;
  for (let pause = FIRST_BUSY_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_BUSY_PAUSE_MS)) {
    try {
      return await work();
    } catch (error) {
      const busy = isMnemeError(error) && error.code === ErrorCode.StoreBusy && error.committed === undefined;
      if (!busy || paused >= BUSY_RETRY_MS) throw error;
      if (paused === 0) onWait?.(error);
      await new Promise((resolve) => setTimeout(resolve, pause));
      paused += pause;
    }
  }
}
