/** Progress of one background task for one channel (a row of `maintenance_state`). */
export interface MaintenanceState {
  channelId: string;
  /** The task's name, e.g. `extraction`, `episode`, `decay`, `consolidation`, `dream`. */
  task: string;
  /**
   * The id of the last message the task has fully processed (of the last memory, for the store-wide
   * tasks `consolidation`, `link` and `dream`, kept under channel id `''`), or null before its first run.
   */
  watermark: number | null;
  /** Epoch milliseconds of the task's last run, or null. */
  lastRunAt: number | null;
  /** Anything else the task keeps between runs, stored as JSON. */
  details: Record<string, unknown> | null;
}

/** Fields `set` writes; a field left out keeps its stored value (null on a new row). */
export interface MaintenanceStateChanges {
  watermark?: number | null;
  lastRunAt?: number | null;
  details?: Record<string, unknown> | null;
}

/**
 * A write that may wait for the next durable commit (SQLite: no fsync of its own; the next durable commit of the
 * file makes it durable too, the log being written in order); a store may ignore it. For a row whose loss in a power
 * cut loses nothing acknowledged: an audience change's mark, written before its durable write (ADR 5).
 */
export interface MaintenanceStateWriteOptions {
  deferred?: boolean;
}

/** Per-channel watermarks and run times of the background tasks. */
export interface MaintenanceStateStore {
  /** The state of `task` for `channelId`, or null when it never ran there. */
  get(channelId: string, task: string): Promise<MaintenanceState | null>;
  /** Creates or updates the row; returns the state as stored. */
  set(
    channelId: string,
    task: string,
    changes: MaintenanceStateChanges,
    options?: MaintenanceStateWriteOptions,
  ): Promise<MaintenanceState>;
  /** Every channel's state of `task`, sorted by channel id. */
  list(task: string): Promise<MaintenanceState[]>;
  /** Deletes the row, if there is one. */
  remove(channelId: string, task: string, options?: MaintenanceStateWriteOptions): Promise<void>;
}
