import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import type { SearchHit, StoredEmbedding } from '../memory-store.js';
import type { VectorIndexInfo } from '../storage.js';
import type { PostgresDatabase, PostgresQueryable } from './postgres-database.js';

/** Whether vector search works on this server, and if not, why and how to make it work. */
export interface PostgresVectorSupport {
  /** True when pgvector is installed in the database: vectors are searched. */
  available: boolean;
  /** pgvector's version, when available. */
  version: string | null;
  /** Why vectors are not searched and how to change that; null when they are. */
  reason: string | null;
}

/**
 * The vector index of a PostgreSQL database (ADR 12): one `real[]` row per memory in `memory_vectors`
 * (with the memory's owner key), for the one model recorded in `vector_index`. Vectors are stored
 * whether or not the server has pgvector, so adding the extension later needs no re-embedding. With
 * pgvector, an HNSW expression index (`embedding::vector(d)`, cosine) serves searches; the scope filter
 * is inside the query: a scope of at most `exactScanLimit` vectors is ranked exactly through the owner
 * index, a larger one walks the HNSW graph with iterative scans (`hnsw.iterative_scan = strict_order`),
 * which keep going until the viewer's `limit` nearest are found, and falls back to the exact scan when
 * the graph walk comes back short. Without pgvector, searches return nothing (lexical-only).
 */
export interface PostgresVectorIndex {
  readonly support: PostgresVectorSupport;
  info(): VectorIndexInfo | null;
  configure(info: VectorIndexInfo): Promise<boolean>;
  /**
   * Stores (or replaces) the vector of a memory, inside the caller's transaction; stores nothing when the
   * database's index holds another model (another process switched it).
   */
  put(transaction: PostgresQueryable, memoryId: number, owner: string, embedding: StoredEmbedding): Promise<void>;
  /** Removes the vectors of these memories, inside the caller's transaction; returns how many there were. */
  remove(transaction: PostgresQueryable, memoryIds: readonly number[]): Promise<number>;
  search(search: {
    vector: Float32Array;
    model: string;
    owners: readonly string[] | null;
    limit: number;
    includeFaded: boolean;
    /** Only hits at least this close (cosine); omitted: no bound. */
    minScore?: number;
  }): Promise<SearchHit[]>;
  vectors(memoryIds: readonly number[]): Promise<Map<number, Float32Array>>;
}

/** pgvector's HNSW indexes vectors of up to this many dimensions; above it, every search is exact. */
const HNSW_MAX_DIMENSIONS = 2000;
/** A scope of at most this many vectors is ranked exactly (through the owner index) by default. */
export const DEFAULT_EXACT_SCAN_LIMIT = 10_000;
/**
 * PGlite's default: PostgreSQL compiled to WebAssembly computes a cosine distance (and casts the
 * `real[]` row to a vector) some 20 to 40 µs a row on the benchmark machine, so ranking 10,000 vectors
 * exactly took a few hundred milliseconds, and a maintenance cycle runs one such search per memory;
 * the graph answers a larger scope in a few milliseconds.
 */
export const PGLITE_EXACT_SCAN_LIMIT = 1_000;
/** Tuples an iterative HNSW scan may visit before it gives up (pgvector's default is 20,000). */
const MAX_SCAN_TUPLES = 200_000;

const INFO_SQL = 'SELECT model, dimensions FROM vector_index WHERE id = 1';

