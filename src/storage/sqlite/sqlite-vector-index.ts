import type Database from 'better-sqlite3';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { SearchHit, StoredEmbedding } from '../memory-store.js';
import type { VectorIndexInfo } from '../storage.js';

/**
 * The `memory_vectors` vec0 table: cosine distance, one row per active memory, the owner key as a
 * metadata column so that `owner IN (...)` filters inside the KNN scan (not after it). It holds the
 * vectors of exactly one model, recorded in `vector_index`; configuring another model recreates it.
 */
export interface SqliteVectorIndex {
  info(): VectorIndexInfo | null;
  configure(info: VectorIndexInfo): boolean;
  put(memoryId: number, owner: string, embedding: StoredEmbedding): void;
  remove(memoryIds: readonly number[]): number;
  search(vector: Float32Array, model: string, owners: readonly string[] | null, limit: number): SearchHit[];
}

/** sqlite-vec's largest `k`. */
const MAX_K = 4096;

export function createSqliteVectorIndex(database: Database.Database): SqliteVectorIndex {
  let current =
    database.prepare<[], VectorIndexInfo>('SELECT model, dimensions FROM vector_index WHERE id = 1').get() ?? null;
  const searches = new Map<number, Database.Statement<unknown[], { id: number; distance: number }>>();
  let insert: Database.Statement<[bigint, Buffer, string]> | undefined;
  let remove: Database.Statement<[bigint]> | undefined;

  function create(info: VectorIndexInfo): void {
    database.exec(`CREATE VIRTUAL TABLE memory_vectors USING vec0(
      memory_id INTEGER PRIMARY KEY,
      embedding float[${info.dimensions}] distance_metric=cosine,
      owner TEXT
    )`);
  }

  function statements() {
    insert ??= database.prepare<[bigint, Buffer, string]>(
      'INSERT INTO memory_vectors (memory_id, embedding, owner) VALUES (?, ?, ?)',
    );
    remove ??= database.prepare<[bigint]>('DELETE FROM memory_vectors WHERE memory_id = ?');
    return { insert, remove };
  }

  function searchStatement(ownerCount: number) {
    let statement = searches.get(ownerCount);
    if (!statement) {
      const filter = ownerCount < 0 ? '' : `AND owner IN (${placeholders(ownerCount)})`;
      statement = database.prepare<unknown[], { id: number; distance: number }>(
        `SELECT memory_id AS id, distance FROM memory_vectors WHERE embedding MATCH ? AND k = ? ${filter}`,
      );
      searches.set(ownerCount, statement);
    }
    return statement;
  }

  return {
    info: () => current,

    configure(info) {
      if (current && current.model === info.model && current.dimensions === info.dimensions) return false;
      const reset = current !== null;
      database
        .transaction(() => {
          database.exec('DROP TABLE IF EXISTS memory_vectors');
          create(info);
          database.prepare('UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL').run();
          database
            .prepare(
              `INSERT INTO vector_index (id, model, dimensions) VALUES (1, ?, ?)
               ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions`,
            )
            .run(info.model, info.dimensions);
        })
        .immediate();
      current = { ...info };
      insert = undefined;
      remove = undefined;
      searches.clear();
      return reset;
    },

    put(memoryId, owner, embedding) {
      if (!current || current.model !== embedding.model) {
        throw new MnemeError(
          ErrorCode.StoreFailed,
          `cannot store a vector of model ${embedding.model}: the index holds ${current?.model ?? 'no model'}`,
        );
      }
      if (embedding.vector.length !== current.dimensions) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `model ${embedding.model} returned ${embedding.vector.length} dimensions, expected ${current.dimensions}`,
        );
      }
      const { insert: insertVector, remove: removeVector } = statements();
      removeVector.run(BigInt(memoryId));
      insertVector.run(BigInt(memoryId), vectorBytes(embedding.vector), owner);
    },

    remove(memoryIds) {
      if (!current) return 0;
      const { remove: removeVector } = statements();
      let removed = 0;
      for (const id of memoryIds) removed += removeVector.run(BigInt(id)).changes;
      return removed;
    },

    search(vector, model, owners, limit) {
      if (!current || current.model !== model || vector.length !== current.dimensions) return [];
      if (owners !== null && owners.length === 0) return [];
      const k = Math.min(Math.max(1, limit), MAX_K);
      return searchStatement(owners === null ? -1 : owners.length)
        .all(vectorBytes(vector), k, ...(owners ?? []))
        .map((row) => ({ id: row.id, score: 1 - row.distance }));
    },
  };
}

export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}
