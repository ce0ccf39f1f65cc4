import type Database from 'better-sqlite3';
import type { MaintenanceState, MaintenanceStateChanges, MaintenanceStateStore } from '../maintenance-state-store.js';
import { getRow, setSynchronous, toMnemeError } from './sqlite-database.js';

interface MaintenanceStateRow {
  channel_id: string;
  task: string;
  watermark: number | null;
  last_run_at: number | null;
  details: string | null;
}

interface UpsertParameters {
  channelId: string;
  task: string;
  watermark: number | null;
  lastRunAt: number | null;
  details: string | null;
  setWatermark: 0 | 1;
  setLastRunAt: 0 | 1;
  setDetails: 0 | 1;
}

/**
 * Writes one `maintenance_state` row as `MaintenanceStateStore.set` does, in the caller's transaction: the store's
 * `set`, and an insert that moves a task's state with its memories (`InsertOptions.state`). Prepared on first use.
 */
export function createSqliteStateWriter(
  database: Database.Database,
): (channelId: string, task: string, changes: MaintenanceStateChanges) => MaintenanceState {
  let upsert: Database.Statement<UpsertParameters, MaintenanceStateRow> | null = null;
  return (channelId, task, changes) => {
    upsert ??= database.prepare<UpsertParameters, MaintenanceStateRow>(
      `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details)
      VALUES (@channelId, @task, @watermark, @lastRunAt, @details)
      ON CONFLICT (channel_id, task) DO UPDATE SET
        watermark = CASE WHEN @setWatermark THEN excluded.watermark ELSE watermark END,
        last_run_at = CASE WHEN @setLastRunAt THEN excluded.last_run_at ELSE last_run_at END,
        details = CASE WHEN @setDetails THEN excluded.details ELSE details END
      RETURNING *`,
    );
    return toState(
      getRow(upsert, {
        channelId,
        task,
        watermark: changes.watermark ?? null,
        lastRunAt: changes.lastRunAt ?? null,
        details: changes.details == null ? null : JSON.stringify(changes.details),
        setWatermark: changes.watermark === undefined ? 0 : 1,
        setLastRunAt: changes.lastRunAt === undefined ? 0 : 1,
        setDetails: changes.details === undefined ? 0 : 1,
      }),
    );
  };
}

/** The SQLite implementation of the MaintenanceStateStore port, over the `maintenance_state` table. */
export function createSqliteMaintenanceStateStore(database: Database.Database): MaintenanceStateStore {
  const writeState = createSqliteStateWriter(database);
  const statements = {
    get: database.prepare<[string, string], MaintenanceStateRow>(
      'SELECT * FROM maintenance_state WHERE channel_id = ? AND task = ?',
    ),
    list: database.prepare<[string], MaintenanceStateRow>(
      'SELECT * FROM maintenance_state WHERE task = ? ORDER BY channel_id',
    ),
    remove: database.prepare<[string, string]>('DELETE FROM maintenance_state WHERE channel_id = ? AND task = ?'),
  };

  /** Runs `write` with no fsync of its own when `deferred` and no transaction is open (see `writeSqlite`). */
  function writing<T>(deferred: boolean | undefined, write: () => T): T {
    const relaxed = deferred === true && !database.inTransaction;
    if (relaxed) setSynchronous(database, 'NORMAL');
    try {
      return write();
    } finally {
      if (relaxed) setSynchronous(database, 'FULL');
    }
  }

  return {
    async get(channelId, task) {
      try {
        const row = statements.get.get(channelId, task);
        return row ? toState(row) : null;
      } catch (error) {
        throw toMnemeError(error, `reading the ${task} state of channel ${channelId}`);
      }
    },
    async set(channelId, task, changes, options = {}) {
      try {
        return writing(options.deferred, () => writeState(channelId, task, changes));
      } catch (error) {
        throw toMnemeError(error, `saving the ${task} state of channel ${channelId}`);
      }
    },
    async list(task) {
      try {
        return statements.list.all(task).map(toState);
      } catch (error) {
        throw toMnemeError(error, `reading the ${task} state of every channel`);
      }
    },
    async remove(channelId, task, options = {}) {
      try {
        writing(options.deferred, () => statements.remove.run(channelId, task));
      } catch (error) {
        throw toMnemeError(error, `deleting the ${task} state of channel ${channelId}`);
      }
    },
  };
}

function toState(row: MaintenanceStateRow): MaintenanceState {
  return {
    channelId: row.channel_id,
    task: row.task,
    watermark: row.watermark,
    lastRunAt: row.last_run_at,
    details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
  };
}
