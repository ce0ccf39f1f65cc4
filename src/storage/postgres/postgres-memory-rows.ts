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
export interface PgMemoryRow {
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
  pinned: boolean;
  source_message_ids: number[];
  source_ids: number[];
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
  chunk_message_id: number | null;
  chunk_index: number | null;
}

/** A row of `memory_versions`. */
export interface PgVersionRow {
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
export function toMemory(row: PgMemoryRow): Memory {
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
    pinned: row.pinned,
    sourceMessageIds: row.source_message_ids.map(Number),
    sourceIds: row.source_ids.map(Number),
    validFrom: sameAsCreated(row.valid_from),
    supersededBy: row.superseded_by,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
    fadedAt: row.faded_at === null ? null : toIso(row.faded_at),
    createdAt,
    updatedAt: sameAsCreated(row.updated_at),
    embeddingModel: row.embedding_model,
  };
}

/** The fields of a memory a version row records. */
export function snapshotOf(row: PgMemoryRow): MemorySnapshot {
  return {
    content: row.content,
    category: row.category,
    importance: row.importance,
    pinned: row.pinned,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
  };
}

/** The version a row of `memory_versions` holds. */
export function toVersion(row: PgVersionRow): MemoryVersion {
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
