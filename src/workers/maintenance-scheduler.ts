import { type Clock, systemClock } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import type { MaintenanceReport } from '../core/maintenance/maintain.js';
import { type MaintenanceTask, maintenanceTasks } from '../core/maintenance/maintenance-task.js';
import type { Mneme } from '../core/mneme.js';
import { runInBackground } from './background-work.js';

const MINUTE_MS = 60 * 1000;
const HOUR_MS = 60 * MINUTE_MS;

/** How often each task runs: decay and dream daily, episodes, consolidation and linking every 30 minutes. */
export const defaultMaintenanceIntervals: Readonly<Record<MaintenanceTask, number>> = {
  decay: 24 * HOUR_MS,
  episodes: 30 * MINUTE_MS,
  consolidate: 30 * MINUTE_MS,
  link: 30 * MINUTE_MS,
  dream: 24 * HOUR_MS,
};

export interface MaintenanceSchedulerOptions {
  /** The engine whose `maintain` the scheduler calls. */
  mneme: Pick<Mneme, 'maintain'>;
  /** Milliseconds between two runs of a task; each defaults to `defaultMaintenanceIntervals`. */
  intervals?: Partial<Record<MaintenanceTask, number>>;
  /** How often the scheduler looks for due tasks, in milliseconds (default one minute). */
  checkEveryMs?: number;
  /** Where the scheduler reads the time to decide what is due (default the system clock). */
  clock?: Clock;
  /** Called with each task's report. */
  onReport?: (task: MaintenanceTask, report: MaintenanceReport) => void;
  /**
   * Called when a task fails, or (`audience`) the check of audience changes a stopped process left that a check with
   * no task due runs, once until it works again; the scheduler keeps going (default: one line on stderr).
   */
  onError?: (task: MaintenanceTask | 'audience', error: unknown) => void;
}

/** Runs maintenance on its intervals inside a long-running process (the HTTP service, `mneme serve`). */
export interface MaintenanceScheduler {
  /**
   * Runs every task once now (the start-up sweep), then each again whenever its interval has passed, or at once when
   * the clock went back behind its last run.
   */
  start(): void;
  /**
   * Stops scheduling and waits for the task in progress, if any, to finish; a call of it waiting for
   * a lock held by another process stops waiting (the task fails, and runs again after the next start).
   */
  stop(): Promise<void>;
  readonly isRunning: boolean;
}

/**
 * Creates the maintenance scheduler. Due tasks run one after another, in cycle order (decay,
 * episodes, consolidate, link, dream), and the next check is scheduled only after the current one
 * finished, so no two cycles of a task (or of any two tasks) ever run at once; `maintain` also
 * refuses to start a task that a direct call is still running. Tasks run as background work
 * (`runInBackground`), so the storage adapter cuts them into slices that yield to requests.
 */
export function createMaintenanceScheduler(options: MaintenanceSchedulerOptions): MaintenanceScheduler {
  const intervals = { ...defaultMaintenanceIntervals, ...options.intervals };
  const checkEveryMs = options.checkEveryMs ?? MINUTE_MS;
  const clock = options.clock ?? systemClock;
  const onError =
    options.onError ??
    ((task: MaintenanceTask | 'audience', error: unknown) =>
      process.stderr.write(`mneme: maintenance task ${task} failed: ${errorMessage(error)}\n`));
  const lastRun = new Map<MaintenanceTask, number>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  let current: Promise<void> | null = null;
  let isRunning = false;
  let stopping = new AbortController();

  let audienceFailing = false;

  async function check(): Promise<void> {
    let ran = false;
    for (const task of maintenanceTasks) {
      if (!isRunning) return;
      const previous = lastRun.get(task);
      const now = clock.now();
      // A clock set back (NTP correcting a fast clock) runs the task at once: waiting for the clock to pass its last
      // run again would stop it for as long as the clock went back, a year for a clock a year fast (attack 25, time).
      if (previous !== undefined && now >= previous && now - previous < intervals[task]) continue;
      lastRun.set(task, now);
      ran = true;
      try {
        const report = await options.mneme.maintain({ tasks: [task] });
        options.onReport?.(task, report);
      } catch (error) {
        onError(task, error);
      }
    }
    if (ran || !isRunning) return;
    // No task due: the audience changes another process left when it died between a change's write and its moves
    // are checked all the same (every maintain call checks them first), within a check of their minute, not at the
    // next task up to 30 minutes on (session 19).
    try {
      await options.mneme.maintain({ tasks: 'none' });
      audienceFailing = false;
    } catch (error) {
      if (!audienceFailing) onError('audience', error);
      audienceFailing = true;
    }
  }

  function schedule(delay: number): void {
    timer = setTimeout(() => {
      timer = null;
      current = runInBackground(check, stopping.signal).finally(() => {
        current = null;
        if (isRunning) schedule(checkEveryMs);
      });
    }, delay);
    // The scheduler alone does not keep the process alive: the service it runs in does.
    timer.unref?.();
  }

  return {
    start() {
      if (isRunning) return;
      isRunning = true;
      stopping = new AbortController();
      schedule(0);
    },
    async stop() {
      isRunning = false;
      stopping.abort();
      if (timer) clearTimeout(timer);
      timer = null;
      await current;
    },
    get isRunning() {
      return isRunning;
    },
  };
}
