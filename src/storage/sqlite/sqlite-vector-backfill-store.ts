import type Database from 'better-sqlite3';
import { VECTORS_CLEARED, type VectorBackfillStore } from '../vector-backfill-store.js';
import { checkFilesInPlace, getRow, preparedOnUse, toMnemeError } from './sqlite-database.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

/** The SQLite implementation of the VectorBackfillStore port. */
export function createSqliteVectorBackfillStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
): VectorBackfillStore {
  // Faded memories are searched by recall (ADR 9), so they need a vector too.
  const missing =
    '(archived_at IS NULL OR faded_at IS NOT NULL) AND (embedding_model IS NULL OR embedding_model <> @model)';
  const statements = {
    count: preparedOnUse<{ model: string }, { count: number }>(
      database,
      `SELECT COUNT(*) AS count FROM memories WHERE ${missing}`,
    ),
    list: preparedOnUse<{ model: string; afterId: number; limit: number }, { id: number; content: string }>(
      database,
      `SELECT id, content FROM memories WHERE ${missing} AND id > @afterId ORDER BY id LIMIT @limit`,
    ),
    current: preparedOnUse<
      [number],
      { owner: string; content: string; archived_at: number | null; faded_at: number | null }
    >(database, 'SELECT owner, content, archived_at, faded_at FROM memories WHERE id = ?'),
    mark: database.prepare<[string, number]>('UPDATE memories SET embedding_model = ? WHERE id = ?'),
    cleared: preparedOnUse<[string], { value: number }>(database, 'SELECT value FROM service_state WHERE name = ?'),
  };

  return {
    async countMissing(model) {
      try {
        return getRow(statements.count(), { model }).count;
      } catch (error) {
        throw toMnemeError(error, 'counting memories without a vector');
      }
    },

    async listMissing(model, afterId, limit) {
      try {
        return statements.list().all({ model, afterId, limit });
      } catch (error) {
        throw toMnemeError(error, 'listing memories without a vector');
      }
    },

    async putVectors(entries) {
      try {
        return database
          .transaction(() => {
            const stored = entries.flatMap((entry) => {
              const row = statements.current().get(entry.id);
              const searchable = row && (row.archived_at === null || row.faded_at !== null);
              if (!row || !searchable || row.content !== entry.content || !vectors.held(entry.embedding)) return [];
              vectors.put(entry.id, row.owner, entry.embedding);
              statements.mark.run(entry.embedding.model, entry.id);
              return [entry.id];
            });
            checkFilesInPlace(database);
            return stored;
          })
          .immediate();
      } catch (error) {
        throw toMnemeError(error, 'storing re-embedded vectors');
      }
    },

    async clearedVectors() {
      try {
        return statements.cleared().get(VECTORS_CLEARED)?.value ?? 0;
      } catch (error) {
        throw toMnemeError(error, 'reading how many vectors labels made stale');
      }
    },
  };
}
