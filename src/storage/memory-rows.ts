import { toIso } from '../core/clock.js';
import type {
  Memory,
  MemorySnapshot,
  MemorySource,
  MemoryVersion,
  Scope,
  Sector,
  VersionAction,
} from '../core/types.js';

/**
 * The columns of a `memories` row that read the same in every storage adapter (times as epoch
 * milliseconds). What differs is decoded by the adapter: `pinned` (SQLite 0/1, PostgreSQL boolean) and
 * the provenance lists (SQLite JSON text, PostgreSQL `bigint[]`).
 */
export interface MemoryRowColumns {
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

/** What an adapter decodes from a row in its own way. */
export interface DecodedMemoryColumns {
  pinned: boolean;
  sourceMessageIds: number[];
  sourceIds: number[];
}

/** The memory a row of `memories` holds, times as ISO 8601 strings. */
export function memoryOfRow(row: MemoryRowColumns, decoded: DecodedMemoryColumns): Memory {
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
    pinned: decoded.pinned,
    sourceMessageIds: decoded.sourceMessageIds,
    sourceIds: decoded.sourceIds,
    validFrom: sameAsCreated(row.valid_from),
    supersededBy: row.superseded_by,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
    // Absent in a SQLite file at a schema before migration 11 (tests of migrations).
    fadedAt: typeof row.faded_at === 'number' ? toIso(row.faded_at) : null,
    createdAt,
    updatedAt: sameAsCreated(row.updated_at),
    embeddingModel: row.embedding_model,
  };
}

/** The fields of a memory a version row records. */
export function snapshotOfRow(row: MemoryRowColumns, pinned: boolean): MemorySnapshot {
  return {
    content: row.content,
    category: row.category,
    importance: row.importance,
    pinned,
    archivedAt: row.archived_at === null ? null : toIso(row.archived_at),
  };
}

/** A row of `memory_versions` (changes and snapshot as JSON text), the same in every adapter. */
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
