import { toIso } from '../../core/clock.js';
import type {
  Memory,
  MemorySnapshot,
  MemorySource,
  MemoryVersion,
  Scope,
  Sector,
  VersionAction,
} from '../../core/types.js';

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
export interface MemoryRow {
  id: number;
  content: string;
  category: string;
  sector: Sector;
  scope: Scope;
  owner: string;
  user_id: string | null;
  channel_id: string | null;
  project_id: string | null;
  topic_id: string | null;
  source: MemorySource;
  importance: number;
  strength: number;
  salience: number;
  access_count: number;
  last_accessed: number | null;
  pinned: 0 | 1;
  source_message_ids: string;
  source_ids: string;
  valid_from: number;
  superseded_by: number | null;
  archived_at: number | null;
  faded_at: number | null;
  created_at: number;
  updated_at: number;
  embedding_model: string | null;
  decayed_at: number | null;
  search_context: string | null;
  search_context_message_id: number | null;
}

/** A row of `memory_versions` as better-sqlite3 returns it. */
export interface VersionRow {
  id: number;
  memory_id: number;
  version: number;
  action: VersionAction;
  actor: string | null;
  reason: string | null;
  changes: string;
  snapshot: string;
  created_at: number;
}

/** The memory a row of `memories` holds, times as ISO 8601 strings. */
export function toMemory(row: MemoryRow): Memory {
  // Most rows were created, valid from and updated at one time: format it once.
  const createdAt = toIso(row.created_at);
  const sameAsCreated = (at: number) => (at === row.created_at ? createdAt : toIso(at));
  return {
    id: row.id,
    content: row.content,
    category: row.category,
    sector: row.sector,
    scope: row.scope,
    userId: row.user_id,
    channelId: row.channel_id,
    projectId: row.project_id,
    topicId: row.topic_id,
    source: row.source,
    importance: row.importance,
    strength: row.strength,
    salience: row.salience,
    accessCount: row.access_count,
    lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
    pinned: row.pinned === 1,
    sourceMessageIds: idList(row.source_message_ids),
    sourceIds: idList(row.source_ids),
    validFrom: sameAsCreated(row.valid_from),
    supersededBy: row.superseded_by,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
    // Absent in a file at a schema before migration 11 (tests of migrations).
    fadedAt: typeof row.faded_at === 'number' ? toIso(row.faded_at) : null,
    createdAt,
    updatedAt: sameAsCreated(row.updated_at),
    embeddingModel: row.embedding_model,
  };
}

/** A JSON list of ids as stored; most are empty. */
function idList(json: string): number[] {
  return json === '[]' ? [] : (JSON.parse(json) as number[]);
}

/** The fields of a memory a version row records. */
export function snapshotOf(row: MemoryRow): MemorySnapshot {
  return {
    content: row.content,
    category: row.category,
    importance: row.importance,
    pinned: row.pinned === 1,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
  };
}

/** The version a row of `memory_versions` holds. */
export function toVersion(row: VersionRow): MemoryVersion {
  return {
    id: row.id,
    memoryId: row.memory_id,
    version: row.version,
    action: row.action,
    actor: row.actor,
    reason: row.reason,
    changes: JSON.parse(row.changes) as MemoryVersion['changes'],
    snapshot: JSON.parse(row.snapshot) as MemorySnapshot,
    createdAt: toIso(row.created_at),
  };
}
