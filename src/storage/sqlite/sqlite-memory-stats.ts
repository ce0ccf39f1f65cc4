import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { StoredMemoryStats } from '../memory-store.js';
import { getRow } from './sqlite-database.js';
import type { MemoryRow } from './sqlite-memory-rows.js';

interface TotalsRow {
  total: number;
  active: number;
  archived: number;
  pinned: number;
  addedLast7Days: number;
}

/** The counts of `MemoryStore.stats` at `now` (epoch milliseconds), read in a few queries. */
export function readSqliteMemoryStats(database: Database.Database, now: number): StoredMemoryStats {
  const totals = getRow(
    database.prepare<[number], TotalsRow>(`SELECT COUNT(*) AS total,
        COALESCE(SUM(archived_at IS NULL), 0) AS active,
        COALESCE(SUM(archived_at IS NOT NULL), 0) AS archived,
        COALESCE(SUM(pinned = 1 AND archived_at IS NULL), 0) AS pinned,
        COALESCE(SUM(created_at >= ?), 0) AS addedLast7Days
      FROM memories`),
    now - 7 * 24 * 60 * 60 * 1000,
  );
  const grouped = (column: 'scope' | 'category') =>
    Object.fromEntries(
      database
        .prepare<[], { key: string; count: number }>(
          `SELECT ${column} AS key, COUNT(*) AS count FROM memories WHERE archived_at IS NULL GROUP BY ${column} ORDER BY ${column}`,
        )
        .all()
        .map((row) => [row.key, row.count]),
    );
  const mostAccessed = database
    .prepare<[], Pick<MemoryRow, 'id' | 'content' | 'access_count' | 'last_accessed'>>(
      `SELECT id, content, access_count, last_accessed FROM memories
        WHERE archived_at IS NULL AND access_count > 0 ORDER BY access_count DESC, id LIMIT 5`,
    )
    .all()
    .map((row) => ({
      id: row.id,
      content: row.content,
      accessCount: row.access_count,
      lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
    }));
  const count = (table: 'messages' | 'memory_links') =>
    getRow(database.prepare<[], { count: number }>(`SELECT COUNT(*) AS count FROM ${table}`)).count;
  return {
    ...totals,
    byScope: grouped('scope'),
    byCategory: grouped('category'),
    mostAccessed,
    messages: count('messages'),
    links: count('memory_links'),
  };
}
