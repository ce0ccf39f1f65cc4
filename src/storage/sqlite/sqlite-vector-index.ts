import type Database from 'better-sqlite3';
import { unusableVector } from '../../core/checked-embedder.js';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import type { SearchHit, StoredEmbedding } from '../memory-store.js';
import type { VectorIndexInfo } from '../storage.js';
import { checkFilesInPlace } from './sqlite-database.js';
import { createSqliteVectorLists, LIST_MIN_VECTORS, type NearestCode, type OlderQuery } from './sqlite-vector-lists.js';

/**
 * The vector index of one database (ADR 10), for the one model recorded in `vector_index`; configuring
 * another model empties it. Every write runs inside the caller's transaction, with the memory it
 * belongs to, so the index is never out of step with the rows, crash or not. Three tables:
 *
 * - `memory_vector_bits`, a sqlite-vec `vec0` table: the sign bit of every dimension (binary
 *   quantisation, 1/32 of the float32 size), partitioned into owner buckets (`bucket`: 0 is `global`
 *   alone, each other owner key shares one of 31 buckets) with the owner as an integer metadata column
 *   (`owner_id`), so the scope filter is part of the KNN scan itself;
 * - `memory_vector_slices`: the exact float32 vector, in slices of 192 numbers (768 bytes, five to a
 *   4 KiB page, where a whole 3 KiB vector takes a page of its own), each with the vector's squared norm;
 * - `vector_owners`: the owner keys that have vectors, their number (`id`) and how many vectors each has.
 *
 * A search asks the bit index for the nearest candidates by Hamming distance among the viewer's
 * owners (a few times more than it must return, more in larger scopes), then ranks those by exact
 * cosine from the float32 slices. A scope no larger than the candidate count is searched exactly.
 * A large scope of a store whose inverted lists (`sqlite-vector-lists.ts`, ADR 20) cover every vector
 * reads those instead of the buckets: a minimum-cosine search (`searchNear`) the bands that may hold
 * such a neighbour, a recall's `search` the few lists nearest the query (ADR 10, 2026-12-01); once the lists'
 * codes are in memory, only the candidates of best estimated cosine are ranked exactly (ADR 10, 2026-12-02).
 */
export interface SqliteVectorIndex {
  info(): VectorIndexInfo | null;
  configure(info: VectorIndexInfo): boolean;
  /**
   * The embedding when the index holds its model now (another connection may have switched the model since
   * this one configured it), else null: the memory is then written without a vector, to be
   * re-embedded by the process of the index's model.
   */
  held(embedding: StoredEmbedding | null | undefined): StoredEmbedding | null;
  put(memoryId: number, owner: string, embedding: StoredEmbedding): void;
  /** Removes the vectors of these memories; returns how many there were. */
  remove(memoryIds: readonly number[]): number;
  search(vector: Float32Array, model: string, owners: readonly string[] | null, limit: number): SearchHit[];
  /**
   * The nearest `limit` vectors at least `minScore` close (cosine), for maintenance's neighbour searches:
   * the bit scan keeps only codes within the Hamming distance such a neighbour has ({@link hammingBound}),
   * so it ranks a few candidates by exact cosine instead of a share of the scope.
   */
  searchNear(
    vector: Float32Array,
    model: string,
    owners: readonly string[] | null,
    limit: number,
    minScore: number,
  ): SearchHit[];
  /**
   * Linking's neighbour searches, many at once (ADR 20, 2026-12-01, session 6): for each, the hits of
   * {@link searchNear} whose id is below its `olderThan`, as {@link searchNear} answers them (same
   * order, scores and limit). A search of the inverted lists first asks them whether any code within the
   * Hamming bound of an older vector lies in the bands {@link searchNear} would read: when none does
   * (linking's first pass over a store of few near-duplicates: almost every memory), its answer holds no
   * older hit and the search is skipped; the others are searched whole.
   */
  searchNearOlder(searches: readonly NearOlderSearch[], model: string, limit: number, minScore: number): SearchHit[][];
  /**
   * The stored vectors of those of these memories that have one. A page of ids gets one array for all its vectors,
   * `into` when it is given and large enough (each vector then a view of it, until it is written again).
   */
  vectors(memoryIds: readonly number[], into?: Float32Array): Map<number, Float32Array>;
  /**
   * One bounded step of training or filling the inverted lists of a large store (ADR 20), in the
   * caller's transaction; true when it did work: call again until false.
   */
  indexStep(): boolean;
}

