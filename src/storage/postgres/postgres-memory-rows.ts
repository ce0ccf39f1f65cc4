import type { Memory, MemorySnapshot } from '../../core/types.js';
import { type MemoryRowColumns, memoryOfRow, snapshotOfRow } from '../memory-rows.js';

export { toVersion, type VersionRow as PgVersionRow } from '../memory-rows.js';

/** The columns of `memories` a memory is read from (everything but the `fts` vector). */
export const memoryColumns = `id, content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id,
  source, importance, strength, salience, access_count, last_accessed, pinned, source_message_ids, source_ids,
  valid_from, superseded_by, archived_at, faded_at, created_at, updated_at, embedding_model, decayed_at,
  search_context, search_context_message_id, chunk_message_id, chunk_index`;

/** `memoryColumns` of table alias `m`. */
export const memoryColumnsOf = (alias: string) =>
  memoryColumns
    .split(',')
    .map((column) => `${alias}.${column.trim()}`)
    .join(', ');

/** A row of `memories` as the adapter reads it (bigints as numbers). */
export interface PgMemoryRow extends MemoryRowColumns {
  pinned: boolean;
  source_message_ids: number[];
  source_ids: number[];
  chunk_message_id: number | null;
  chunk_index: number | null;
}

/** The memory a row of `memories` holds, times as ISO 8601 strings. */
export function toMemory(row: PgMemoryRow): Memory {
  return memoryOfRow(row, {
    pinned: row.pinned,
    sourceMessageIds: row.source_message_ids.map(Number),
    sourceIds: row.source_ids.map(Number),
  });
}

/** The fields of a memory a version row records. */
export function snapshotOf(row: PgMemoryRow): MemorySnapshot {
  return snapshotOfRow(row, row.pinned);
}
