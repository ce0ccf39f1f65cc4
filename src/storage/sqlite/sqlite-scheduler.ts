import { backgroundWork } from '../../workers/background-work.js';
import type { Storage } from '../storage.js';
import { isSqliteBusy } from './sqlite-database.js';

/** Milliseconds of storage calls one turn of the event loop runs before the next background call yields. */
export const SQLITE_SLICE_MS = 10;

/** The longest pause between two attempts to take a lock held by another connection. */
const LONGEST_BACKOFF_MS = 100;

// The timers of the process as they were when this module loaded: a test that fakes timers must not
// freeze the yields and lock waits of a real database under it.
const { setImmediate: realSetImmediate, setTimeout: realSetTimeout, clearTimeout: realClearTimeout } = globalThis;

const nextTurn = () => new Promise<void>((resolve) => realSetImmediate(resolve));

/** Resolves true after `ms`, or false as soon as one of `signals` aborts. */
function pause(ms: number, signals: ReadonlyArray<AbortSignal | null | undefined>): Promise<boolean> {
  const watched = signals.filter((signal): signal is AbortSignal => signal != null);
  return new Promise((resolve) => {
    if (watched.some((signal) => signal.aborted)) return resolve(false);
    const finish = (waited: boolean) => {
      realClearTimeout(timer);
      for (const signal of watched) signal.removeEventListener('abort', stop);
      resolve(waited);
    };
    const stop = () => finish(false);
    const timer = realSetTimeout(() => finish(true), ms);
    for (const signal of watched) signal.addEventListener('abort', stop, { once: true });
  });
}

/** Options of `createSqliteScheduler`. */
export interface SqliteSchedulerOptions {
  /** How long a call waits for a lock held by another connection before its STORE_BUSY is thrown. */
  busyTimeoutMs: number;
  /** Milliseconds of work per turn of the event loop before a background call yields (default `SQLITE_SLICE_MS`). */
  sliceMs?: number;
}

/** How every call into a synchronous SQLite connection shares the event loop and waits for locks. */
export interface SqliteScheduler {
  /**
   * Runs one store call (at most one transaction). A call of background work (`runInBackground`)
   * first yields (`setImmediate`) when the calls of this turn of the event loop have run `sliceMs`
   * already, so requests, timers and signals get in; a call for a waiting caller never does.
   * When the call fails with SQLITE_BUSY (nothing was done), it is run again, whole, after a pause
   * (1 ms doubling up to 100 ms) until `busyTimeoutMs` has passed, the scheduler closes or the
   * background work's signal aborts; `waitForLock: false` fails at once.
   */
  run<T>(call: () => Promise<T>, options?: { waitForLock?: boolean }): Promise<T>;
  /** Ends every wait for a lock (each fails with its STORE_BUSY) and refuses to start new ones. */
  close(): void;
}

/**
 * Creates the scheduler of one connection. better-sqlite3 is synchronous: a call holds the event
 * loop while it runs, and its busy timeout would sleep in it. So the connection runs with
 * `busy_timeout = 0`, long runs of background calls are cut into slices of `sliceMs`, and waiting
 * for a lock is a timer, during which other calls (reads, other requests) go on.
 */
export function createSqliteScheduler(options: SqliteSchedulerOptions): SqliteScheduler {
  const sliceMs = options.sliceMs ?? SQLITE_SLICE_MS;
  const closing = new AbortController();
  let turnStartedAt: number | null = null;

  function startTurn(): void {
    turnStartedAt = performance.now();
    realSetImmediate(() => {
      turnStartedAt = null;
    }).unref();
  }

  async function attempt<T>(call: () => Promise<T>, waitForLock: boolean): Promise<T> {
    const deadline = performance.now() + options.busyTimeoutMs;
    for (let backoff = 1; ; backoff = Math.min(backoff * 2, LONGEST_BACKOFF_MS)) {
      try {
        return await call();
      } catch (error) {
        const remaining = deadline - performance.now();
        if (!waitForLock || !isSqliteBusy(error) || remaining <= 0) throw error;
        if (!(await pause(Math.min(backoff, remaining), [closing.signal, backgroundWork()?.signal]))) throw error;
        startTurn();
      }
    }
  }

  return {
    run(call, { waitForLock = true } = {}) {
      if (turnStartedAt === null) startTurn();
      else if (performance.now() - turnStartedAt >= sliceMs && backgroundWork()) {
        return nextTurn().then(() => {
          startTurn();
          return attempt(call, waitForLock);
        });
      }
      return attempt(call, waitForLock);
    },
    close() {
      closing.abort();
    },
  };
}

/** Store methods that record what is not worth waiting for: they fail at once and their caller queues them. */
const noWaitCalls: { readonly [Store in keyof Storage]?: ReadonlyArray<keyof Storage[Store]> } = {
  memories: ['touch'],
};

/**
 * The storage with every method (of every store, and its own but `close`) run through `scheduler`.
 * Each store method runs at most one transaction, so running it again after SQLITE_BUSY runs the
 * whole transaction again, never a part of it. `close` ends the waits first.
 */
export function scheduleSqliteStorage(storage: Storage, scheduler: SqliteScheduler): Storage {
  type Method = (...parameters: unknown[]) => Promise<unknown>;
  const wrap = <Target extends object>(target: Target, noWait: readonly PropertyKey[] = []): Target =>
    Object.fromEntries(
      Object.entries(target).map(([name, value]) => {
        if (typeof value !== 'function') return [name, value];
        const method = value as Method;
        const waitForLock = !noWait.includes(name);
        return [
          name,
          (...parameters: unknown[]) => scheduler.run(() => method.apply(target, parameters), { waitForLock }),
        ];
      }),
    ) as Target;
  const stores = Object.fromEntries(
    Object.entries(storage).map(([name, value]) => [
      name,
      typeof value === 'object' && value !== null ? wrap(value, noWaitCalls[name as keyof Storage]) : value,
    ]),
  ) as unknown as Storage;
  return {
    ...wrap(stores),
    async close() {
      scheduler.close();
      await storage.close();
    },
  };
}
