import { z } from 'zod';
import type { HeldLock } from '../../storage/storage.js';
import { toIso } from '../clock.js';
import { recheckAudiences } from '../derived-audience.js';
import type { EngineContext } from '../engine-context.js';
import { ErrorCode, MnemeError } from '../errors.js';
import { refreshPolicy } from '../policy-state.js';
import { parseInput, timeSchema } from '../schemas.js';
import { type ConsolidateReport, runConsolidate } from './consolidate-task.js';
import { type DecayReport, runDecay } from './decay-task.js';
import { type DreamReport, runDream } from './dream-task.js';
import { type EpisodesReport, runEpisodes } from './episodes-task.js';
import { type LinkReport, runLink } from './link-task.js';
import { type MaintenanceTask, maintenanceTasks } from './maintenance-task.js';

/** One task name, as `maintain` and the CLI's `--task` accept it. */
export const MaintenanceTaskSchema = z.enum(maintenanceTasks, {
  error: () => `task must be one of ${maintenanceTasks.join(', ')}, or all`,
});

/** Input of `maintain`: which tasks (default all, in cycle order) and the time to run them at (default the clock's). */
const MaintainTasksSchema = z
  .union(
    [
      z.literal('all'),
      // No task: only what every call checks first (the audience changes a stopped process left, ADR 5).
      z.literal('none'),
      MaintenanceTaskSchema,
      z.array(MaintenanceTaskSchema).min(1, 'give at least one task'),
    ],
    { error: () => `tasks must be all, none, one of ${maintenanceTasks.join(', ')}, or a list of them` },
  )
  .default('all');

/**
 * What `maintain` takes, as given: the HTTP route validates its body with it and hands it on as it came (its tasks
 * made a list, `none` an empty one, would be refused by `maintain`'s own parse).
 */
export const MaintainRequestSchema = z.strictObject({ tasks: MaintainTasksSchema, now: timeSchema('now').optional() });

const MaintainInputSchema = z.strictObject({
  tasks: MaintainTasksSchema.transform((tasks) =>
    tasks === 'all'
      ? [...maintenanceTasks]
      : tasks === 'none'
        ? []
        : maintenanceTasks.filter((task) => [tasks].flat().includes(task)),
  ),
  now: timeSchema('now').optional(),
});
export type MaintainInput = z.input<typeof MaintainRequestSchema>;

/** What one `maintain` call did, one report per task it ran. */
export interface MaintenanceReport {
  /** The time the tasks ran at (ISO 8601). */
  now: string;
  decay?: DecayReport;
  episodes?: EpisodesReport;
  consolidate?: ConsolidateReport;
  link?: LinkReport;
  dream?: DreamReport;
}

type TaskReports = { [Task in MaintenanceTask]: NonNullable<MaintenanceReport[Task]> };

/** How each task runs, keyed by its name. */
const runners: { [Task in MaintenanceTask]: (context: EngineContext, now: number) => Promise<TaskReports[Task]> } = {
  decay: (context, now) => runDecay(context, now),
  episodes: (context, now) => runEpisodes(context, context.summariser, now),
  consolidate: (context, now) => runConsolidate(context, context.merger, now),
  link: (context, now) => runLink(context, now),
  dream: (context, now) => runDream(context, context.dreamer, now),
};

const alreadyRunning = 'already running';
const runningElsewhere = 'already running in another process on this database';
const offInPolicy = "not among this database's maintenance tasks (policy maintenance.tasks)";

const skippedReports: {
  [Task in MaintenanceTask]: (context: EngineContext, skipped: string) => TaskReports[Task];
} = {
  decay: (context, skipped) => ({ policy: context.policy.decay, checked: 0, decayed: 0, archived: 0, skipped }),
  episodes: (_context, skipped) => ({ channels: 0, messages: 0, episodes: 0, skipped }),
  consolidate: (_context, skipped) => ({ checked: 0, clusters: 0, merged: 0, skipped }),
  link: (_context, skipped) => ({ checked: 0, created: 0, removed: 0, skipped }),
  dream: (_context, skipped) => ({ owners: 0, insights: 0, skipped }),
};

/**
 * The engine's `maintain`: runs the asked tasks one after another at one time, under the database's
 * policy as stored now (another process may have changed it). A task the policy leaves out
 * (`maintenance.tasks`) is reported skipped, also when asked for by name; one still running from an
 * earlier call (the scheduler's, say) is not started twice: its report says `skipped: 'already running'`,
 * and one another process on the same database is running is skipped too (`Storage.tryLock`).
 */
export function createMaintain(context: EngineContext): (input?: MaintainInput) => Promise<MaintenanceReport> {
  const running = new Set<MaintenanceTask>();

  return async (input = {}) => {
    const parsed = parseInput(MaintainInputSchema, input, 'maintenance input');
    await refreshPolicy(context);
    const now = parsed.now ?? context.clock.now();
    const report: MaintenanceReport = { now: toIso(now) };
    // An audience change whose process died between its write and its moves (ADR 5, 2026-12-03).
    await recheckAudiences(context);
    for (const task of parsed.tasks) {
      const skipped = !context.policy.maintenance.tasks.includes(task)
        ? offInPolicy
        : running.has(task)
          ? alreadyRunning
          : null;
      if (skipped) {
        Object.assign(report, { [task]: skippedReports[task](context, skipped) });
        continue;
      }
      running.add(task);
      try {
        // One process per task at a time across every process sharing the database (PostgreSQL).
        const lock = await context.storage.tryLock(`maintenance:${task}`);
        if (!lock) {
          Object.assign(report, { [task]: skippedReports[task](context, runningElsewhere) });
          continue;
        }
        try {
          Object.assign(report, { [task]: await runners[task](fenced(context, task, lock), now) });
        } finally {
          await lock.release();
        }
      } finally {
        running.delete(task);
      }
    }
    return report;
  };
}

/**
 * The context a task runs in: every watermark it moves (a state `set`, or an insert with its state) first
 * confirms that this process still holds the task's lock. A process that paused past its lease (SQLite) and
 * lost the lock to another stops there, at most one step done twice, rather than moving a watermark the other
 * process is moving too.
 */
function fenced(context: EngineContext, task: MaintenanceTask, lock: HeldLock): EngineContext {
  const { maintenanceState: state, memories } = context.storage;
  const confirm = async () => {
    if (!(await lock.confirm())) {
      throw new MnemeError(
        ErrorCode.Conflict,
        `maintenance task ${task} stopped: this process lost its lock on the database (it paused past the lock's lease and another process took the task over); the task runs again at the next cycle`,
      );
    }
  };
  return {
    ...context,
    storage: {
      ...context.storage,
      maintenanceState: {
        ...state,
        async set(...args) {
          await confirm();
          return state.set(...args);
        },
      },
      memories: {
        ...memories,
        // An insert that moves the task's state with its memories (`InsertOptions.state`) is a watermark too.
        async insert(...args) {
          if (args[2]?.state) await confirm();
          return memories.insert(...args);
        },
      },
    },
  };
}
