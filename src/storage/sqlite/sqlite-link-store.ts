import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { LinkedMemory, LinkStore, LinkType } from '../link-store.js';
import { checkFilesInPlace, preparedOnUse, toMnemeError, writeSqlite } from './sqlite-database.js';

interface LinkRow {
  source_id: number;
  target_id: number;
  type: LinkType;
  strength: number;
  created_at: number;
}

/** The SQLite implementation of the LinkStore port. */
export function createSqliteLinkStore(database: Database.Database): LinkStore {
  const statements = {
    exists: database.prepare<[number, number, LinkType], 1>(
      'SELECT 1 FROM memory_links WHERE source_id = ? AND target_id = ? AND type = ?',
    ),
    upsert: database.prepare<[number, number, LinkType, number, number]>(
      `INSERT INTO memory_links (source_id, target_id, type, strength, created_at)
      VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (source_id, target_id, type) DO UPDATE SET strength = excluded.strength`,
    ),
    of: database.prepare<[number, number], LinkRow>(
      'SELECT * FROM memory_links WHERE source_id = ? OR target_id = ? ORDER BY created_at, source_id, target_id',
    ),
    neighbours: database.prepare<{ seeds: string; owners: string | null; limit: number }, LinkedMemory>(
      `WITH edges AS (
        SELECT l.target_id AS id, l.source_id AS linked_to, l.type AS type, l.strength AS strength
          FROM json_each(@seeds) AS s JOIN memory_links AS l ON l.source_id = s.value
        UNION ALL
        SELECT l.source_id, l.target_id, l.type, l.strength
          FROM json_each(@seeds) AS s JOIN memory_links AS l ON l.target_id = s.value
      )
      SELECT edges.id AS id, edges.linked_to AS linkedTo, edges.type AS type, MAX(edges.strength) AS strength
      FROM edges JOIN memories m ON m.id = edges.id
      WHERE m.archived_at IS NULL
        AND edges.id NOT IN (SELECT value FROM json_each(@seeds))
        AND (@owners IS NULL OR m.owner IN (SELECT value FROM json_each(@owners)))
      GROUP BY edges.id
      ORDER BY strength DESC, edges.id
      LIMIT @limit`,
    ),
    anyLinked: database
      .prepare<[string], 1>(
        `SELECT 1 FROM json_each(?) AS s WHERE EXISTS (SELECT 1 FROM memory_links WHERE source_id = s.value)
          OR EXISTS (SELECT 1 FROM memory_links WHERE target_id = s.value) LIMIT 1`,
      )
      .pluck(),
    // Links of a faded memory stay: a recall may bring it back (ADR 9).
    removeArchived: preparedOnUse<[]>(
      database,
      `DELETE FROM memory_links WHERE type != 'consolidated' AND (
      source_id IN (SELECT id FROM memories WHERE archived_at IS NOT NULL AND faded_at IS NULL)
      OR target_id IN (SELECT id FROM memories WHERE archived_at IS NOT NULL AND faded_at IS NULL))`,
    ),
  };

  return {
    async add(links, at, options = {}) {
      return writeSqlite(
        database,
        'storing links',
        () => {
          let added = 0;
          for (const link of links) {
            if (link.sourceId === link.targetId) continue;
            if (!statements.exists.get(link.sourceId, link.targetId, link.type)) added++;
            statements.upsert.run(link.sourceId, link.targetId, link.type, link.strength ?? 1, at);
          }
          return added;
        },
        options,
      );
    },

    async of(memoryId) {
      return statements.of.all(memoryId, memoryId).map((row) => ({
        sourceId: row.source_id,
        targetId: row.target_id,
        type: row.type,
        strength: row.strength,
        createdAt: toIso(row.created_at),
      }));
    },

    async neighbours(ids, owners, limit) {
      if (ids.length === 0 || limit <= 0 || (owners !== null && owners.length === 0)) return [];
      // Most recalls' hits have no link: two index probes per seed say so without the whole query.
      const seeds = JSON.stringify(ids);
      if (!statements.anyLinked.get(seeds)) return [];
      return statements.neighbours.all({
        seeds,
        owners: owners === null ? null : JSON.stringify(owners),
        limit,
      });
    },

    async removeArchived() {
      try {
        return database
          .transaction(() => {
            const removed = statements.removeArchived().run().changes;
            checkFilesInPlace(database);
            return removed;
          })
          .immediate();
      } catch (error) {
        throw toMnemeError(error, 'removing links to archived memories');
      }
    },
  };
}