/** One search of {@link SqliteVectorIndex.searchNearOlder}: a memory's vector, the owners it may see, its id. */
export interface NearOlderSearch {
  vector: Float32Array;
  owners: readonly string[] | null;
  /** Only hits of a smaller id are answered. */
  olderThan: number;
}

export interface SqliteVectorIndexOptions {
  /** Stores with fewer vectors get no inverted lists (ADR 20); tests lower it. */
  listMinVectors?: number;
  /** Lists a recall's `search` probes once they are built (ADR 10, 2026-12-01); 0 scans the owner buckets. */
  listProbes?: number;
  /** Searches without a write before the lists' codes are searched in memory (ADR 20); tests set 0 or Infinity. */
  listSnapshotAfter?: number;
  /** Residual rows read a statement when recall first estimates (ADR 10, 2026-12-02, session 12); tests lower it. */
  listResidualPage?: number;
  /** Candidates re-ranked exactly when the lists' codes estimate their cosines ({@link RERANK}); at least the limit. */
  rerank?: number;
  /**
   * Candidates re-ranked exactly when every one has the finer estimate of its residual code ({@link RESIDUAL_RERANK};
   * `rerank` when only that is given); at least the limit.
   */
  residualRerank?: number;
}

/** sqlite-vec's largest `k`. */
export const MAX_K = 4096;
/** Buckets (vec0 partitions) shared by the owner keys other than `global`, which has bucket 0 to itself. */
export const OWNER_BUCKETS = 31;
/** Rows per vec0 chunk: what an almost empty bucket costs (about 14 KiB with 768 dimensions). */
const CHUNK_SIZE = 128;
/** Float32 numbers per stored slice: 768 bytes, so five slices fill a 4 KiB page. */
const SLICE_FLOATS = 192;
/** Slice numbers per memory in `memory_vector_slices.key` (memory id * 64 + slice). */
const SLICE_SLOTS = 64;
/** Candidates ranked by exact cosine: this many per hit asked for... */
const OVERSAMPLING = 4;
/** ...and at least this share of the vectors the viewer may see (more near ties to tell apart in larger scopes). */
const CANDIDATE_SHARE = 1 / 100;
/** Hamming distances of recent searches kept per partition filter, to bound the next scan. */
const THRESHOLD_HISTORY = 8;
/** The bound is the largest of them plus this share, so a search a little farther from its neighbours stays within it. */
const THRESHOLD_SLACK = 0.05;
const THRESHOLD_FILTERS = 1024;

/**
 * Lists probed by a recall's `search`, nearest centroid first, with the overflow partition. On the
 * bench's corpus at 100,000 (158 lists) recall@10 against exact search is 0.989-0.990 from 1 probe to
 * 32, as with the bucket scan; 8 leaves room for vectors less clustered (ADR 10, 2026-12-01, fifth pass).
 */
export const LIST_PROBES = 8;

/**
 * Candidates re-ranked by exact cosine (at least the limit asked for) when the inverted lists' codes in memory
 * gave each an estimate of its cosine (ADR 10, 2026-12-02, session 8): the best of the Hamming candidates by
 * that estimate; the others are not read.
 */
export const RERANK = 256;

/**
 * Candidates re-ranked by exact cosine when every candidate's estimate is the finer one of its residual code (ADR 10,
 * 2026-12-02, session 11): recall@10 against exact search at least 0.975 on the bench's corpus at 100,000, as
 * {@link RERANK} gives with the estimate of the signs alone.
 */
export const RESIDUAL_RERANK = 160;

/**
 * The viewer's vectors for which {@link RERANK} and {@link RESIDUAL_RERANK} were measured (the bench's viewers at
 * 100,000 see about 50,000). A larger scope re-ranks more, in proportion to the square root of its size (ADR 10,
 * 2026-12-02, session 12): with 500,000 visible (the bench at 1,000,000), 160 re-ranks gave recall@10 0.875 against
 * exact search and 512 gave 0.97; more vectors crowd the cosines near the tenth's, where the estimates' errors reorder
 * them.
 */
export const RERANK_SCOPE = 50_000;

/** The re-rank count `base` measured at {@link RERANK_SCOPE} vectors, for a viewer who may see `visible`. */
export function rerankFor(base: number, visible: number): number {
  return Math.ceil(base * Math.sqrt(Math.max(1, visible / RERANK_SCOPE)));
}

/**
 * The `count` candidates of best estimate when every candidate has one, else all of them: candidates found
 * through SQL (the owner buckets, or the lists before their codes are read into memory) have none. When every
 * candidate's estimate is the finer one ({@link NearestCode.refined}), `refinedCount` of them instead.
 */
