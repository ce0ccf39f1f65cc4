import type { Memory, MemorySnapshot } from '../../core/types.js';
import { type MemoryRowColumns, memoryOfRow, snapshotOfRow } from '../memory-rows.js';

export { toVersion, type VersionRow } from '../memory-rows.js';

/**
 * The columns of `memories` that `memoryRowOf` reads, in its order: select them with a raw statement
 * (`.raw()`), which better-sqlite3 hands back as arrays, several times faster than as objects of this many keys.
 */
export const memoryColumns = `id, content, category, sector, scope, owner, user_id, channel_id, project_id, topic_id,
  source, importance, strength, salience, access_count, last_accessed, pinned, source_message_ids, source_ids,
  valid_from, superseded_by, archived_at, created_at, updated_at, embedding_model, decayed_at, search_context,
  search_context_message_id, faded_at`;

/** The row a raw statement over `memoryColumns` returned. */
export function memoryRowOf(values: unknown[]): MemoryRow {
  return {
    id: values[0],
    content: values[1],
    category: values[2],
    sector: values[3],
    scope: values[4],
    owner: values[5],
    user_id: values[6],
    channel_id: values[7],
    project_id: values[8],
    topic_id: values[9],
    source: values[10],
    importance: values[11],
    strength: values[12],
    salience: values[13],
    access_count: values[14],
    last_accessed: values[15],
    pinned: values[16],
    source_message_ids: values[17],
    source_ids: values[18],
    valid_from: values[19],
    superseded_by: values[20],
    archived_at: values[21],
    created_at: values[22],
    updated_at: values[23],
    embedding_model: values[24],
    decayed_at: values[25],
    search_context: values[26],
    search_context_message_id: values[27],
    faded_at: values[28],
  } as MemoryRow;
}

/** A row of `memories` as better-sqlite3 returns it. */
export interface MemoryRow extends MemoryRowColumns {
  pinned: 0 | 1;
  source_message_ids: string;
  source_ids: string;
}

/** The memory a row of `memories` holds, times as ISO 8601 strings. */
export function toMemory(row: MemoryRow): Memory {
  return memoryOfRow(row, {
    pinned: row.pinned === 1,
    sourceMessageIds: idList(row.source_message_ids),
    sourceIds: idList(row.source_ids),
  });
}

/** A JSON list of ids as stored; most are empty. */
function idList(json: string): number[] {
  return json === '[]' ? [] : (JSON.parse(json) as number[]);
}

/** The fields of a memory a version row records. */
export function snapshotOf(row: MemoryRow): MemorySnapshot {
  return snapshotOfRow(row, row.pinned === 1);
}
