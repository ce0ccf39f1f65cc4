import type { MaintenanceState, MaintenanceStateChanges, MaintenanceStateStore } from '../maintenance-state-store.js';
import { firstRow, type PostgresDatabase, type PostgresQueryable, withPgErrors } from './postgres-database.js';

interface MaintenanceStateRow {
  channel_id: string;
  task: string;
  watermark: number | null;
  last_run_at: number | null;
  details: string | null;
}

const UPSERT = `INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (channel_id, task) DO UPDATE SET
    watermark = CASE WHEN $6 THEN excluded.watermark ELSE maintenance_state.watermark END,
    last_run_at = CASE WHEN $7 THEN excluded.last_run_at ELSE maintenance_state.last_run_at END,
    details = CASE WHEN $8 THEN excluded.details ELSE maintenance_state.details END
  RETURNING *`;

/**
 * Writes one `maintenance_state` row as `MaintenanceStateStore.set` does, on `q` (a transaction's client: an insert
 * that moves a task's state with its memories, `InsertOptions.state`; or the pool).
 */
export async function writePgState(
  q: PostgresQueryable,
  channelId: string,
  task: string,
  changes: MaintenanceStateChanges,
): Promise<MaintenanceState> {
  const row = firstRow(
    await q.query<MaintenanceStateRow>(UPSERT, [
      channelId,
      task,
      changes.watermark ?? null,
      changes.lastRunAt ?? null,
      changes.details == null ? null : JSON.stringify(changes.details),
      changes.watermark !== undefined,
      changes.lastRunAt !== undefined,
      changes.details !== undefined,
    ]),
    UPSERT,
  );
  return toState(row);
}

/** The PostgreSQL implementation of the MaintenanceStateStore port: watermarks shared by every process. */
export function createPostgresMaintenanceStateStore(database: PostgresDatabase): MaintenanceStateStore {
  return {
    async get(channelId, task) {
      return withPgErrors(`reading the ${task} state of channel ${channelId}`, async () => {
        const row = (
          await database.query<MaintenanceStateRow>(
            'SELECT * FROM maintenance_state WHERE channel_id = $1 AND task = $2',
            [channelId, task],
          )
        ).rows[0];
        return row ? toState(row) : null;
      });
    },
    async set(channelId, task, changes) {
      return withPgErrors(`saving the ${task} state of channel ${channelId}`, () =>
        writePgState(database, channelId, task, changes),
      );
    },
    async list(task) {
      return withPgErrors(`reading the ${task} state of every channel`, async () =>
        (
          await database.query<MaintenanceStateRow>(
            'SELECT * FROM maintenance_state WHERE task = $1 ORDER BY channel_id COLLATE "C"',
            [task],
          )
        ).rows.map(toState),
      );
    },
    async remove(channelId, task) {
      await withPgErrors(`deleting the ${task} state of channel ${channelId}`, () =>
        database.query('DELETE FROM maintenance_state WHERE channel_id = $1 AND task = $2', [channelId, task]),
      );
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