function bestEstimated(
  candidates: readonly NearestCode[],
  count: number,
  refinedCount: number,
): readonly NearestCode[] {
  if (candidates.some((candidate) => candidate.estimate === undefined)) return candidates;
  if (candidates.every((candidate) => candidate.refined === true)) count = refinedCount;
  if (candidates.length <= count) return candidates;
  return [...candidates].sort((a, b) => (b.estimate ?? 0) - (a.estimate ?? 0) || a.id - b.id).slice(0, count);
}

/** Standard deviations above the expected Hamming distance that {@link hammingBound} allows. */
const HAMMING_DEVIATIONS = 5;

/**
 * The Hamming distance between the sign bits of two vectors of `dimensions` whose cosine is
 * `minScore`, with room to spare: a sign bit differs with probability angle / pi (the angle between
 * the vectors), so the distance is about binomial; the bound is its mean plus five standard deviations.
 */
export function hammingBound(dimensions: number, minScore: number): number {
  const share = Math.acos(Math.min(1, Math.max(-1, minScore))) / Math.PI;
  const mean = dimensions * share;
  return Math.ceil(mean + HAMMING_DEVIATIONS * Math.sqrt(dimensions * share * (1 - share)));
}

/** The bucket (vec0 partition) of an owner key with number `ownerId`. */
export function ownerBucket(owner: string, ownerId: number): number {
  return owner === 'global' ? 0 : 1 + (ownerId % OWNER_BUCKETS);
}

/** Float32 numbers per slice for `dimensions`: 192, more above 12,288 dimensions. */
export function sliceFloats(dimensions: number): number {
  return Math.max(SLICE_FLOATS, Math.ceil(dimensions / SLICE_SLOTS));
}

/**
 * The sign bits of a vector as sqlite-vec's `vec_quantize_binary` lays them out (bit i%8 of byte i/8
 * set when value i is positive), padded with zero bits to whole bytes.
 */
export function binaryCode(vector: Float32Array): Buffer {
  const code = Buffer.alloc(Math.ceil(vector.length / 8));
  for (let index = 0; index < vector.length; index++) {
    if ((vector[index] ?? 0) > 0) code[index >> 3] = (code[index >> 3] ?? 0) | (1 << (index & 7));
  }
  return code;
}

/** The `memory_vector_bits` table for vectors of `dimensions` (bits padded to whole bytes), with its bucket index. */
export function createVectorBitsTable(database: Database.Database, dimensions: number): void {
  database.exec(`CREATE VIRTUAL TABLE memory_vector_bits USING vec0(
      memory_id INTEGER PRIMARY KEY,
      bucket INTEGER PARTITION KEY,
      bits bit[${Math.ceil(dimensions / 8) * 8}],
      owner_id INTEGER,
      chunk_size=${CHUNK_SIZE}
    );
    CREATE INDEX memory_vector_bits_chunks_by_bucket ON memory_vector_bits_chunks (partition00);`);
}

interface OwnerRow {
  id: number;
  owner: string;
  vectors: number;
}

/** One KNN scan of the bit index: a bucket (null: all) and the owners to keep in it (null: all). */
interface Scan {
  bucket: number | null;
  ownerIds: number[] | null;
  /** Vectors the viewer may see in it. */
  rows: number;
}

interface Neighbour {
  id: number;
  distance: number;
}

