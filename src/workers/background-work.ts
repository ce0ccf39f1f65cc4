import { AsyncLocalStorage } from 'node:async_hooks';

const background = new AsyncLocalStorage<{ signal: AbortSignal | null }>();

/**
 * Runs `work` as background work (the extraction worker, the maintenance scheduler): every call it
 * makes, however deep in its awaits, is known to be background work, and an adapter that holds the
 * event loop (SQLite is synchronous) cuts it into slices that yield, so requests are served in
 * between. A call made for a caller that waits (a request, a command) is never held back. Once
 * `signal` aborts, the work's calls stop waiting for locks (they fail as if the wait had run out).
 */
export function runInBackground<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  return background.run({ signal: signal ?? null }, work);
}

/** Inside `runInBackground`: the signal it was given (null without one); outside it: undefined. */
export function backgroundWork(): { signal: AbortSignal | null } | undefined {
  return background.getStore();
}
