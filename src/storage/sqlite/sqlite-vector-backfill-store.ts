import type Database from 'better-sqlite3';
import type { VectorBackfillStore } from '../vector-backfill-store.js';
import { getRow, toMnemeError } from './sqlite-database.js';
import type { SqliteVectorIndex } from './sqlite-vector-index.js';

/** The SQLite implementation of the VectorBackfillStore port. */
export function createSqliteVectorBackfillStore(
  database: Database.Database,
  vectors: SqliteVectorIndex,
): VectorBackfillStore {
  const missing = 'archived_at IS NULL AND (embedding_model IS NULL OR embedding_model <> @model)';
  const statements = {
    count: database.prepare<{ model: string }, { count: number }>(
      `SELECT COUNT(*) AS count FROM memories WHERE ${missing}`,
    ),
    list: database.prepare<{ model: string; afterId: number; limit: number }, { id: number; content: string }>(
      `SELECT id, content FROM memories WHERE ${missing} AND id > @afterId ORDER BY id LIMIT @limit`,
    ),
    current: database.prepare<[number], { owner: string; content: string; archived_at: number | null }>(
      'SELECT owner, content, archived_at FROM memories WHERE id = ?',
    ),
    mark: database.prepare<[string, number]>('UPDATE memories SET embedding_model = ? WHERE id = ?'),
  };

  return {
    async countMissing(model) {
      try {
        return getRow(statements.count, { model }).count;
      } catch (error) {
        throw toMnemeError(error, 'counting memories without a vector');
      }
    },

    async listMissing(model, afterId, limit) {
      try {
        return statements.list.all({ model, afterId, limit });
      } catch (error) {
        throw toMnemeError(error, 'listing memories without a vector');
      }
    },

    async putVectors(entries) {
      try {
        return database
          .transaction(() =>
            entries.flatMap((entry) => {
              const row = statements.current.get(entry.id);
              if (!row || row.archived_at !== null || row.content !== entry.content) return [];
              vectors.put(entry.id, row.owner, entry.embedding);
              statements.mark.run(entry.embedding.model, entry.id);
              return [entry.id];
            }),
          )
          .immediate();
      } catch (error) {
        throw toMnemeError(error, 'storing re-embedded vectors');
      }
    },
  };
}