export function createSqliteVectorIndex(
  database: Database.Database,
  options: SqliteVectorIndexOptions = {},
): SqliteVectorIndex {
  const readModel = database.prepare<[], VectorIndexInfo>('SELECT model, dimensions FROM vector_index WHERE id = 1');
  const dataVersion = database.prepare<[], number>('PRAGMA data_version').pluck();
  let current = readModel.get() ?? null;
  let seenVersion = dataVersion.get();
  const listMinVectors = options.listMinVectors ?? LIST_MIN_VECTORS;
  const listProbes = options.listProbes ?? LIST_PROBES;
  const rerank = options.rerank ?? RERANK;
  const residualRerank = options.residualRerank ?? options.rerank ?? RESIDUAL_RERANK;
  const lists = createSqliteVectorLists(database, {
    minVectors: listMinVectors,
    ...(options.listSnapshotAfter === undefined ? {} : { snapshotAfter: options.listSnapshotAfter }),
    ...(options.listResidualPage === undefined ? {} : { residualPage: options.listResidualPage }),
    read: (ids) => readVectors(ids),
  });
  let prepared: ReturnType<typeof prepareStatements> | null = null;
  const scans = new Map<string, Database.Statement<unknown[], Neighbour>>();
  const rescores = new Map<number, Database.Statement<[Record<string, unknown>], string>>();
  /** Per scan filter, the distance of the last candidate of recent full scans. */
  const thresholds = new Map<string, number[]>();
  /**
   * The `vector_owners` id of each owner key this connection counted a vector for: the next vector of that
   * owner is counted by id (`countById`, a tenth of the upsert's cost) when the row is still that owner's.
   */
  const ownerIds = new Map<string, number>();

  function statements() {
    prepared ??= prepareStatements(database);
    return prepared;
  }

  /**
   * The model the file's index holds now: another connection may have switched it (`configure`), and this
   * connection would otherwise store and search vectors of the model it last saw. `data_version` moves with
   * every commit of another connection, so the row is read again only then.
   */
  function refresh(): void {
    const version = dataVersion.get();
    if (version === seenVersion) return;
    seenVersion = version;
    const stored = readModel.get() ?? null;
    if (stored?.model === current?.model && stored?.dimensions === current?.dimensions) return;
    current = stored;
    reset();
  }

  function reset(): void {
    prepared = null;
    ownerIds.clear();
    scans.clear();
    rescores.clear();
    thresholds.clear();
  }

  function scanStatement(scan: Scan, bounded: boolean) {
    const key = `${scan.bucket === null ? '*' : 'b'}:${scan.ownerIds?.length ?? '*'}:${bounded}`;
    let statement = scans.get(key);
    if (!statement) {
      const conditions = [
        scan.bucket === null ? '' : 'AND bucket = ?',
        scan.ownerIds === null ? '' : `AND owner_id IN (${placeholders(scan.ownerIds.length)})`,
        bounded ? 'AND distance <= ?' : '',
      ].join(' ');
      statement = database.prepare<unknown[], Neighbour>(
        `SELECT memory_id AS id, distance FROM memory_vector_bits WHERE bits MATCH vec_bit(?) AND k = ? ${conditions}`,
      );
      scans.set(key, statement);
    }
    return statement;
  }

  function rescoreStatement(slices: number) {
    let statement = rescores.get(slices);
    if (!statement) {
      const querySlice =
        slices === 1
          ? '@s0'
          : `CASE s.key % ${SLICE_SLOTS} ${Array.from({ length: slices - 1 }, (_, index) => `WHEN ${index} THEN @s${index}`).join(' ')} ELSE @s${slices - 1} END`;
      // |q - v|^2 is the sum over the slices, and cos(q, v) = (|q|^2 + |v|^2 - |q - v|^2) / (2 |q| |v|).
      // The scores come back as one JSON array in the ids' order: one string for better-sqlite3 to return
      // instead of a row object per candidate (about a sixth of the statement's CPU with 504 candidates),
      // and SQLite writes each double so that it reads back to the same value.
      statement = database
        .prepare<[Record<string, unknown>], string>(
          `SELECT json_group_array((
            SELECT (@queryNorm2 + max(s.norm2) - sum(pow(vec_distance_l2(s.vector, ${querySlice}), 2)))
              / (2 * sqrt(@queryNorm2 * max(s.norm2)))
            FROM memory_vector_slices AS s
            WHERE s.key BETWEEN c.value * ${SLICE_SLOTS} AND c.value * ${SLICE_SLOTS} + ${SLICE_SLOTS - 1}
          ) ORDER BY c.key)
          FROM json_each(@ids) AS c`,
        )
        .pluck();
      rescores.set(slices, statement);
    }
    return statement;
  }

  /** The nearest `wanted` vectors of one scan by Hamming distance, bounded by recent scans when it can be. */
  function nearest(scan: Scan, code: Buffer, wanted: number): Neighbour[] {
    const filter = `${scan.bucket ?? '*'}:${scan.ownerIds?.join(',') ?? '*'}`;
    return boundedByRecent(filter, wanted, scan.rows > wanted, (bound) =>
      scanStatement(scan, bound !== null).all(
        code,
        wanted,
        ...(scan.bucket === null ? [] : [BigInt(scan.bucket)]),
        ...(scan.ownerIds ?? []).map(BigInt),
        ...(bound === null ? [] : [bound]),
      ),
    );
  }

  /**
   * The nearest `wanted` of a KNN run with a Hamming bound (null: none), the bound taken from the
   * recent runs of the same `filter` when there are some and `bounded` allows it.
   */
  function boundedByRecent(
    filter: string,
    wanted: number,
    bounded: boolean,
    run: (bound: number | null) => Neighbour[],
  ): Neighbour[] {
    const recent = thresholds.get(filter);
    let found: Neighbour[] | null = null;
    if (recent && bounded) {
      // sqlite-vec keeps its k best per chunk with a selection that costs k passes over the chunk:
      // with the distance bounded, only the few rows within it are candidates. Whatever the bound,
      // the answer is the k nearest when at least k rows are within it; otherwise scan again unbounded.
      found = run(Math.ceil(Math.max(...recent) * (1 + THRESHOLD_SLACK)));
      if (found.length < wanted) found = null;
    }
    found ??= run(null);
    const last = found[wanted - 1];
    if (last) {
      const history = thresholds.get(filter) ?? [];
      history.push(last.distance);
      if (history.length > THRESHOLD_HISTORY) history.shift();
      thresholds.delete(filter);
      thresholds.set(filter, history);
      if (thresholds.size > THRESHOLD_FILTERS) thresholds.delete(thresholds.keys().next().value ?? '');
    }
    return found;
  }

  /** At most `wanted` vectors of one scan within Hamming distance `bound`, nearest first. */
  function within(scan: Scan, code: Buffer, wanted: number, bound: number): Neighbour[] {
    return scanStatement(scan, true).all(
      code,
      wanted,
      ...(scan.bucket === null ? [] : [BigInt(scan.bucket)]),
      ...(scan.ownerIds ?? []).map(BigInt),
      bound,
    );
  }

  /** The scans of the viewer's owners and how many vectors they may see. */
  function scansFor(owners: readonly string[] | null): { scans: Scan[]; visible: number; ownerIds: number[] | null } {
    const sql = statements();
    const found = owners === null ? sql.allOwners.all() : sql.ownersNamed.all(JSON.stringify(owners));
    const scans = scansOf(found, owners === null);
    return {
      scans,
      visible: scans.reduce((sum, scan) => sum + scan.rows, 0),
      ownerIds: owners === null ? null : found.map((row) => row.id),
    };
  }

  /** Exact cosine similarity of `vector` with each of these memories' stored vectors. */
  function rescore(vector: Float32Array, ids: readonly number[]): SearchHit[] {
    if (ids.length === 0 || !current) return [];
    const floats = sliceFloats(current.dimensions);
    const parameters: Record<string, unknown> = { ids: JSON.stringify(ids), queryNorm2: squaredNorm(vector) };
    const slices = Math.ceil(vector.length / floats);
    for (let slice = 0; slice < slices; slice++) {
      parameters[`s${slice}`] = vectorBytes(
        vector.subarray(slice * floats, Math.min(vector.length, (slice + 1) * floats)),
      );
    }
    const scores = JSON.parse(rescoreStatement(slices).get(parameters) ?? '[]') as Array<number | null>;
    return ids.map((id, index) => ({ id, score: Math.min(1, Math.max(-1, scores[index] ?? 0)) }));
  }

  /** The scans that cover these owners: one per bucket, filtered on the owners in it. */
  function scansOf(owners: readonly OwnerRow[], all: boolean): Scan[] {
    if (all) return [{ bucket: null, ownerIds: null, rows: owners.reduce((sum, row) => sum + row.vectors, 0) }];
    const byBucket = new Map<number, Scan>();
    for (const row of owners) {
      const bucket = ownerBucket(row.owner, row.id);
      const scan = byBucket.get(bucket) ?? { bucket, ownerIds: bucket === 0 ? null : [], rows: 0 };
      scan.ownerIds?.push(row.id);
      scan.rows += row.vectors;
      byBucket.set(bucket, scan);
    }
    return [...byBucket.values()];
  }

  /**
   * Counts one more vector of `owner` and returns its `vector_owners` id. By the remembered id when that
   * row is still the owner's (a rolled-back transaction or another connection may have removed it, and an
   * id may be given again to another owner: the statement matches both), else by the upsert.
   */
  function countVector(owner: string): number {
    const sql = statements();
    const known = ownerIds.get(owner);
    if (known !== undefined && sql.countById.run(known, owner).changes === 1) return known;
    const { id } = sql.countUp.get(owner) ?? { id: 0 };
    ownerIds.set(owner, id);
    return id;
  }

  function removeOne(memoryId: number): boolean {
    const sql = statements();
    const row = sql.ownerOf.get(BigInt(memoryId));
    if (!row) return false;
    sql.removeBits.run(BigInt(memoryId));
    lists.remove(memoryId);
    sql.removeSlices.run(memoryId * SLICE_SLOTS, memoryId * SLICE_SLOTS + SLICE_SLOTS - 1);
    sql.countDown.run(row.owner_id);
    sql.forgetOwner.run(row.owner_id);
    return true;
  }

  return {
    info: () => {
      refresh();
      return current;
    },

    configure(info) {
      refresh();
      if (current && current.model === info.model && current.dimensions === info.dimensions) return false;
      const wasSet = current !== null;
      database
        .transaction(() => {
          database.exec(`DROP TABLE IF EXISTS memory_vector_bits;
            DELETE FROM memory_vector_slices;
            DELETE FROM vector_owners;`);
          lists.clear();
          createVectorBitsTable(database, info.dimensions);
          database.prepare('UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL').run();
          database
            .prepare(
              `INSERT INTO vector_index (id, model, dimensions) VALUES (1, ?, ?)
               ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions`,
            )
            .run(info.model, info.dimensions);
          checkFilesInPlace(database);
        })
        .immediate();
      current = { ...info };
      reset();
      return wasSet;
    },

    held(embedding) {
      if (!embedding) return null;
      refresh();
      return current?.model === embedding.model ? embedding : null;
    },

    put(memoryId, owner, embedding) {
      refresh();
      if (!current || current.model !== embedding.model) {
        throw new MnemeError(
          ErrorCode.StoreFailed,
          `cannot store a vector of model ${embedding.model}: the index holds ${current?.model ?? 'no model'}`,
        );
      }
      const { vector } = embedding;
      if (vector.length !== current.dimensions) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `model ${embedding.model} returned ${vector.length} dimensions, expected ${current.dimensions}`,
        );
      }
      const problem = unusableVector(vector);
      if (problem !== null) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `model ${embedding.model} returned an unusable vector (${problem})`,
        );
      }
      removeOne(memoryId);
      const sql = statements();
      const ownerId = countVector(owner);
      const code = binaryCode(vector);
      sql.insertBits.run(BigInt(memoryId), BigInt(ownerBucket(owner, ownerId)), code, BigInt(ownerId));
      lists.put(memoryId, ownerId, vector, code);
      const floats = sliceFloats(vector.length);
      const norm2 = squaredNorm(vector);
      for (let slice = 0; slice * floats < vector.length; slice++) {
        const part = vector.subarray(slice * floats, Math.min(vector.length, (slice + 1) * floats));
        sql.insertSlice.run(memoryId * SLICE_SLOTS + slice, vectorBytes(part), norm2);
      }
    },

    remove(memoryIds) {
      refresh();
      if (!current) return 0;
      let removed = 0;
      for (const id of memoryIds) if (removeOne(id)) removed++;
      return removed;
    },

    search(vector, model, owners, limit) {
      refresh();
      if (!current || current.model !== model || vector.length !== current.dimensions) return [];
      if (owners !== null && owners.length === 0) return [];
      const k = Math.min(Math.max(1, limit), MAX_K);
      const { scans, visible, ownerIds } = scansFor(owners);
      if (visible === 0) return [];
      const wanted = Math.min(MAX_K, visible, Math.max(k * OVERSAMPLING, Math.ceil(visible * CANDIDATE_SHARE)));
      const code = binaryCode(vector);
      // A large scope of a store whose lists cover every vector reads the lists nearest the query and
      // the overflow partition, the owner filter inside each KNN; the others scan their owner buckets,
      // as does a search whose probed lists hold fewer than k of the viewer's vectors (its memories lie
      // in other lists): a viewer who may see k memories always gets k.
      const probed =
        listProbes > 0 && visible >= listMinVectors && lists.complete()
          ? boundedByRecent(`lists:${ownerIds?.join(',') ?? '*'}`, wanted, true, (bound) =>
              lists.nearest(vector, code, ownerIds, wanted, listProbes, bound),
            )
          : null;
      const candidates =
        probed !== null && probed.length >= k
          ? probed
          : scans
              .flatMap((scan) => (scan.rows === 0 ? [] : nearest(scan, code, Math.min(wanted, scan.rows))))
              .sort((a, b) => a.distance - b.distance || a.id - b.id)
              .slice(0, wanted);
      // In id order, the slices are read in key order: neighbouring B-tree pages, not random ones.
      return rescore(
        vector,
        bestEstimated(
          candidates,
          Math.max(k, rerankFor(rerank, visible)),
          Math.max(k, rerankFor(residualRerank, visible)),
        )
          .map((candidate) => candidate.id)
          .sort((a, b) => a - b),
      )
        .sort((a, b) => b.score - a.score || a.id - b.id)
        .slice(0, k);
    },

    searchNear,

    searchNearOlder(searches, model, limit, minScore) {
      refresh();
      const answers: SearchHit[][] = searches.map(() => []);
      if (!current || current.model !== model) return answers;
      const older = (hits: SearchHit[], olderThan: number) => hits.filter((hit) => hit.id < olderThan);
      const whole = (index: number) => {
        const search = searches[index];
        if (search) {
          answers[index] = older(searchNear(search.vector, model, search.owners, limit, minScore), search.olderThan);
        }
      };
      // The searches searchNear would answer from the lists are asked of them together; the others are searched whole.
      const listed: number[] = [];
      const queries: OlderQuery[] = [];
      const scopes = new Map<string, ReturnType<typeof scansFor>>();
      const complete = lists.complete();
      for (const [index, search] of searches.entries()) {
        if (search.vector.length !== current.dimensions || (search.owners !== null && search.owners.length === 0)) {
          continue;
        }
        const key = search.owners === null ? '*' : JSON.stringify(search.owners);
        let scope = scopes.get(key);
        if (!scope) {
          scope = scansFor(search.owners);
          scopes.set(key, scope);
        }
        if (scope.visible === 0) continue;
        if (!complete || scope.visible < listMinVectors) {
          whole(index);
          continue;
        }
        listed.push(index);
        queries.push({
          olderThan: search.olderThan,
          vector: search.vector,
          code: binaryCode(search.vector),
          ownerIds: scope.ownerIds,
        });
      }
      const found =
        queries.length === 0 ? [] : lists.mayHoldOlder(queries, hammingBound(current.dimensions, minScore), minScore);
      for (const [at, index] of listed.entries()) if (found === null || found[at]) whole(index);
      return answers;
    },

    vectors: (memoryIds, into) => readVectors(memoryIds, into),

    indexStep() {
      refresh();
      return current ? lists.step(current.dimensions) : false;
    },
  };

  function searchNear(
    vector: Float32Array,
    model: string,
    owners: readonly string[] | null,
    limit: number,
    minScore: number,
  ): SearchHit[] {
    refresh();
    if (!current || current.model !== model || vector.length !== current.dimensions) return [];
    if (owners !== null && owners.length === 0) return [];
    const k = Math.min(Math.max(1, limit), MAX_K);
    const { scans, visible, ownerIds } = scansFor(owners);
    if (visible === 0) return [];
    const wanted = Math.min(MAX_K, visible, k * OVERSAMPLING);
    const code = binaryCode(vector);
    const bound = hammingBound(current.dimensions, minScore);
    // A large scope of a store whose lists are complete reads only the lists' bands that may hold
    // such a neighbour (ADR 20); the others scan their owner buckets, as does a search that finds the lists
    // incomplete when it reads them (another process switched them to a new training since `complete()`).
    const listed =
      visible >= listMinVectors && lists.complete()
        ? lists.near(vector, code, ownerIds, wanted, bound, minScore)
        : null;
    const candidates =
      listed ??
      scans
        .flatMap((scan) => (scan.rows === 0 ? [] : within(scan, code, Math.min(wanted, scan.rows), bound)))
        .sort((a, b) => a.distance - b.distance || a.id - b.id)
        .slice(0, wanted);
    return rescore(
      vector,
      candidates.map((candidate) => candidate.id),
    )
      .filter((hit) => hit.score >= minScore)
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, k);
  }

  function readVectors(memoryIds: readonly number[], into?: Float32Array): Map<number, Float32Array> {
    const found = new Map<number, Float32Array>();
    if (!current) return found;
    const dimensions = current.dimensions;
    const { slicesOf, slicesBetween } = statements();
    // A page of ids (below) gets one array for all its vectors, each vector a view of its part: one allocation a
    // page, not one a vector, and none where the caller gives one to reuse (2026-12-03, session 18: linking's first
    // pass made 100,000 of them, and what the collector had not yet freed of them was much of that pass's peak
    // resident set).
    let block: Float32Array | null = null;
    let filled = 0;
    const assemble = (id: number, parts: readonly Buffer[]) => {
      if (parts.length === 0) return;
      // A reused array holds the last page's floats: zeroed first, as a new one is.
      const vector = block
        ? block.subarray(filled * dimensions, ++filled * dimensions).fill(0)
        : new Float32Array(dimensions);
      // Each slice's bytes straight into the vector's (ADR 20, 2026-12-03, session 13): the same floats, bit for
      // bit, without a copy of every slice (linking's first pass reads all 100,000 vectors of such a store, and the
      // copies were garbage the collector let pile up, about a third of the bytes it allocated per vector).
      const bytes = new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
      let offset = 0;
      for (const part of parts) {
        const floats = Math.floor(part.length / 4);
        const taken = Math.max(0, Math.min(floats, dimensions - offset));
        bytes.set(part.subarray(0, taken * 4), offset * 4);
        offset += floats;
      }
      found.set(id, vector);
    };
    if (isDenseAscending(memoryIds)) {
      // Ids in order and close together (a page of the lists' assignment or of linking): one statement over
      // their keys' range rather than one each (ADR 20, 2026-12-02, session 8); the same slices, in key order.
      const wanted = new Set(memoryIds);
      const size = memoryIds.length * dimensions;
      block = into && into.length >= size ? into : new Float32Array(size);
      const first = memoryIds[0] ?? 0;
      const last = memoryIds.at(-1) ?? 0;
      let id = -1;
      let parts: Buffer[] = [];
      for (const row of slicesBetween.all(first * SLICE_SLOTS, last * SLICE_SLOTS + SLICE_SLOTS - 1)) {
        const owner = Math.floor(row.key / SLICE_SLOTS);
        if (owner !== id) {
          if (wanted.has(id)) assemble(id, parts);
          id = owner;
          parts = [];
        }
        parts.push(row.vector);
      }
      if (wanted.has(id)) assemble(id, parts);
      return found;
    }
    for (const id of memoryIds) assemble(id, slicesOf.all(id * SLICE_SLOTS, id * SLICE_SLOTS + SLICE_SLOTS - 1));
    return found;
  }
}

