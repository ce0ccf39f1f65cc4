import type { ExtractionLease, ExtractionStore } from '../../storage/extraction-store.js';

/** The first pause before asking again for a lease another holder keeps; it doubles up to `LONGEST_PAUSE_MS`. */
const FIRST_PAUSE_MS = 25;
const LONGEST_PAUSE_MS = 500;

/** Which watermark a lease is for: its `maintenance_state` channel key and task. */
export type LeaseKey = Pick<ExtractionLease, 'channelId' | 'task'>;

/** How `hold` gets a lease another live holder keeps. */
export interface HoldOptions {
  /** True: ask again until it is free (or expired); false: give up at once. */
  wait: boolean;
  /** Stops the waiting; `hold` then returns null. */
  signal?: AbortSignal;
}

/** The leases of one engine: one owner token, so one holder per process. */
export interface ExtractionLeases {
  /**
   * Runs `work` holding the lease of one watermark, renewed in the background every third of its
   * duration, and releases it afterwards (a release that fails leaves it to expire). Null, without
   * running `work`, when the lease stays with another holder (`wait: false`, or the signal aborted the wait).
   */
  hold<T>(
    key: LeaseKey,
    options: HoldOptions,
    work: (lease: ExtractionLease) => Promise<T>,
  ): Promise<{ value: T } | null>;
}

/** Leases over `store` for the holder `owner`, each lasting `ttlMs` unrenewed. */
export function createExtractionLeases(
  store: ExtractionStore,
  options: { owner: string; ttlMs: number },
): ExtractionLeases {
  return {
    async hold(key, { wait, signal }, work) {
      const lease: ExtractionLease = { ...key, owner: options.owner, ttlMs: options.ttlMs };
      let pause = FIRST_PAUSE_MS;
      while (!(await store.claim(lease))) {
        if (!wait || signal?.aborted) return null;
        await sleep(pause, signal);
        if (signal?.aborted) return null;
        pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
      }
      const renewal = setInterval(() => {
        store.claim(lease).catch(() => undefined);
      }, options.ttlMs / 3);
      renewal.unref();
      try {
        return { value: await work(lease) };
      } finally {
        clearInterval(renewal);
        await store.release(lease).catch(() => undefined);
      }
    },
  };
}

/** Resolves after `milliseconds`, or at once when `signal` aborts. */
function sleep(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, milliseconds);
    signal?.addEventListener('abort', done, { once: true });
  });
}
