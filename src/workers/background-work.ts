import { AsyncLocalStorage } from 'node:async_hooks';

const background = new AsyncLocalStorage<true>();

/**
 * Runs `work` as background work (the extraction worker, the maintenance scheduler): every call it
 * makes, however deep in its awaits, is known to be background work, and an adapter that holds the
 * event loop (SQLite is synchronous) cuts it into slices that yield, so requests are served in
 * between. A call made for a caller that waits (a request, a command) is never held back.
 */
export function runInBackground<T>(work: () => Promise<T>): Promise<T> {
  return background.run(true, work);
}

/** True inside `runInBackground`. */
export function isBackgroundWork(): boolean {
  return background.getStore() === true;
}