/**
 * Whether `ids` ascend strictly, are whole numbers, and span at most twice their number (a range read then reads
 * at most as many vectors again as asked for); from 8 ids.
 */
function isDenseAscending(ids: readonly number[]): boolean {
  if (ids.length < 8) return false;
  for (let at = 0; at < ids.length; at++) {
    const id = ids[at] ?? 0;
    if (!Number.isSafeInteger(id) || id < 0 || (at > 0 && id <= (ids[at - 1] ?? 0))) return false;
  }
  return (ids.at(-1) ?? 0) - (ids[0] ?? 0) < 2 * ids.length;
}

function prepareStatements(database: Database.Database) {
  return {
    ownerOf: database.prepare<[bigint], { owner_id: number }>(
      'SELECT owner_id FROM memory_vector_bits WHERE memory_id = ?',
    ),
    removeBits: database.prepare<[bigint]>('DELETE FROM memory_vector_bits WHERE memory_id = ?'),
    removeSlices: database.prepare<[number, number]>('DELETE FROM memory_vector_slices WHERE key BETWEEN ? AND ?'),
    countUp: database.prepare<[string], { id: number }>(
      `INSERT INTO vector_owners (owner, vectors) VALUES (?, 1)
      ON CONFLICT (owner) DO UPDATE SET vectors = vectors + 1 RETURNING id`,
    ),
    countById: database.prepare<[number, string]>(
      'UPDATE vector_owners SET vectors = vectors + 1 WHERE id = ? AND owner = ?',
    ),
    countDown: database.prepare<[number]>('UPDATE vector_owners SET vectors = vectors - 1 WHERE id = ?'),
    forgetOwner: database.prepare<[number]>('DELETE FROM vector_owners WHERE id = ? AND vectors <= 0'),
    insertBits: database.prepare<[bigint, bigint, Buffer, bigint]>(
      'INSERT INTO memory_vector_bits (memory_id, bucket, bits, owner_id) VALUES (?, ?, vec_bit(?), ?)',
    ),
    insertSlice: database.prepare<[number, Buffer, number]>(
      'INSERT INTO memory_vector_slices (key, vector, norm2) VALUES (?, ?, ?)',
    ),
    slicesOf: database
      .prepare<[number, number], Buffer>(
        'SELECT vector FROM memory_vector_slices WHERE key BETWEEN ? AND ? ORDER BY key',
      )
      .pluck(),
    slicesBetween: database.prepare<[number, number], { key: number; vector: Buffer }>(
      'SELECT key, vector FROM memory_vector_slices WHERE key BETWEEN ? AND ? ORDER BY key',
    ),
    allOwners: database.prepare<[], OwnerRow>('SELECT id, owner, vectors FROM vector_owners'),
    ownersNamed: database.prepare<[string], OwnerRow>(
      'SELECT id, owner, vectors FROM vector_owners WHERE owner IN (SELECT value FROM json_each(?))',
    ),
  };
}

export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

function squaredNorm(vector: Float32Array): number {
  let sum = 0;
  for (const value of vector) sum += value * value;
  return sum;
}

function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}
