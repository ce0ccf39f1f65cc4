import { AsyncLocalStorage } from 'node:async_hooks';
import { backgroundWork } from '../../workers/background-work.js';
import type { Storage } from '../storage.js';
import { isSqliteBusy } from './sqlite-database.js';
import { PROGRESS_WAIT_TIMEOUTS } from './sqlite-progress-wait.js';

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
  /**
   * A value that changes when another connection commits (SQLite's `PRAGMA data_version`): while a lock's holders
   * keep committing, a call waiting for it waits on (see `PROGRESS_WAIT_TIMEOUTS`). Left out, no call waits longer
   * than `busyTimeoutMs`.
   */
  progress?: () => unknown;
}

/** How every call into a synchronous SQLite connection shares the event loop and waits for locks. */
export interface SqliteScheduler {
  /**
   * Runs one store call (at most one transaction). A call of background work (`runInBackground`)
   * first yields (`setImmediate`) when the calls of this turn of the event loop have run `sliceMs`
   * already, so requests, timers and signals get in; a call for a waiting caller never does.
   * When the call fails with SQLITE_BUSY (nothing was done), it is run again, whole, after a pause
   * (1 ms doubling up to 100 ms) until `busyTimeoutMs` has passed with no commit of another connection
   * (`progress`; at most `PROGRESS_WAIT_TIMEOUTS` busy timeouts in all), the scheduler closes or the
   * background work's signal aborts; `waitForLock: false` fails at once.
   */
  run<T>(call: () => Promise<T>, options?: { waitForLock?: boolean }): Promise<T>;
  /**
   * Runs `work` as one section that may hold the connection alone: once a call within `work` (its
   * async context) has called `hold` (`ends.open` runs then, e.g. a BEGIN), every call started
   * outside the section (another request, the append of `ingest`, a timer) waits for the section's
   * end before it runs, while the calls made within `work` run at once. `ends.close(true)` ends a
   * held section when `work` returns (e.g. COMMIT), `ends.close(false)` when it threw (e.g.
   * ROLLBACK). A section never held changes nothing.
   */
  section<T>(work: () => Promise<T>, ends: SectionEnds): Promise<T>;
  /** Holds the caller's section (see `section`), if it has one and does not hold it yet; else nothing. */
  hold(): Promise<void>;
  /** True when the caller runs within a section (see `section`). */
  inSection(): boolean;
  /** True while a call or section started outside the section holding the connection waits for its end. */
  waiting(): boolean;
  /** Ends every wait for a lock (each fails with its STORE_BUSY) and refuses to start new ones. */
  close(): void;
}

/** What a section of `SqliteScheduler.section` runs when it takes the connection and when it gives it back. */
export interface SectionEnds {
  /** Runs when the section takes the connection (synchronously; SQLITE_BUSY: tried again after a pause). */
  open(): void;
  /** Runs when the section ends, `ok` false when its work threw. */
  close(ok: boolean): void;
}

/** One section of a scheduler, as its async context knows it. */
interface Section {
  held: boolean;
  hold(): Promise<void>;
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
  const sections = new AsyncLocalStorage<Section>();
  /** The section holding the connection, and the promise resolved when it gives it back. */
  let holder: { section: Section; released: Promise<void> } | null = null;
  /** Calls and sections waiting for the holder's end. */
  let waiters = 0;

  async function waitForHolder(): Promise<void> {
    waiters++;
    try {
      while (holder && holder.section !== sections.getStore()) await holder.released;
    } finally {
      waiters--;
    }
  }

  function startTurn(): void {
    turnStartedAt = performance.now();
    realSetImmediate(() => {
      turnStartedAt = null;
    }).unref();
  }

  /** The connection's `progress` value, or null when it cannot be read (taken as no progress). */
  const progressNow = (): unknown => {
    try {
      return options.progress?.() ?? null;
    } catch {
      return null;
    }
  };

