import { VECTORS_CLEARED, type VectorBackfillStore } from '../vector-backfill-store.js';
import { type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';
import type { PostgresVectorIndex } from './postgres-vector-index.js';

/** The PostgreSQL implementation of the VectorBackfillStore port. */
export function createPostgresVectorBackfillStore(
  database: PostgresDatabase,
  vectors: PostgresVectorIndex,
): VectorBackfillStore {
  // Faded memories are searched by recall (ADR 9), so they need a vector too.
  const missing =
    '(archived_at IS NULL OR faded_at IS NOT NULL) AND (embedding_model IS NULL OR embedding_model <> $1)';
  return {
    async countMissing(model) {
      return withPgErrors('counting memories without a vector', async () => {
        const { rows } = await database.query<{ count: number }>(
          `SELECT count(*) AS count FROM memories WHERE ${missing}`,
          [model],
        );
        return rows[0]?.count ?? 0;
      });
    },
    async listMissing(model, afterId, limit) {
      return withPgErrors('listing memories without a vector', async () => {
        const { rows } = await database.query<{ id: number; content: string }>(
          `SELECT id, content FROM memories WHERE ${missing} AND id > $2 ORDER BY id LIMIT $3`,
          [model, afterId, limit],
        );
        return rows;
      });
    },
    async putVectors(entries) {
      return writePg(database, 'storing re-embedded vectors', async (q) => {
        const written: number[] = [];
        for (const entry of entries) {
          const row = (
            await q.query<{ owner: string; content: string; archived_at: number | null; faded_at: number | null }>(
              'SELECT owner, content, archived_at, faded_at FROM memories WHERE id = $1 FOR UPDATE',
              [entry.id],
            )
          ).rows[0];
          const searchable = row && (row.archived_at === null || row.faded_at !== null);
          if (!row || !searchable || row.content !== entry.content) continue;
          await vectors.put(q, entry.id, row.owner, entry.embedding);
          await q.query('UPDATE memories SET embedding_model = $1 WHERE id = $2', [entry.embedding.model, entry.id]);
          written.push(entry.id);
        }
        return written;
      });
    },
    async clearedVectors() {
      return withPgErrors('reading how many vectors labels made stale', async () => {
        const { rows } = await database.query<{ value: string | number }>(
          'SELECT value FROM service_state WHERE name = $1',
          [VECTORS_CLEARED],
        );
        return Number(rows[0]?.value ?? 0);
      });
    },
  };
}