/** A vector as pgvector's text input: `[0.1,0.2,...]`. */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector, (value) => String(value)).join(',')}]`;
}

/** A vector as a PostgreSQL `real[]` literal: `{0.1,0.2,...}` (float32 values round-trip exactly). */
function arrayLiteral(vector: Float32Array): string {
  return `{${Array.from(vector, (value) => String(value)).join(',')}}`;
}

/**
 * Finds out whether the database has pgvector, installing it when the server offers it and the user
 * may (`CREATE EXTENSION vector`).
 */
async function detectVectorSupport(database: PostgresDatabase, wanted: boolean): Promise<PostgresVectorSupport> {
  if (!wanted) return { available: false, version: null, reason: 'vector search was turned off for this store' };
  const installed = async () =>
    (
      await database.query<{ version: string }>(
        "SELECT extversion AS version FROM pg_extension WHERE extname = 'vector'",
      )
    ).rows[0]?.version ?? null;
  let version = await installed();
  if (version) return { available: true, version, reason: null };
  const offered = await database.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
  if (offered.rows.length === 0) {
    return {
      available: false,
      version: null,
      reason:
        'the PostgreSQL server has no pgvector extension, so memories are found by full text only: install pgvector on the server (e.g. the postgresql-NN-pgvector package, or the pgvector/pgvector image) and open the database again',
    };
  }
  try {
    await database.query('CREATE EXTENSION IF NOT EXISTS vector');
  } catch (error) {
    version = await installed().catch(() => null);
    if (version) return { available: true, version, reason: null };
    return {
      available: false,
      version: null,
      reason: `the server offers pgvector but it could not be enabled (${errorMessage(error)}), so memories are found by full text only: run CREATE EXTENSION vector; as a superuser (or the database owner) and open the database again`,
    };
  }
  version = await installed();
  return version
    ? { available: true, version, reason: null }
    : { available: false, version: null, reason: 'pgvector did not install; memories are found by full text only' };
}

export async function createPostgresVectorIndex(
  database: PostgresDatabase,
  options: { vectors?: boolean; exactScanLimit?: number } = {},
): Promise<PostgresVectorIndex> {
  const support = await detectVectorSupport(database, options.vectors !== false);
  const exactScanLimit = options.exactScanLimit ?? DEFAULT_EXACT_SCAN_LIMIT;
  const readInfo = async () => (await database.query<VectorIndexInfo>(INFO_SQL)).rows[0] ?? null;
  let current = await readInfo();

  /** The HNSW index for `dimensions`, created when missing (a new server with pgvector, or a new model). */
  async function ensureGraph(query: PostgresQueryable, dimensions: number): Promise<void> {
    if (!support.available || dimensions > HNSW_MAX_DIMENSIONS) return;
    await query.query(`CREATE INDEX IF NOT EXISTS memory_vectors_hnsw ON memory_vectors
      USING hnsw ((embedding::vector(${dimensions})) vector_cosine_ops)`);
  }
  if (current) {
    try {
      await ensureGraph(database, current.dimensions);
    } catch (error) {
      // Another process creating it at the same moment: it exists now.
      if (!(await database.query("SELECT to_regclass('memory_vectors_hnsw') AS name")).rows[0]) throw error;
    }
  }

  return {
    support,
    info: () => current,

    async configure(info) {
      current = await readInfo();
      if (current && current.model === info.model && current.dimensions === info.dimensions) return false;
      const wasSet = current !== null;
      await database.transaction(async (transaction) => {
        await transaction.query('LOCK TABLE vector_index IN EXCLUSIVE MODE');
        await transaction.query('DROP INDEX IF EXISTS memory_vectors_hnsw');
        // TRUNCATE, not DELETE: the index built below must not see the old model's rows, dead or not.
        await transaction.query('TRUNCATE memory_vectors');
        await transaction.query('UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL');
        await transaction.query(
          `INSERT INTO vector_index (id, model, dimensions) VALUES (1, $1, $2)
           ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions`,
          [info.model, info.dimensions],
        );
        await ensureGraph(transaction, info.dimensions);
      });
      current = { model: info.model, dimensions: info.dimensions };
      return wasSet;
    },

    async put(transaction, memoryId, owner, embedding) {
      const dimensionsFailed = (expected: number) =>
        new MnemeError(
          ErrorCode.ModelFailed,
          `model ${embedding.model} returned ${embedding.vector.length} dimensions, expected ${expected}`,
        );
      if (current?.model === embedding.model && embedding.vector.length !== current.dimensions) {
        throw dimensionsFailed(current.dimensions);
      }
      // Stored only while the database's index holds this model: another process may have switched it
      // (`configure`) since this one read it, and its vectors must not join the new model's.
      const stored = await transaction.query(
        `INSERT INTO memory_vectors (memory_id, owner, embedding)
         SELECT $1, $2, $3::real[] FROM vector_index WHERE id = 1 AND model = $4 AND dimensions = $5
         ON CONFLICT (memory_id) DO UPDATE SET owner = excluded.owner, embedding = excluded.embedding`,
        [memoryId, owner, arrayLiteral(embedding.vector), embedding.model, embedding.vector.length],
      );
      if (stored.changed > 0) return;
      current = (await transaction.query<VectorIndexInfo>(INFO_SQL)).rows[0] ?? null;
      if (current?.model === embedding.model) throw dimensionsFailed(current.dimensions);
      // The index holds another model now (or none): the memory is found by its text until it is re-embedded,
      // as its `embedding_model` is not the index's; a vector the new model made of its former text goes.
      await transaction.query('DELETE FROM memory_vectors WHERE memory_id = $1', [memoryId]);
    },

    async remove(transaction, memoryIds) {
      if (memoryIds.length === 0) return 0;
      const result = await transaction.query('DELETE FROM memory_vectors WHERE memory_id = ANY($1::bigint[])', [
        [...memoryIds],
      ]);
      return result.changed;
    },

    async search({ vector, model, owners, limit, includeFaded, minScore }) {
      if (!support.available || !current || current.model !== model || vector.length !== current.dimensions) return [];
      if (limit <= 0 || (owners !== null && owners.length === 0)) return [];
      const dimensions = current.dimensions;
      const distance = `v.embedding::vector(${dimensions}) <=> $1::vector(${dimensions})`;
      // The model is checked in the statement too: another process may have switched the index since this
      // one read it, and a query of one model must never rank vectors of another (nor cast them to its size).
      const where = [
        'EXISTS (SELECT 1 FROM vector_index WHERE id = 1 AND model = $3 AND dimensions = $4)',
        ...(owners === null ? [] : ['v.owner = ANY($5::text[])']),
        ...(includeFaded ? [] : ['m.faded_at IS NULL']),
      ];
      const parameters = [vectorLiteral(vector), limit, model, dimensions, ...(owners === null ? [] : [[...owners]])];
      const select = (order: string) => `SELECT v.memory_id AS id, 1 - (${distance}) AS score
        FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY ${order}, v.memory_id LIMIT $2`;
      // Adding 0 keeps the planner off the HNSW index: the exact ranking of every visible vector.
      const exact = async () =>
        (await database.query<SearchHit>(select(`(${distance}) + 0`), parameters)).rows.map(toHit);
      let visible = Number.POSITIVE_INFINITY;
      if (owners !== null) {
        const counted = await database.query<{ count: number }>(
          'SELECT count(*) AS count FROM memory_vectors WHERE owner = ANY($1::text[])',
          [[...owners]],
        );
        visible = counted.rows[0]?.count ?? 0;
        if (visible === 0) return [];
      }
      const close = (hits: SearchHit[]) =>
        minScore === undefined ? hits : hits.filter((hit) => hit.score >= minScore);
      if (visible <= exactScanLimit || dimensions > HNSW_MAX_DIMENSIONS) return close(await exact());
      const hits = await database.transaction(async (transaction) => {
        await transaction.query(
          `SELECT set_config('hnsw.iterative_scan', 'strict_order', true),
            set_config('hnsw.ef_search', $1, true), set_config('hnsw.max_scan_tuples', $2, true)`,
          [String(Math.min(1000, Math.max(40, limit * 2))), String(MAX_SCAN_TUPLES)],
        );
        return (await transaction.query<SearchHit>(select(distance), parameters)).rows.map(toHit);
      });
      return close(hits.length < limit && hits.length < visible ? await exact() : hits);
    },

    async vectors(memoryIds) {
      const found = new Map<number, Float32Array>();
      if (memoryIds.length === 0 || !current) return found;
      const { rows } = await database.query<{ id: number; embedding: number[] }>(
        'SELECT memory_id AS id, embedding FROM memory_vectors WHERE memory_id = ANY($1::bigint[])',
        [[...memoryIds]],
      );
      for (const row of rows) found.set(row.id, Float32Array.from(row.embedding));
      return found;
    },
  };
}

function toHit(row: SearchHit): SearchHit {
  return { id: Number(row.id), score: Number(row.score) };
}
