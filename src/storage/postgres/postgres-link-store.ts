import { toIso } from '../../core/clock.js';
import type { LinkedMemory, LinkStore, LinkType } from '../link-store.js';
import { type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';

interface LinkRow {
  source_id: number;
  target_id: number;
  type: LinkType;
  strength: number;
  created_at: number;
}

/** The PostgreSQL implementation of the LinkStore port. */
export function createPostgresLinkStore(database: PostgresDatabase): LinkStore {
  return {
    async add(links, at) {
      return writePg(database, 'storing links', async (q) => {
        let added = 0;
        for (const link of links) {
          if (link.sourceId === link.targetId) continue;
          // xmax = 0 on the returned row: it was inserted, not updated.
          const { rows } = await q.query<{ inserted: boolean }>(
            `INSERT INTO memory_links (source_id, target_id, type, strength, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (source_id, target_id, type) DO UPDATE SET strength = excluded.strength
             RETURNING (xmax = 0) AS inserted`,
            [link.sourceId, link.targetId, link.type, link.strength ?? 1, at],
          );
          if (rows[0]?.inserted) added++;
        }
        return added;
      });
    },

    async of(memoryId) {
      return withPgErrors(`reading the links of memory ${memoryId}`, async () => {
        const { rows } = await database.query<LinkRow>(
          `SELECT source_id, target_id, type, strength, created_at FROM memory_links
           WHERE source_id = $1 OR target_id = $1 ORDER BY created_at, source_id, target_id`,
          [memoryId],
        );
        return rows.map((row) => ({
          sourceId: row.source_id,
          targetId: row.target_id,
          type: row.type,
          strength: row.strength,
          createdAt: toIso(row.created_at),
        }));
      });
    },

    async neighbours(ids, owners, limit) {
      if (ids.length === 0 || limit <= 0 || (owners !== null && owners.length === 0)) return [];
      return withPgErrors('reading linked memories', async () => {
        const { rows } = await database.query<LinkedMemory>(
          `WITH edges AS (
             SELECT l.target_id AS id, l.source_id AS linked_to, l.type, l.strength
               FROM memory_links l WHERE l.source_id = ANY($1::bigint[])
             UNION ALL
             SELECT l.source_id, l.target_id, l.type, l.strength
               FROM memory_links l WHERE l.target_id = ANY($1::bigint[])
           ),
           best AS (
             SELECT DISTINCT ON (edges.id) edges.id, edges.linked_to, edges.type, edges.strength
             FROM edges JOIN memories m ON m.id = edges.id
             WHERE m.archived_at IS NULL AND NOT (edges.id = ANY($1::bigint[]))
               ${owners === null ? '' : 'AND m.owner = ANY($3::text[])'}
             ORDER BY edges.id, edges.strength DESC
           )
           SELECT id, linked_to AS "linkedTo", type, strength FROM best ORDER BY strength DESC, id LIMIT $2`,
          [[...ids], limit, ...(owners === null ? [] : [[...owners]])],
        );
        return rows;
      });
    },

    async removeArchived() {
      // Links of a faded memory stay: a recall may bring it back (ADR 9).
      return writePg(database, 'removing links to archived memories', async (q) => {
        const result = await q.query(
          `DELETE FROM memory_links WHERE type <> 'consolidated' AND (
             source_id IN (SELECT id FROM memories WHERE archived_at IS NOT NULL AND faded_at IS NULL)
             OR target_id IN (SELECT id FROM memories WHERE archived_at IS NOT NULL AND faded_at IS NULL))`,
        );
        return result.changed;
      });
    },
  };
}