  async function attempt<T>(call: () => Promise<T>, waitForLock: boolean): Promise<T> {
    const started = performance.now();
    const limit = started + PROGRESS_WAIT_TIMEOUTS * options.busyTimeoutMs;
    let deadline = started + options.busyTimeoutMs;
    let seen: unknown;
    for (let backoff = 1; ; backoff = Math.min(backoff * 2, LONGEST_BACKOFF_MS)) {
      try {
        // Checked right before the call, in the same turn: a section may have taken the connection
        // while this call waited for its turn or a lock.
        if (holder && holder.section !== sections.getStore()) await waitForHolder();
        return await call();
      } catch (error) {
        if (waitForLock && isSqliteBusy(error) && options.progress) {
          // Another connection committed since the last attempt: its holder is busy, not stuck. The wait is counted
          // again from now (a fixed wait lost to a writer that takes the lock back after each commit: attack on the
          // two importers of one file, faults suite), up to the limit.
          const now = progressNow();
          if (seen !== undefined && now !== null && now !== seen) {
            deadline = Math.min(limit, performance.now() + options.busyTimeoutMs);
          }
          seen = now;
        }
        const remaining = deadline - performance.now();
        if (!waitForLock || !isSqliteBusy(error) || remaining <= 0) throw error;
        if (!(await pause(Math.min(backoff, remaining), [closing.signal, backgroundWork()?.signal]))) throw error;
        startTurn();
      }
    }
  }

  function schedule<T>(call: () => Promise<T>, waitForLock: boolean): Promise<T> {
    if (turnStartedAt === null) startTurn();
    else if (performance.now() - turnStartedAt >= sliceMs && backgroundWork()) {
      return nextTurn().then(() => {
        startTurn();
        return attempt(call, waitForLock);
      });
    }
    return attempt(call, waitForLock);
  }

  return {
    run(call, { waitForLock = true } = {}) {
      return schedule(call, waitForLock);
    },
    section<T>(work: () => Promise<T>, ends: SectionEnds): Promise<T> {
      let release = () => {};
      const giveBack = () => {
        section.held = false;
        holder = null;
        release();
      };
      const hold = async () => {
        if (section.held || holder?.section === section) return;
        if (holder) {
          waiters++;
          try {
            while (holder) await holder.released;
          } finally {
            waiters--;
          }
        }
        // Taken in the same turn as the check above: no other section gets in between.
        section.held = true;
        holder = { section, released: new Promise<void>((resolve) => (release = resolve)) };
        try {
          await attempt(async () => ends.open(), true);
        } catch (error) {
          giveBack();
          throw error;
        }
      };
      const section: Section = { held: false, hold };
      const end = (ok: boolean) => {
        if (!section.held) return;
        try {
          ends.close(ok);
        } finally {
          giveBack();
        }
      };
      return sections.run(section, async () => {
        let result: T;
        try {
          result = await work();
        } catch (error) {
          end(false);
          throw error;
        }
        end(true);
        return result;
      });
    },
    hold() {
      return sections.getStore()?.hold() ?? Promise.resolve();
    },
    inSection() {
      return sections.getStore() !== undefined;
    },
    waiting() {
      return waiters > 0;
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

/** Store methods that are sections of the scheduler themselves (their calls inside are scheduled one by one). */
const sectionCalls: { readonly [Store in keyof Storage]?: ReadonlyArray<keyof Storage[Store]> } = {
  extraction: ['batch'],
};

/**
 * The storage with every method (of every store, and its own but `health` and `close`) run through `scheduler`.
 * Each store method runs at most one transaction, so running it again after SQLITE_BUSY runs the
 * whole transaction again, never a part of it. `close` ends the waits first.
 */
export function scheduleSqliteStorage(storage: Storage, scheduler: SqliteScheduler): Storage {
  type Method = (...parameters: unknown[]) => Promise<unknown>;
  const wrap = <Target extends object>(
    target: Target,
    noWait: readonly PropertyKey[] = [],
    sections: readonly PropertyKey[] = [],
  ): Target =>
    Object.fromEntries(
      Object.entries(target).map(([name, value]) => {
        if (typeof value !== 'function') return [name, value];
        if (sections.includes(name)) return [name, value.bind(target)];
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
      typeof value === 'object' && value !== null
        ? wrap(value, noWaitCalls[name as keyof Storage], sectionCalls[name as keyof Storage])
        : value,
    ]),
  ) as unknown as Storage;
  return {
    ...wrap(stores),
    // A health probe never waits behind the scheduler's queue or a lock: it reads no table.
    health: () => storage.health(),
    async close() {
      scheduler.close();
      await storage.close();
    },
  };
}
