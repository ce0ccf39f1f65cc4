import type Database from 'better-sqlite3';
import { type CodeScan, createCodeScan, createDotProducts, type DotProducts } from './sqlite-code-scan.js';
import { createSqliteRecallChanges } from './sqlite-recall-changes.js';

/**
 * Inverted lists over the sign bits of a large store (ADR 20, migration 15), for the neighbour
 * searches of maintenance (`searchNear`: every vector at least a cosine close). A k-means coarse
 * quantiser, trained over a sample of the store's vectors in bounded steps, gives each vector a list
 * (its nearest centroid, among the 24 nearest by sign bits) and the angle `r` between it and that
 * centroid. `memory_vector_list_bits` holds the sign bits again, partitioned by (list, band of `r`, 1
 * degree wide), with the owner as integer metadata as in the owner buckets. By the triangle
 * inequality on angles, a vector at angle at most `a` from a query has
 * `|angle(query, centroid) - r| <= a`: a search reads only the bands of each list within `a` of the
 * query's angle to its centroid, and misses nothing above the cosine.
 *
 * A vector farther from its nearest centroid than most of the training's sample (the overflow band,
 * set when the lists are trained) goes to one overflow partition instead of its list, which every
 * search reads whole: one far vector would otherwise widen its list's band range to where every
 * query reaches it (a text unlike any topic lies about 90 degrees from every centroid, and so does a
 * query from another topic), and no list would be skipped.
 *
 * Crash safety as in ADR 10: a vector's list row is written by `put` in its memory's transaction once
 * the lists are maintained; training, the assignment of the existing vectors (paged by memory id, the
 * watermark in `vector_list_state`) and the switch to a new training are each one bounded step in one
 * transaction. The lists answer searches only once every vector is assigned (`watermark` null).
 */
export interface SqliteVectorLists {
  /**
   * One bounded step of training, assignment or the residual codes' fill; true when it did work and more may be left
   * (call again until false: the fill's last page, not full, is written by a step that answers false).
   */
  step(dimensions: number): boolean;
  /** Adds (or moves) one vector to its list when the lists are maintained; inside the caller's transaction. */
  put(memoryId: number, ownerId: number, vector: Float32Array, code: Buffer): void;
  remove(memoryId: number): void;
  /** Drops the lists and any training (the model changed). */
  clear(): void;
  /** Whether the lists cover every vector, so that {@link near} may answer. */
  complete(): boolean;
  /**
   * The nearest `wanted` codes within Hamming distance `bound` among the vectors (of `ownerIds`, null:
   * all) that may be at least `minScore` close to `vector` (cosine), nearest first. Null when the lists do not
   * cover every vector as this search reads them (another process may have switched them to a new training since
   * {@link complete} said they did): search the owner buckets.
   */
  near(
    vector: Float32Array,
    code: Buffer,
    ownerIds: readonly number[] | null,
    wanted: number,
    bound: number,
    minScore: number,
  ): Array<{ id: number; distance: number }> | null;
  /**
   * Linking's first pass (ADR 20, 2026-12-01, session 6): for each query, whether {@link near} with the same
   * arguments could answer a vector of a memory id below the query's `olderThan` (linking keeps only older
   * neighbours). False only when no code {@link near} would read within Hamming distance `bound` (of the
   * query's owners) has a smaller id: the caller may then skip the search, its answer holds no older
   * vector. Each query reads only the older codes of the bands {@link near} reads, and stops at the first
   * within the bound; the lists' centroids far enough from the query's own list by the triangle inequality
   * on angles are left out without their product. Null when the lists' codes cannot be read into memory, or
   * the lists do not cover every vector as this pass reads them: search each with {@link near}.
   */
  mayHoldOlder(queries: readonly OlderQuery[], bound: number, minScore: number): boolean[] | null;
  /**
   * Recall's top-k candidates: the nearest `wanted` codes by Hamming distance among the vectors (of
   * `ownerIds`, null: all) of the `probes` lists whose centroids are nearest `vector`, and of the
   * overflow partition, within Hamming distance `bound` (null: any), nearest first. Approximate: a
   * neighbour in a list not probed is missed. Through one KNN statement a list, or a scan of the codes in
   * memory once {@link near}'s snapshot is read (the searches of both count towards it).
   */
  nearest(
    vector: Float32Array,
    code: Buffer,
    ownerIds: readonly number[] | null,
    wanted: number,
    probes: number,
    bound: number | null,
  ): NearestCode[];
}

/**
 * One of recall's candidates from {@link SqliteVectorLists.nearest}: its Hamming distance and, when the codes were
 * searched in memory, the estimate of its cosine with the query.
 */
export interface NearestCode {
  id: number;
  distance: number;
  /** The estimate of its cosine with the query ({@link bandEstimates}). */
  estimate?: number;
  /**
   * Whether the estimate is the finer one: from the vector's residual code, or of the overflow partition, whose
   * estimate has none (ADR 10, 2026-12-02, session 11). Recall re-ranks fewer candidates when all are.
   */
  refined?: boolean;
}

/** One query of {@link SqliteVectorLists.mayHoldOlder}: a memory's vector, its code and owners, and its id. */
export interface OlderQuery {
  /** The id of the memory whose vector this is: only vectors of smaller ids are looked for. */
  olderThan: number;
  vector: Float32Array;
  code: Buffer;
  /** The owners (null: all) whose vectors are looked at. */
  ownerIds: readonly number[] | null;
}

export interface SqliteVectorListsOptions {
  /** Stores with fewer vectors get no lists. */
  minVectors?: number;
  /**
   * Searches without a write to the lists before {@link SqliteVectorLists.near} and
   * {@link SqliteVectorLists.nearest} read their codes into memory (default {@link SNAPSHOT_AFTER}); tests set 0
   * (at once) or Infinity (never).
   */
  snapshotAfter?: number;
  /** Residual rows recall reads a statement when it first estimates ({@link residualPages}; default 16,384; tests). */
  residualPage?: number;
  /** Reads the stored float32 vectors of these memories. */
  read(memoryIds: readonly number[]): Map<number, Float32Array>;
}

/**
 * Stores with fewer vectors than this get no lists: a search through them costs 3 to 4 ms of CPU at least
 * (about 30 band queries of 90 microseconds and the centroid products), what a bucket scan of about
 * 35,000 codes costs (ADR 20, 2026-12-01: 8.6-12.2 ms against 1.4-1.6 at 13,097 vectors).
 */
export const LIST_MIN_VECTORS = 32_768;
/**
 * Searches in a row without a write to the lists (on this connection or another) before the lists' codes
 * are read into memory: reading them costs about what 40 searches through SQL do (ADR 20, 2026-12-01,
 * session 4: 0.16 s against about 4 ms, 103,097 vectors), so a store written to between most searches keeps
 * searching through SQL and at worst spends twice what it would have.
 */
export const SNAPSHOT_AFTER = 32;
/** Residual codes read by one statement when recall first estimates (ADR 10, 2026-12-02, session 12). */
const RESIDUAL_PAGE = 16_384;
/**
 * Vectors this object may write after its snapshot was read before the snapshot is read again (ADR 10, 2026-12-03,
 * session 13): at least this many, or a thirty-second of the snapshot's. Until then a search reads the written
 * vectors' rows again (once each) and searches them beside the snapshot, whose copies of them it leaves out.
 */
const DELTA_MIN = 1_024;
const DELTA_SHARE = 1 / 32;
/** Written vectors a search inside a transaction of the caller's reads again before it goes through SQL instead. */
const STALE_IN_TRANSACTION = 64;
/** Lists of more vectors than this are never read into memory (about 100 MB of 768-bit codes). */
const SNAPSHOT_MAX_VECTORS = 1 << 20;
/**
 * The sqlite-vec versions whose vec0 shadow tables the snapshot reads (chunks of validity bits, row ids,
 * codes and integer metadata); a table created by another version is searched through SQL only.
 */
const SNAPSHOT_LAYOUTS = new Set(['v0.1.9']);
/** A store retrains once it holds this many times the vectors it had when its lists were trained. */
const RETRAIN_GROWTH = 4;
/** Vectors drawn per training step (mini-batch k-means), and training steps. */
const TRAINING_BATCH = 256;
export const TRAINING_STEPS = 48;
/**
 * A list drawn less than this share of the mean after a training step is starved: its centroid is put
 * beside the most drawn list's, the two split along the direction of one of that list's drawn vectors
 * (ADR 20, 2026-12-01, session 5). Without it, on clustered vectors the first centroid of a cluster to win
 * a few vectors moves to its centre and wins every other member, and the cluster's other seeds keep the
 * one vector they were seeded with (94 of 158 lists of 1 or 2 vectors on the bench's corpus).
 */
const STARVED_SHARE = 1 / 4;
/** Vectors drawn per list on average before starved lists are looked for (the counts are noise before). */
const STARVED_AFTER_DRAWS = 8;
/** How far apart a split puts the two centroids: each is this much of a unit direction off the old one. */
const SPLIT_OFFSET = 0.1;
/** Vectors assigned to their list per step. */
const ASSIGN_PAGE = 400;
/**
 * The centroids whose sign bits are nearest a vector's (Hamming distance) among which its list is
 * chosen by exact dot products (ADR 20, 2026-12-01, session 5): the list is then the nearest centroid
 * but for a centroid at almost the same angle that the sign bits put farther. The vector's angle is the
 * exact angle to the list chosen, which is all the bands' bound needs.
 */
const SHORTLIST = 24;
/** Vectors placed at the switch to balance the lists (this many per list, at least {@link OVERFLOW_SAMPLE}). */
const BALANCE_SAMPLE_PER_LIST = 16;
/** At the switch, a list given less than this share of the mean of that sample is split off the largest. */
const BALANCE_SHARE = 1 / 2;
const BALANCE_ROUNDS = 8;
/** Members of a list tried as the direction of its split (the one that splits its members most evenly is taken). */
const SPLIT_TRIALS = 4;
/** Width of an angle band within a list, and bands per list (angles 0 to 180 degrees). */
const BAND = Math.PI / 180;
export const BANDS = 181;
/** The cosine and sine of each band's middle angle (recall's estimates). */
const BAND_COSINES = Float64Array.from({ length: BANDS }, (_, band) => Math.cos((band + 0.5) * BAND));
const BAND_SINES = Float64Array.from({ length: BANDS }, (_, band) => Math.sin((band + 0.5) * BAND));
/**
 * The overflow band: the band of the median angle of a sample of the store to its nearest centroid plus
 * this many median absolute deviations (a robust outlier rule: far vectors do not move it until they
 * are half the sample); a vector in a higher band goes to the overflow partition (part -1).
 */
const OVERFLOW_DEVIATIONS = 3;
const OVERFLOW_SAMPLE = 1024;
const OVERFLOW_PART = -1;
/**
 * The lists are trained again when the overflow partition has had this share of the store more written
 * to it than the sample put above the band at training, and the store has grown by a quarter since.
 */
const OVERFLOW_RETRAIN_SHARE = 0.1;
const OVERFLOW_RETRAIN_GROWTH = 1.25;
/**
 * Room for rounding between the angles computed at insert and at search: acos amplifies a dot product's
 * float32 rounding (about 1e-7) near a centroid to about sqrt(2e-7), 4.5e-4 rad, at each end (attack of
 * session 5: 1e-6 missed a neighbour a fraction of a degree from its centroid). A band is 1 degree.
 */
const ANGLE_SLACK = 2e-3;
/**
 * Room for rounding in the triangle inequality that leaves a list out of {@link SqliteVectorLists.mayHoldOlder}
 * without its centroid's product: three acos of float32 dot products, each off by at most about 5e-4 rad.
 */
const PIVOT_SLACK = 1e-2;
/**
 * The bytes of a `memory_vector_list_bits` chunk's codes that fit one 4 KiB page with the row's header: each partition
 * (a list's band) has its own chunks, mostly one or two, so a chunk whose codes overflow to a second page wastes most
 * of it (ADR 20, 2026-12-02, session 11: 64 codes of 96 bytes took 19.9 MB of pages for 9.6 MB of codes at 100,000
 * vectors, 40 take 13.5 MB). Tables created before keep their chunk size.
 */
const CHUNK_BYTES = 3840;

/** Codes a chunk of the lists' table holds: as many as fit {@link CHUNK_BYTES}, a multiple of 8, at least 8. */
function chunkSize(dimensions: number): number {
  return Math.max(8, Math.floor(CHUNK_BYTES / Math.ceil(dimensions / 8) / 8) * 8);
}
/** Slice numbers per memory in `memory_vector_slices.key`, as in the vector index. */
const SLICE_SLOTS = 64;

/** Lists for a store of `vectors`: about half the square root, 16 to 256. */
export function listCount(vectors: number): number {
  return Math.min(256, Math.max(16, Math.round(Math.sqrt(vectors) / 2)));
}

interface State {
  generation: number;
  lists: number;
  training_steps: number | null;
  maintained: number;
  watermark: number | null;
  trained_vectors: number;
  /** A vector in a higher band goes to the overflow partition; null for lists trained before migration 17. */
  overflow_band: number | null;
  /** Vectors written to the overflow partition since the switch (only ever counted up). */
  overflow_vectors: number;
  /** The share of the training's sample above the overflow band. */
  overflow_share: number | null;
}

export interface ListRow {
  list: number;
  low_band: number | null;
  high_band: number | null;
}

/** The codes of one partition of `memory_vector_list_bits`, in memory. */
export interface SnapshotPart {
  ids: Float64Array;
  owners: Float64Array;
  /** `words` 32-bit words per code. */
  codes: Uint32Array;
  /** Of a list's partition, each member's signs' dot product with the centroid, once recall needed them. */
  signDots?: Float64Array;
  /** The codes as bytes, once recall estimated one of them. */
  bytes?: Uint8Array;
  /** Where the part's first code is in {@link Snapshot.scan}, when its codes are there. */
  at?: number;
  /**
   * Of a list's partition, each member's residual code ({@link residualCode}: the signs of its vector off the
   * centroid, as many bytes as a code) when its row of the lists' generation was read (ADR 10, 2026-12-02, session 11).
   */
  residuals?: Uint8Array;
  /** Each member's residual's product with its residual signs ({@link residualCode}); NaN: no residual code. */
  residualScales?: Float32Array;
  /** Each member's residual signs' dot product with the centroid, once recall needed them. */
  residualDots?: Float64Array;
}

/** The lists' codes and band ranges as they were at `dataVersion` (ADR 20, 2026-12-01, session 4). */
interface Snapshot {
  generation: number;
  dataVersion: number;
  /**
   * The newest entry of the record of changed memories (ADR 27) when the snapshot was read, or when it was last
   * brought up to date with another connection's commits; null: read inside a transaction of the caller's, whose
   * entries a rollback may take back (another connection's commit then drops the snapshot).
   */
  changesSeen: number | null;
  /** The vectors it holds. */
  vectors: number;
  words: number;
  /** Bytes a code holds (`words` 32-bit words, less their padding). */
  codeBytes: number;
  lists: ListRow[];
  parts: Map<number, SnapshotPart>;
  /**
   * The codes and owners of {@link parts} in one WebAssembly memory (each part's `at`), which recall's scan reads
   * (ADR 10, 2026-12-02, session 10); null where it cannot run or an owner is not a 32-bit integer.
   */
  scan: CodeScan | null;
  /** The parts again, each sorted by memory id, with each memory's part: read by the first pass of linking. */
  byId?: ById;
  /** Whether recall read the residual codes and the signs' products with the centroids ({@link loadEstimates}). */
  estimated?: boolean;
}

/** The snapshot's parts sorted by memory id (linking's first pass). */
interface ById {
  parts: Map<number, SortedPart>;
  /** The part a memory's code is in (undefined: none). */
  partOf: (id: number) => number | undefined;
  /** The same codes and owners in one WebAssembly memory, part after part (null: scanned in JavaScript). */
  scan: CodeScan | null;
}

interface SortedPart extends SnapshotPart {
  /** Where the part's first code is in {@link ById.scan}. */
  at: number;
}

/** A vector's list row as read again after a write of this object's, and its residual code of the snapshot's generation. */
interface DeltaRow {
  part: number;
  owner: number;
  code: Buffer;
  residual: Buffer | null;
}

/** Vectors written by this object since its snapshot was read (ADR 10, 2026-12-03, session 13). */
interface Delta {
  /** Each one's row as last read (null: not listed: removed). */
  rows: Map<number, DeltaRow | null>;
  /** Written since their rows were read. */
  stale: Set<number>;
  /** {@link rows} grouped by partition, as the snapshot's parts. */
  parts: Map<number, SnapshotPart>;
  /** Partitions whose part is to be grouped again: a row read again left or joined them. */
  regroup: Set<number>;
  /** Vectors of {@link stale} not in {@link rows}: {@link rows} and these are the distinct vectors written. */
  unread: number;
}

/**
 * The rows of vectors written since the snapshot (of the partitions `only`, null: all), grouped by partition into
 * parts laid out as the snapshot's: ids,
 * owners, codes padded to its words, and a list's members' residual codes and scales (NaN: none of its generation,
 * or not of its size), whose products with the centroid the estimates compute when they first need them.
 */
function deltaParts(
  rows: ReadonlyMap<number, DeltaRow | null>,
  memory: Snapshot,
  only: ReadonlySet<number> | null = null,
): Map<number, SnapshotPart> {
  const grouped = new Map<number, Array<[number, DeltaRow]>>();
  for (const [id, row] of rows) {
    if (row === null || (only !== null && !only.has(row.part))) continue;
    let members = grouped.get(row.part);
    if (!members) {
      members = [];
      grouped.set(row.part, members);
    }
    members.push([id, row]);
  }
  const { words, codeBytes } = memory;
  const stride = words * 4;
  const parts = new Map<number, SnapshotPart>();
  for (const [partition, members] of grouped) {
    const codes = new Uint32Array(members.length * words);
    const bytes = new Uint8Array(codes.buffer);
    const residuals = new Uint8Array(members.length * stride);
    const scales = new Float32Array(members.length).fill(Number.NaN);
    const part: SnapshotPart = {
      ids: new Float64Array(members.length),
      owners: new Float64Array(members.length),
      codes,
    };
    for (const [member, [id, row]] of members.entries()) {
      part.ids[member] = id;
      part.owners[member] = row.owner;
      bytes.set(row.code.subarray(0, Math.min(codeBytes, row.code.length)), member * stride);
      if (row.residual?.length === codeBytes + 4) {
        const scale = row.residual.readFloatLE(codeBytes);
        if (Number.isFinite(scale)) {
          residuals.set(row.residual.subarray(0, codeBytes), member * stride);
          scales[member] = scale;
        }
      }
    }
    if (partition !== OVERFLOW_PART) {
      part.residuals = residuals;
      part.residualScales = scales;
    }
    parts.set(partition, part);
  }
  return parts;
}

export function createSqliteVectorLists(
  database: Database.Database,
  options: SqliteVectorListsOptions,
): SqliteVectorLists {
  const minVectors = options.minVectors ?? LIST_MIN_VECTORS;
  const snapshotAfter = options.snapshotAfter ?? SNAPSHOT_AFTER;
  const residualPage = options.residualPage ?? RESIDUAL_PAGE;
  /**
   * The lists' codes in memory, and the searches since the last write to the lists: any write through this
   * object drops the snapshot, a commit by another connection (`PRAGMA data_version`) too.
   */
  let snapshot: Snapshot | null = null;
  /** This object's writes since {@link snapshot} was read ({@link changed}); null: none. */
  let delta: Delta | null = null;
  let quietSearches = 0;
  let quietVersion: number | null = null;
  /** The newest entry of the record of changed memories at the last quiet search's count (ADR 27). */
  let quietChanges: number | null = null;
  const changes = createSqliteRecallChanges(database);
  /**
   * Whether the last write to the lists was made in a transaction not yet seen to end: a snapshot read
   * before it ends could hold writes rolled back after (a rollback leaves `data_version` as it was).
   */
  let uncommitted = false;
  let centroids: Centroids | null = null;
  let prepared: ReturnType<typeof prepare> | null = null;
  let preparedList: ReturnType<typeof prepareListTable> | null = null;
  /**
   * The fill of the residual codes (ADR 10, 2026-12-02, session 11): the memory id after which the next step looks
   * for listed vectors without one (from 0 again before it says none is left), and the generation and `data_version`
   * at which none was left. Only another connection's commit can leave a listed vector without one (a process of the
   * previous release): every list row this object writes comes with its residual row, so its own writes need no
   * look (34-47 ms of CPU at 100,000 vectors).
   */
  let fillCursor = { generation: -1, after: 0 };
  let residualsFilled: { generation: number; dataVersion: number } | null = null;
  const rangeStatements = new Map<number, Database.Statement<unknown[], { id: number; distance: number }>>();
  const knnStatements = new Map<number, Database.Statement<unknown[], { id: number; distance: number }>>();

  function prepare() {
    return {
      state: database.prepare<[], State>(
        `SELECT generation, lists, training_steps, maintained, watermark, trained_vectors, overflow_band, overflow_vectors,
           overflow_share
         FROM vector_list_state WHERE id = 1`,
      ),
      vectorCount: database.prepare<[], number>('SELECT coalesce(sum(vectors), 0) FROM vector_owners').pluck(),
      listRows: database.prepare<[], ListRow>('SELECT list, low_band, high_band FROM vector_lists ORDER BY list'),
      centroidRows: database.prepare<[], Buffer>('SELECT centroid FROM vector_lists ORDER BY list').pluck(),
      trainingRows: database.prepare<[], { centroid: Buffer; weight: number }>(
        'SELECT centroid, weight FROM vector_list_training ORDER BY list',
      ),
      keyBounds: database.prepare<[], { low: number | null; high: number | null }>(
        // Two subqueries: SQLite answers a lone min() or max() from the primary key, but both in one
        // aggregate read the whole table (0.4 s at 100,000 vectors, once a training step).
        `SELECT (SELECT min(key) FROM memory_vector_slices) AS low,
           (SELECT max(key) FROM memory_vector_slices) AS high`,
      ),
      keyAtOrAfter: database
        .prepare<[number], number>('SELECT key FROM memory_vector_slices WHERE key >= ? ORDER BY key LIMIT 1')
        .pluck(),
      idsAfter: database
        .prepare<[number, number], number>(
          `SELECT key / ${SLICE_SLOTS} FROM memory_vector_slices WHERE key > ? AND key % ${SLICE_SLOTS} = 0 ORDER BY key LIMIT ?`,
        )
        .pluck(),
      ownerOf: database
        .prepare<[bigint], number>('SELECT owner_id FROM memory_vector_bits WHERE memory_id = ?')
        .pluck(),
      dataVersion: database.prepare<[], number>('PRAGMA data_version').pluck(),
    };
  }

  /**
   * The state row and the list rows as last read outside a transaction (ADR 10, 2026-12-02, session 7):
   * recall reads both at every search, and they change only with a write, made through this object
   * (`writes` counts them) or committed by another connection (`PRAGMA data_version` moves). Inside a
   * transaction they are read each time: a rollback leaves `data_version` as it was.
   */
  let writes = 0;
  let cached: { dataVersion: number; writes: number; state: State | undefined; lists: ListRow[] | null } | null = null;
  /** Whether the transaction open is a read transaction of {@link reading} (no write of ours to roll back). */
  let ownRead = false;

  /** The cache, read again when the file changed; null inside a transaction of the caller's. */
  function fresh() {
    if (database.inTransaction && !ownRead) return null;
    const version = sql().dataVersion.get() ?? 0;
    if (cached?.dataVersion !== version || cached.writes !== writes) {
      cached = { dataVersion: version, writes, state: sql().state.get(), lists: null };
    }
    return cached;
  }

  function listRows(): ListRow[] {
    const known = fresh();
    if (!known) return sql().listRows.all();
    known.lists ??= sql().listRows.all();
    return known.lists;
  }

  /**
   * Runs a search's reads in one read transaction, unless the caller's is open (ADR 20, 2026-12-02, session 10): the
   * state row, the centroids, the list rows and the codes are then of one commit. Read outside one, another
   * process's switch to a new training committed between them paired the old lists' state with the new lists'
   * codes, still being assigned: linking's first pass answered that no older neighbour was near.
   */
  function reading<T>(read: () => T): T {
    if (database.inTransaction) return read();
    // The transaction of the last write has ended (see `uncommitted`).
    uncommitted = false;
    ownRead = true;
    try {
      readTransaction ??= database.transaction((run: () => unknown) => run());
      return readTransaction.deferred(read) as T;
    } finally {
      ownRead = false;
    }
  }
  let readTransaction: Database.Transaction<(run: () => unknown) => unknown> | null = null;

  /** Forgets the snapshot: the lists were written to. */
  function written(): void {
    writes++;
    snapshot = null;
    delta = null;
    quietSearches = 0;
    quietVersion = null;
    uncommitted = database.inTransaction;
  }

  /**
   * Records this object's write of one vector's list row (ADR 10, 2026-12-03, session 13): a snapshot then lives on,
   * the vector's row to be read again by the next search ({@link deltaOf}), until the snapshot's
   * {@link DELTA_SHARE} (at least {@link DELTA_MIN}) vectors were written. Without a snapshot, the searches since the
   * last write by another connection still count towards reading one: a store written to between most recalls
   * (a served one, ingesting) then gets one too, where before every write started the count again.
   */
  function changed(memoryId: number): void {
    // Whether a snapshot is held or not (attacked, session 13): a snapshot dropped later in this transaction (linking's
    // first pass drops one with a delta) must not be read again inside it, where it would hold the writes a rollback
    // then takes back, the file's `data_version` left as it was.
    uncommitted = database.inTransaction;
    if (snapshot !== null && !markStale(snapshot, memoryId)) written();
  }

  /** Marks a memory's row to be read again beside the snapshot; false: they are too many, read the codes again. */
  function markStale(memory: Snapshot, memoryId: number): boolean {
    delta ??= { rows: new Map(), stale: new Set(), parts: new Map(), regroup: new Set(), unread: 0 };
    if (delta.rows.has(memoryId) || delta.stale.has(memoryId)) {
      delta.stale.add(memoryId);
      return true;
    }
    // Distinct vectors: one put writes a vector's row twice (removed, then inserted), which is not two vectors.
    if (delta.rows.size + delta.unread >= deltaLimit(memory)) return false;
    delta.stale.add(memoryId);
    delta.unread++;
    return true;
  }

  function deltaLimit(memory: Snapshot): number {
    return Math.max(DELTA_MIN, memory.vectors * DELTA_SHARE);
  }

  /**
   * Brings the snapshot up to date with other connections' commits since it was last (ADR 27): the memories they
   * changed are read again beside it, as this connection's own writes are. A commit that changed none (a recall's
   * touch, a message) leaves it as it is. False: it cannot be (read in a transaction of the caller's, which may
   * yet roll back and give the record's numbers again; a change of any memory; too many; entries no longer kept).
   */
  function caughtUp(memory: Snapshot, version: number): boolean {
    if (memory.changesSeen === null || (database.inTransaction && !ownRead)) return false;
    const found = changes.since(memory.changesSeen, deltaLimit(memory));
    if (found === null) return false;
    for (const id of found.ids) if (!markStale(memory, id)) return false;
    memory.dataVersion = version;
    memory.changesSeen = found.latest;
    return true;
  }

  /**
   * The vectors written since the snapshot was read, as the file holds them now: each one's row read again once
   * after its write (its list row and residual row; none: removed), grouped into parts by partition like the
   * snapshot's. The rows read are kept only outside a transaction of the caller's (or in a read transaction of
   * {@link reading}): a transaction rolled back after would leave them as they were not.
   */
  function deltaOf(
    memory: Snapshot,
  ): { written: ReadonlyMap<number, DeltaRow | null>; parts: ReadonlyMap<number, SnapshotPart> } | null {
    if (delta === null) return null;
    if (!database.inTransaction || ownRead) {
      for (const id of delta.stale) {
        const before = delta.rows.get(id);
        const row = deltaRow(id, memory);
        if (before) delta.regroup.add(before.part);
        if (row) delta.regroup.add(row.part);
        delta.rows.set(id, row);
      }
      delta.stale.clear();
      delta.unread = 0;
    } else if (delta.stale.size > 0) {
      const rows = new Map(delta.rows);
      for (const id of delta.stale) rows.set(id, deltaRow(id, memory));
      return { written: rows, parts: deltaParts(rows, memory) };
    }
    if (delta.regroup.size > 0) {
      const regrouped = deltaParts(delta.rows, memory, delta.regroup);
      for (const partition of delta.regroup) {
        const part = regrouped.get(partition);
        if (part) delta.parts.set(partition, part);
        else delta.parts.delete(partition);
      }
      delta.regroup.clear();
    }
    return { written: delta.rows, parts: delta.parts };
  }

  /** A vector's list row as the file holds it now, and its residual code of the snapshot's generation; null: none. */
  function deltaRow(memoryId: number, memory: Snapshot): DeltaRow | null {
    const statements = listSql();
    const row = statements.row.get(BigInt(memoryId));
    if (!row) return null;
    const residual = row.part === OVERFLOW_PART ? undefined : statements.residualOf.get(memoryId);
    return {
      part: row.part,
      owner: row.owner_id,
      code: row.bits,
      residual: residual?.generation === memory.generation ? residual.code : null,
    };
  }

  /**
   * The snapshot to search, read first when the lists have gone {@link snapshotAfter} searches without a
   * write; null: search through SQL.
   */
  function snapshotFor(current: State, now = false): Snapshot | null {
    const version = sql().dataVersion.get() ?? 0;
    if (snapshot && snapshot.generation !== current.generation) written();
    if (snapshot && snapshot.dataVersion !== version && !caughtUp(snapshot, version)) written();
    // Inside a transaction of the caller's the written rows are read again at every search (`deltaOf`): past a
    // few dozen, the search goes through SQL as it did before the written rows were kept (ADR 10, session 13).
    if (snapshot && (delta?.stale.size ?? 0) > STALE_IN_TRANSACTION && database.inTransaction && !ownRead) written();
    if (snapshot) return snapshot;
    if (uncommitted) {
      if (database.inTransaction) return null;
      uncommitted = false;
    }
    if (quietVersion !== version) {
      quietVersion = version;
      // Another connection's commit that changed no memory (a recall's touch) does not start the count again.
      const latest = changes.latest();
      if (latest === null || latest !== quietChanges) quietSearches = 0;
      quietChanges = latest;
    }
    quietSearches++;
    if (!now && quietSearches <= snapshotAfter) return null;
    // One read transaction (unless already in one): the shadow tables are read by several statements,
    // and another process's commit between them would pair a slot's code with another memory's id and
    // owner (sqlite-vec gives a removed row's slot to the next insert). Its data version is read inside.
    // The record's newest entry is read with the codes; inside a caller's transaction it may be one a rollback takes back.
    const trusted = !database.inTransaction || ownRead;
    const read = () => readSnapshot(current, sql().dataVersion.get() ?? 0, trusted ? changes.latest() : null);
    snapshot = database.inTransaction ? read() : database.transaction(read).deferred();
    // Not readable (too large, another layout): count again, so that it is not tried at every search.
    if (!snapshot) quietSearches = 0;
    return snapshot;
  }

  /** The codes of `memory_vector_list_bits`, read from its vec0 shadow tables, grouped by partition. */
  function readSnapshot(current: State, dataVersion: number, changesSeen: number | null): Snapshot | null {
    const layout = database
      .prepare<[], unknown>("SELECT value FROM memory_vector_list_bits_info WHERE key = 'CREATE_VERSION'")
      .pluck()
      .get();
    if (typeof layout !== 'string' || !SNAPSHOT_LAYOUTS.has(layout)) return null;
    const stored = database.prepare<[], number>('SELECT count(*) FROM memory_vector_list_bits_rowids').pluck().get();
    if ((stored ?? 0) > SNAPSHOT_MAX_VECTORS) return null;
    // The chunks' validity bits first (a few bytes a chunk), then each chunk's row ids, codes and owners by its
    // id, one chunk at a time (ADR 20, 2026-12-02, session 9): reading the three tables whole held every chunk's
    // blobs at once (about 18 MB at 103,097 vectors) beside the snapshot they were copied into, and that transient
    // stayed in the process's resident set as the allocator's free space.
    const chunks = database
      .prepare<[], { id: number; part: number; validity: Buffer }>(
        'SELECT chunk_id AS id, partition00 AS part, validity FROM memory_vector_list_bits_chunks ORDER BY chunk_id',
      )
      .all();
    const rowidsOf = database
      .prepare<[number], Buffer>('SELECT rowids FROM memory_vector_list_bits_chunks WHERE chunk_id = ?')
      .pluck();
    const codesOf = database
      .prepare<[number], Buffer>('SELECT vectors FROM memory_vector_list_bits_vector_chunks00 WHERE rowid = ?')
      .pluck();
    const ownersOf = database
      .prepare<[number], Buffer>('SELECT data FROM memory_vector_list_bits_metadatachunks00 WHERE rowid = ?')
      .pluck();
    const valid = (validity: Buffer, slot: number) => ((validity[slot >> 3] ?? 0) & (1 << (slot & 7))) !== 0;
    const counts = new Map<number, number>();
    let total = 0;
    for (const chunk of chunks) {
      let count = 0;
      for (let slot = 0; slot < chunk.validity.length * 8; slot++) if (valid(chunk.validity, slot)) count++;
      counts.set(chunk.part, (counts.get(chunk.part) ?? 0) + count);
      total += count;
    }
    const first = chunks[0];
    const firstRowids = first ? rowidsOf.get(first.id) : undefined;
    const firstCodes = first ? codesOf.get(first.id) : undefined;
    if (first && (!firstRowids || !firstCodes)) return null;
    const codeBytes = firstRowids && firstCodes ? firstCodes.length / (firstRowids.length / 8) : 0;
    const words = Math.ceil(codeBytes / 4);
    // Every part's ids, owners and codes are views of three arrays (a few large allocations, not three a part). The
    // codes are read into the WebAssembly memory of recall's scan where it runs and holds them without padding
    // (ADR 10, 2026-12-02, session 10): the same one copy of the codes.
    const made = total > 0 ? createCodeScan(total, words) : null;
    let scan = made !== null && made.stride === words * 4 ? made : null;
    const allIds = new Float64Array(total);
    const allOwners = new Float64Array(total);
    const allCodes = scan === null ? new Uint32Array(total * words) : scan.codes;
    const allBytes = new Uint8Array(allCodes.buffer, allCodes.byteOffset, allCodes.byteLength);
    const parts = new Map<number, SnapshotPart>();
    const filled = new Map<number, number>();
    let offset = 0;
    for (const [part, count] of counts) {
      parts.set(part, {
        ids: allIds.subarray(offset, offset + count),
        owners: allOwners.subarray(offset, offset + count),
        codes: allCodes.subarray(offset * words, (offset + count) * words),
      });
      filled.set(part, offset);
      offset += count;
    }
    for (const chunk of chunks) {
      const rowids = rowidsOf.get(chunk.id);
      const vectors = codesOf.get(chunk.id);
      const owners = ownersOf.get(chunk.id);
      if (!rowids || !vectors || !owners) return null;
      const slots = rowids.length / 8;
      if (slots !== chunk.validity.length * 8 || vectors.length !== slots * codeBytes) return null;
      let at = filled.get(chunk.part) ?? 0;
      for (let slot = 0; slot < slots; slot++) {
        if (!valid(chunk.validity, slot)) continue;
        allIds[at] = int64At(rowids, slot * 8);
        const owner = int64At(owners, slot * 8);
        allOwners[at] = owner;
        if (scan !== null) {
          if (owner >= 0 && owner <= 0x7fffffff) scan.owners[at] = owner;
          else scan = null;
        }
        allBytes.set(vectors.subarray(slot * codeBytes, (slot + 1) * codeBytes), at * words * 4);
        at++;
      }
      filled.set(chunk.part, at);
    }
    if (scan !== null) {
      let at = 0;
      for (const part of parts.values()) {
        part.at = at;
        at += part.ids.length;
      }
    }
    return {
      generation: current.generation,
      dataVersion,
      changesSeen,
      vectors: total,
      words,
      codeBytes,
      lists: sql().listRows.all(),
      parts,
      scan,
    };
  }

  /**
   * What recall's estimates read beside the codes (ADR 10, 2026-12-02, session 12), once a snapshot, by the first
   * recall that estimates a member of a list: every member's residual code (ADR 10, session 11: as many bytes as its
   * code, and its scale; NaN for a member without a residual row of the snapshot's generation, or with a row of
   * another size or type) and, for each list's members, the products of their codes' and residual codes' signs with
   * the centroid. Maintenance's searches never estimate, so linking's snapshot holds none of it. The rows are read in
   * memory-id order ({@link residualPages}); session 11 read them a part at a time, by id, about 0.5 s of the first
   * few hundred recalls at 100,000 vectors, which the bench's latencies counted. A row another connection
   * changed since the snapshot was read can only make an estimate worse; the exact re-rank decides.
   */
  function loadEstimates(memory: Snapshot, centroids: Float32Array, count: number, dimensions: number): void {
    if (memory.estimated) return;
    memory.estimated = true;
    const { generation, codeBytes, words } = memory;
    const stride = words * 4;
    const parts = [...memory.parts.values()];
    const total = parts.reduce((sum, part) => sum + part.ids.length, 0);
    const residuals = new Uint8Array(total * stride);
    const scales = new Float32Array(total).fill(Number.NaN);
    let offset = 0;
    for (const part of parts) {
      part.residuals = residuals.subarray(offset * stride, (offset + part.ids.length) * stride);
      part.residualScales = scales.subarray(offset, offset + part.ids.length);
      offset += part.ids.length;
    }
    // Every member's place (its index in `scales`, part after part), in the order of its memory id.
    const ids = new Float64Array(total);
    offset = 0;
    for (const part of parts) {
      ids.set(part.ids, offset);
      offset += part.ids.length;
    }
    const places = placesById(ids);
    const rowBytes = codeBytes + 4;
    const target = Buffer.from(residuals.buffer, residuals.byteOffset, residuals.byteLength);
    let next = 0;
    for (const page of residualPages(database, generation, codeBytes, residualPage)) {
      for (const [row, id] of page.ids.entries()) {
        while (next < places.length && (ids[places[next] ?? 0] ?? 0) < id) next++;
        // An infinite scale (a damaged row) is no finer estimate: the member keeps the signs' estimate.
        const scale = page.codes.readFloatLE(row * rowBytes + codeBytes);
        if (!Number.isFinite(scale)) continue;
        for (let at = next; at < places.length && ids[places[at] ?? 0] === id; at++) {
          const place = places[at] ?? 0;
          page.codes.copy(target, place * stride, row * rowBytes, row * rowBytes + codeBytes);
          scales[place] = scale;
        }
      }
    }
    // The signs' products with each list's centroid, one table a list (a part is a band of one list).
    let tableList = -1;
    let table = scratchTable(stride, 1);
    for (const [partition, part] of [...memory.parts].sort((a, b) => a[0] - b[0])) {
      const list = partition < 0 ? -1 : Math.floor(partition / BANDS);
      if (list < 0 || list >= count) continue;
      const centroid = centroids.subarray(list * dimensions, (list + 1) * dimensions);
      if (tableList !== list) table = estimateTable(centroid, stride, table);
      tableList = list;
      part.bytes ??= new Uint8Array(part.codes.buffer, part.codes.byteOffset, part.codes.byteLength);
      part.signDots ??= signDotsOf(part.bytes, part.ids.length, centroid, words, table);
      if (part.residuals) part.residualDots ??= signDotsOf(part.residuals, part.ids.length, centroid, words, table);
    }
  }

  /** The statements of `memory_vector_list_bits`, which exists only while the lists are maintained. */
  function prepareListTable() {
    return {
      insert: database.prepare<[bigint, bigint, Buffer, bigint]>(
        'INSERT INTO memory_vector_list_bits (memory_id, part, bits, owner_id) VALUES (?, ?, vec_bit(?), ?)',
      ),
      remove: database.prepare<[bigint]>('DELETE FROM memory_vector_list_bits WHERE memory_id = ?'),
      // A vec0 lookup of a missing row costs about a fifth of a vec0 delete of one (6 against 27 us).
      holds: database
        .prepare<[bigint], number>('SELECT memory_id FROM memory_vector_list_bits WHERE memory_id = ?')
        .pluck(),
      overflowed: database.prepare('UPDATE vector_list_state SET overflow_vectors = overflow_vectors + 1 WHERE id = 1'),
      putResidual: database.prepare<[number, number, Buffer]>(
        'INSERT OR REPLACE INTO memory_vector_residuals (memory_id, generation, code) VALUES (?, ?, ?)',
      ),
      dropResidual: database.prepare<[number]>('DELETE FROM memory_vector_residuals WHERE memory_id = ?'),
      row: database.prepare<[bigint], { part: number; owner_id: number; bits: Buffer }>(
        'SELECT part, owner_id, bits FROM memory_vector_list_bits WHERE memory_id = ?',
      ),
      residualOf: database.prepare<[number], { generation: number; code: Buffer }>(
        'SELECT generation, code FROM memory_vector_residuals WHERE memory_id = ?',
      ),
      widen: database.prepare<[{ band: number; list: number }]>(
        `UPDATE vector_lists SET low_band = min(coalesce(low_band, @band), @band), high_band = max(coalesce(high_band, @band), @band)
         WHERE list = @list AND (low_band IS NULL OR low_band > @band OR high_band < @band)`,
      ),
    };
  }

  function sql() {
    prepared ??= prepare();
    return prepared;
  }

  function listSql() {
    preparedList ??= prepareListTable();
    return preparedList;
  }

  function state(): State | undefined {
    const known = fresh();
    return known ? known.state : sql().state.get();
  }

  function loadCentroids(current: State, dimensions: number) {
    if (centroids?.generation === current.generation && centroids.dimensions === dimensions) return centroids;
    const rows = sql().centroidRows.all();
    const values = new Float32Array(rows.length * dimensions);
    for (const [list, row] of rows.entries()) {
      values.set(floats(row).subarray(0, dimensions), list * dimensions);
    }
    centroids = {
      generation: current.generation,
      dimensions,
      ...centroidsOf(values, rows.length, dimensions),
      products: createDotProducts(values, rows.length, dimensions),
    };
    return centroids;
  }

  function insert(memoryId: number, ownerId: number, vector: Float32Array, code: Buffer, current: State): void {
    const loaded = loadCentroids(current, vector.length);
    if (loaded.count === 0) return;
    withRecord(memoryId, () => insertRows(memoryId, ownerId, vector, code, current, loaded));
  }

  /**
   * Runs a write of a memory's list rows (`memoryId`; null: of any), then records it for other connections (ADR
   * 27): in one transaction, so that no connection sees the write without its entry.
   */
  function withRecord(memoryId: number | null, write: () => void): void {
    const both = () => {
      write();
      changes.record(memoryId);
    };
    if (database.inTransaction) both();
    else database.transaction(both)();
  }

  function insertRows(
    memoryId: number,
    ownerId: number,
    vector: Float32Array,
    code: Buffer,
    current: State,
    loaded: Centroids,
  ): void {
    const { list, angle } = placeShortlisted(unit(vector), code, loaded);
    const band = Math.min(BANDS - 1, Math.floor(angle / BAND));
    const statements = listSql();
    changed(memoryId);
    if (statements.holds.get(BigInt(memoryId)) !== undefined) statements.remove.run(BigInt(memoryId));
    if (current.overflow_band !== null && band > current.overflow_band) {
      statements.insert.run(BigInt(memoryId), BigInt(OVERFLOW_PART), code, BigInt(ownerId));
      statements.overflowed.run();
      // The state row changed: read again (`fresh`).
      writes++;
      statements.dropResidual.run(memoryId);
      return;
    }
    statements.insert.run(BigInt(memoryId), BigInt(list * BANDS + band), code, BigInt(ownerId));
    // A list's bands widened: its row is read again (`fresh`).
    if (statements.widen.run({ band, list }).changes > 0) writes++;
    const dimensions = loaded.dimensions;
    statements.putResidual.run(
      memoryId,
      current.generation,
      residualCode(vector, loaded.values.subarray(list * dimensions, (list + 1) * dimensions)),
    );
  }

  /**
   * One step of the fill of the residual codes of lists complete but for them (lists built by a release before
   * migration 24, or vectors listed by a process of one): up to {@link ASSIGN_PAGE} listed vectors (not of the
   * overflow) without a residual row of the lists' generation, in memory id order; false when none is left or the
   * page was the last (not full: the step still wrote it). The
   * vectors' list rows are read from the vec0 shadow tables of the layouts the snapshot reads (another layout is
   * not filled: recall estimates as before).
   */
  function fillResiduals(current: State, dimensions: number): boolean {
    const version = sql().dataVersion.get() ?? 0;
    if (residualsFilled?.generation === current.generation && residualsFilled.dataVersion === version) return false;
    const layout = database
      .prepare<[], unknown>("SELECT value FROM memory_vector_list_bits_info WHERE key = 'CREATE_VERSION'")
      .pluck()
      .get();
    if (typeof layout !== 'string' || !SNAPSHOT_LAYOUTS.has(layout)) return false;
    if (fillCursor.generation !== current.generation) fillCursor = { generation: current.generation, after: 0 };
    const missing = database.prepare<[number, number, number], { id: number; part: number }>(
      `SELECT r.rowid AS id, c.partition00 AS part FROM memory_vector_list_bits_rowids AS r
         JOIN memory_vector_list_bits_chunks AS c ON c.chunk_id = r.chunk_id
       WHERE r.rowid > ? AND c.partition00 >= 0
         AND NOT EXISTS (SELECT 1 FROM memory_vector_residuals AS x WHERE x.memory_id = r.rowid AND x.generation = ?)
       ORDER BY r.rowid LIMIT ?`,
    );
    let rows = missing.all(fillCursor.after, current.generation, ASSIGN_PAGE);
    if (rows.length === 0 && fillCursor.after > 0) {
      fillCursor.after = 0;
      rows = missing.all(0, current.generation, ASSIGN_PAGE);
    }
    if (rows.length === 0) {
      residualsFilled = { generation: current.generation, dataVersion: version };
      return false;
    }
    const loaded = loadCentroids(current, dimensions);
    const vectors = options.read(rows.map((row) => row.id));
    const statements = listSql();
    for (const { id, part } of rows) {
      const vector = vectors.get(id);
      const list = Math.floor(part / BANDS);
      if (!vector || list >= loaded.count) continue;
      statements.putResidual.run(
        id,
        current.generation,
        residualCode(
          vector.subarray(0, dimensions),
          loaded.values.subarray(list * dimensions, (list + 1) * dimensions),
        ),
      );
    }
    fillCursor.after = rows.at(-1)?.id ?? fillCursor.after;
    changes.record(null);
    written();
    // A page not full was the last of what was missing: the steps end here, though they wrote. Otherwise a listed
    // vector that cannot be filled (no vector, a list gone) was found again at every step, and a process of the
    // previous release listing a vector between every two steps had linking's first pass call them without end.
    return rows.length === ASSIGN_PAGE;
  }

  /**
   * Balances the trained centroids `values` on a sample of the store (lists given less than half the mean
   * are split off the largest, {@link balance}), then the overflow band of the result (the band of the
   * sample's median angle to its nearest centroid plus 3 median absolute deviations) and the share of the
   * sample above it.
   */
  function balanceAndOverflow(
    values: Float32Array,
    count: number,
    dimensions: number,
    seed: number,
  ): { band: number; share: number } {
    const points = [
      ...options.read(sample(Math.max(OVERFLOW_SAMPLE, BALANCE_SAMPLE_PER_LIST * count), seed)).values(),
    ].map((vector) => unit(vector.subarray(0, dimensions)));
    balance(values, count, dimensions, points);
    const angles = points.map((point) => placeOf(point, values, count).angle);
    if (angles.length === 0) return { band: BANDS - 1, share: 0 };
    const median = medianOf(angles);
    const deviation = medianOf(angles.map((angle) => Math.abs(angle - median)));
    const band = Math.min(BANDS - 1, Math.floor((median + OVERFLOW_DEVIATIONS * deviation) / BAND));
    const share = angles.filter((angle) => Math.floor(angle / BAND) > band).length / angles.length;
    return { band, share };
  }

  /** A deterministic sequence in [0, 1) per training step, so that a resumed training draws the same sample. */
  function random(seed: number): () => number {
    let value = (seed * 2654435761) >>> 0 || 1;
    return () => {
      value ^= value << 13;
      value ^= value >>> 17;
      value ^= value << 5;
      value >>>= 0;
      return value / 4294967296;
    };
  }

  /** About `count` memory ids drawn at random from those with a vector. */
  function sample(count: number, seed: number): number[] {
    const statements = sql();
    const { low, high } = statements.keyBounds.get() ?? { low: null, high: null };
    if (low === null || high === null) return [];
    const next = random(seed);
    const ids = new Set<number>();
    for (let draw = 0; draw < count; draw++) {
      const key = statements.keyAtOrAfter.get(low + Math.floor(next() * (high - low + 1)));
      if (key !== undefined) ids.add(Math.floor(key / SLICE_SLOTS));
    }
    return [...ids];
  }

  function startTraining(total: number, current: State | undefined, dimensions: number): void {
    const lists = listCount(total);
    const seeds = [...options.read(sample(lists * 2, (current?.generation ?? 0) + 1)).values()].slice(0, lists);
    database.prepare('DELETE FROM vector_list_training').run();
    const insertRow = database.prepare('INSERT INTO vector_list_training (list, centroid, weight) VALUES (?, ?, 0)');
    for (const [list, seed] of seeds.entries()) {
      insertRow.run(list, bytes(unit(seed).subarray(0, dimensions)));
    }
    database
      .prepare(
        `INSERT INTO vector_list_state (id, generation, lists, training_steps, maintained, watermark, trained_vectors)
         VALUES (1, 0, @lists, 0, 0, NULL, @total)
         ON CONFLICT (id) DO UPDATE SET lists = @lists, training_steps = 0, trained_vectors = @total`,
      )
      .run({ lists: seeds.length, total });
  }

  /**
   * One mini-batch of k-means: each drawn vector moves its nearest centroid (among the shortlist) by 1 / (vectors
   * it has drawn); then starved lists are split off the most drawn ({@link splitStarved}), and at the last step the
   * centroids are balanced on a sample of the store ({@link balance}) before the switch.
   */
  function train(current: State, dimensions: number): void {
    const rows = sql().trainingRows.all();
    const values = new Float32Array(rows.length * dimensions);
    const weights = rows.map((row) => row.weight);
    for (const [list, row] of rows.entries()) {
      values.set(floats(row.centroid).subarray(0, dimensions), list * dimensions);
    }
    const steps = current.training_steps ?? 0;
    const drawn = options.read(sample(TRAINING_BATCH, current.generation * 1000 + steps + 7));
    /** A vector drawn into each list in this step (the last one), the direction a split of that list takes. */
    const drawnInto = new Map<number, Float32Array>();
    // The centroids' sign bits as at the start of the step: they only pick the shortlist.
    const placing = centroidsOf(values, rows.length, dimensions);
    for (const vector of drawn.values()) {
      const point = unit(vector.subarray(0, dimensions));
      const { list } = placeShortlisted(point, binaryCodeOf(point), placing);
      drawnInto.set(list, point);
      const weight = (weights[list] ?? 0) + 1;
      weights[list] = weight;
      const offset = list * dimensions;
      for (let index = 0; index < dimensions; index++) {
        const value = values[offset + index] ?? 0;
        values[offset + index] = value + ((point[index] ?? 0) - value) / weight;
      }
      // Kept on the sphere, so that the nearest centroid is the one of largest dot product.
      normalise(values, offset, dimensions);
    }
    splitStarved(values, weights, drawnInto, dimensions);
    const last = steps + 1 >= TRAINING_STEPS;
    // At the switch, the centroids balanced on a sample first (they are written as the lists below).
    const overflow = last ? balanceAndOverflow(values, rows.length, dimensions, current.generation * 1000 + 999) : null;
    const update = database.prepare('UPDATE vector_list_training SET centroid = ?, weight = ? WHERE list = ?');
    for (let list = 0; list < rows.length; list++) {
      update.run(bytes(values.subarray(list * dimensions, (list + 1) * dimensions)), weights[list] ?? 0, list);
    }
    if (!overflow) {
      database.prepare('UPDATE vector_list_state SET training_steps = ? WHERE id = 1').run(steps + 1);
      return;
    }
    // The switch: the trained centroids become the lists, every vector to be assigned again, those
    // farther from their centroid than the overflow band to the overflow partition.
    database.exec(`DELETE FROM vector_lists;
      INSERT INTO vector_lists (list, centroid) SELECT list, centroid FROM vector_list_training;
      DELETE FROM vector_list_training;
      DROP TABLE IF EXISTS memory_vector_list_bits;
      DELETE FROM memory_vector_residuals;`);
    createListBitsTable(database, dimensions);
    database
      .prepare(
        `UPDATE vector_list_state SET generation = generation + 1, training_steps = NULL, maintained = 1, watermark = 0,
           overflow_band = @band, overflow_vectors = 0, overflow_share = @share
         WHERE id = 1`,
      )
      .run(overflow);
    preparedList = null;
    rangeStatements.clear();
    knnStatements.clear();
    changes.record(null);
    written();
  }

  function assign(current: State, dimensions: number): void {
    const statements = sql();
    const after = current.watermark ?? 0;
    const ids = statements.idsAfter.all(after * SLICE_SLOTS + SLICE_SLOTS - 1, ASSIGN_PAGE);
    const vectors = options.read(ids);
    for (const id of ids) {
      const vector = vectors.get(id);
      const ownerId = statements.ownerOf.get(BigInt(id));
      if (!vector || ownerId === undefined) continue;
      insert(id, ownerId, vector.subarray(0, dimensions), binaryCodeOf(vector), current);
    }
    const watermark = ids.length < ASSIGN_PAGE ? null : (ids.at(-1) ?? after);
    database.prepare('UPDATE vector_list_state SET watermark = ? WHERE id = 1').run(watermark);
  }

  /** Whether lists in use should be trained again: the store grew 4 times, or the overflow holds too much of it. */
  function retrain(current: State, total: number): boolean {
    if (total >= RETRAIN_GROWTH * current.trained_vectors) return true;
    return (
      current.overflow_vectors > ((current.overflow_share ?? 0) + OVERFLOW_RETRAIN_SHARE) * total &&
      total >= OVERFLOW_RETRAIN_GROWTH * current.trained_vectors
    );
  }

  function rangeStatement(owners: number | null) {
    const key = owners ?? -1;
    let statement = rangeStatements.get(key);
    if (!statement) {
      statement = database.prepare<unknown[], { id: number; distance: number }>(
        `SELECT memory_id AS id, distance FROM memory_vector_list_bits
         WHERE bits MATCH vec_bit(?) AND k = ? AND part >= ? AND part <= ?
         ${owners === null ? '' : `AND owner_id IN (${Array.from({ length: owners }, () => '?').join(', ')})`}
         AND distance <= ?`,
      );
      rangeStatements.set(key, statement);
    }
    return statement;
  }

  /** The KNN of one list's bands (a range of partitions), the owner filter inside it as in {@link rangeStatement}. */
  function knnStatement(owners: number | null, bounded: boolean) {
    const key = (owners ?? -1) * 2 + (bounded ? 1 : 0);
    let statement = knnStatements.get(key);
    if (!statement) {
      statement = database.prepare<unknown[], { id: number; distance: number }>(
        `SELECT memory_id AS id, distance FROM memory_vector_list_bits
         WHERE bits MATCH vec_bit(?) AND k = ? AND part >= ? AND part <= ?
         ${owners === null ? '' : `AND owner_id IN (${Array.from({ length: owners }, () => '?').join(', ')})`}
         ${bounded ? 'AND distance <= ?' : ''}`,
      );
      knnStatements.set(key, statement);
    }
    return statement;
  }

  /** {@link SqliteVectorLists.near}, inside {@link reading}. */
  function near(
    ...[vector, code, ownerIds, wanted, bound, minScore]: Parameters<SqliteVectorLists['near']>
  ): ReturnType<SqliteVectorLists['near']> {
    const current = state();
    if (!current?.maintained || current.watermark !== null) return null;
    if (ownerIds?.length === 0) return [];
    const { values, count, products } = loadCentroids(current, vector.length);
    const query = unit(vector);
    const reach = Math.acos(Math.min(1, Math.max(-1, minScore))) + ANGLE_SLACK;
    const memory = snapshotFor(current);
    const recent = memory ? deltaOf(memory) : null;
    let found: Array<{ id: number; distance: number }> = [];
    // The list rows as the file holds them once this object wrote after the snapshot: a write widens a list's bands.
    const rows = memory && recent === null ? memory.lists : listRows();
    const ranges = rangesOf(query, values, count, rows, reach, null, products);
    if (current.overflow_band !== null) ranges.push([OVERFLOW_PART, OVERFLOW_PART]);
    if (memory) {
      const words = codeWords(code, memory.words);
      const within: Within[] = [];
      const added: Within[] = [];
      for (const [low, high] of ranges) {
        for (let part = low; part <= high; part++) {
          const members = memory.parts.get(part);
          if (members) scan(members, part, words, ownerIds, bound, within);
          const written = recent?.parts.get(part);
          if (written) scan(written, part, words, ownerIds, bound, added);
        }
      }
      found = withWritten(within, added, recent);
    } else {
      const statement = rangeStatement(ownerIds === null ? null : ownerIds.length);
      const owners = (ownerIds ?? []).map(BigInt);
      for (const [low, high] of ranges) {
        found.push(...statement.all(code, wanted, BigInt(low), BigInt(high), ...owners, bound));
      }
    }
    return found.sort((a, b) => a.distance - b.distance || a.id - b.id).slice(0, wanted);
  }

  /** {@link SqliteVectorLists.mayHoldOlder}, inside {@link reading}. */
  function mayHoldOlder(
    ...[queries, bound, minScore]: Parameters<SqliteVectorLists['mayHoldOlder']>
  ): ReturnType<SqliteVectorLists['mayHoldOlder']> {
    const current = state();
    if (!current?.maintained || current.watermark !== null) return null;
    const first = queries[0];
    if (!first) return [];
    const loaded = loadCentroids(current, first.vector.length);
    // Linking's pass reads the codes by memory id, of one snapshot: one that this object wrote after is read again.
    if (delta !== null) {
      snapshot = null;
      delta = null;
    }
    let memory = snapshotFor(current, true);
    // Brought up to date with another connection's commits (ADR 27): the rows they wrote are beside the codes, where
    // this pass does not look (attack18c: an older neighbour written there was never searched for). Read again.
    if (delta !== null) {
      snapshot = null;
      delta = null;
      memory = snapshotFor(current, true);
    }
    if (!memory) return null;
    const { parts, partOf, scan } = sortedById(memory);
    const between = anglesBetween(loaded);
    const reach = Math.acos(Math.min(1, Math.max(-1, minScore))) + ANGLE_SLACK;
    // Each query's unit vector in one array, written again for each query (none is kept past its own).
    const query = new Float32Array(loaded.dimensions);
    return queries.map(({ olderThan, vector, code, ownerIds }) => {
      if (ownerIds?.length === 0 || vector.length !== loaded.dimensions) return false;
      const part = partOf(olderThan);
      const pivot = part === undefined || part === OVERFLOW_PART ? null : { list: Math.floor(part / BANDS), between };
      const words = codeWords(code, memory.words);
      // Owners as the WebAssembly scan takes them (any, or one or two); others are scanned in JavaScript.
      const pair = scan === null ? null : ownerPair(ownerIds);
      if (pair !== null) scan?.query(words);
      const holds = (low: number, high: number): boolean => {
        for (let at = low; at <= high; at++) {
          const members = parts.get(at);
          if (!members) continue;
          if (scan === null || pair === null) {
            if (holdsOlder(members, words, ownerIds, bound, olderThan)) return true;
            continue;
          }
          const older = countBelow(members.ids, olderThan);
          if (older > 0 && scan.first(members.at, older, bound, pair[0], pair[1]) >= 0) return true;
        }
        return false;
      };
      // The lists' ranges as rangesOf gives them, then the overflow's, scanned in that order as each is found.
      query.set(vector);
      normalise(query, 0, query.length);
      if (eachRange(query, loaded.values, loaded.count, memory.lists, reach, pivot, loaded.products, holds))
        return true;
      return current.overflow_band !== null && holds(OVERFLOW_PART, OVERFLOW_PART);
    });
  }

  return {
    step(dimensions) {
      writes++;
      const current = state();
      if (current?.training_steps !== null && current?.training_steps !== undefined) {
        train(current, dimensions);
        return true;
      }
      if (current?.maintained && current.watermark !== null) {
        assign(current, dimensions);
        return true;
      }
      if (current?.maintained && fillResiduals(current, dimensions)) return true;
      const total = sql().vectorCount.get() ?? 0;
      if (total < minVectors) return false;
      if (current?.maintained && current.overflow_band !== null && !retrain(current, total)) return false;
      startTraining(total, current, dimensions);
      return true;
    },

    put(memoryId, ownerId, vector, code) {
      const current = state();
      if (current?.maintained) insert(memoryId, ownerId, vector, code, current);
    },

    remove(memoryId) {
      if (!state()?.maintained) return;
      changed(memoryId);
      withRecord(memoryId, () => listSql().remove.run(BigInt(memoryId)));
    },

    clear() {
      // A generation is never given twice: another connection caches centroids by their generation's number,
      // so a cleared store keeps its last one (in a row with no lists) and the next training goes past it.
      const last = database.prepare<[], number>('SELECT generation FROM vector_list_state WHERE id = 1').pluck().get();
      database.exec(`DROP TABLE IF EXISTS memory_vector_list_bits;
        DELETE FROM vector_lists;
        DELETE FROM vector_list_training;
        DELETE FROM vector_list_state;
        DELETE FROM memory_vector_residuals;`);
      if (last !== undefined) {
        database
          .prepare(
            `INSERT INTO vector_list_state (id, generation, lists, training_steps, maintained, watermark, trained_vectors)
             VALUES (1, ?, 0, NULL, 0, NULL, 0)`,
          )
          .run(last);
      }
      preparedList = null;
      rangeStatements.clear();
      knnStatements.clear();
      centroids = null;
      changes.record(null);
      written();
    },

    complete() {
      const current = state();
      return Boolean(current?.maintained) && current?.watermark === null;
    },

    near: (...search) => reading(() => near(...search)),

    mayHoldOlder: (...first) => reading(() => mayHoldOlder(...first)),

    nearest(vector, code, ownerIds, wanted, probes, bound) {
      const current = state();
      if (!current?.maintained || ownerIds?.length === 0) return [];
      const { values, count, products } = loadCentroids(current, vector.length);
      const query = unit(vector);
      const memory = snapshotFor(current);
      const recent = memory ? deltaOf(memory) : null;
      // Each centroid's product with the query once (in WebAssembly where it runs, the same numbers): it chooses
      // the lists probed and enters every estimate of their members (ADR 10, 2026-12-02, session 9).
      const similarities = centroidProducts(query, values, count, products);
      const probed = (memory && recent === null ? memory.lists : listRows())
        .filter((row) => row.list < count && row.low_band !== null && row.high_band !== null)
        .map((row) => ({ row, similarity: similarities[row.list] ?? 0 }))
        .sort((a, b) => b.similarity - a.similarity || a.row.list - b.row.list)
        .slice(0, probes);
      const found: Array<{ id: number; distance: number }> = [];
      if (memory) {
        // The codes in memory (ADR 10, 2026-12-02, session 7): every code of the probed lists' bands and of
        // the overflow within the bound, where SQL keeps the `wanted` nearest of each list; the same answer
        // but for which of several codes at the `wanted`th distance a list's statement keeps.
        const words = codeWords(code, memory.words);
        const reach = bound ?? Number.POSITIVE_INFINITY;
        const within: Within[] = [];
        const added: Within[] = [];
        const ranges: Array<[number, number]> = probed.map(({ row }) => [
          row.list * BANDS + (row.low_band ?? 0),
          row.list * BANDS + (row.high_band ?? 0),
        ]);
        if (current.overflow_band !== null) ranges.push([OVERFLOW_PART, OVERFLOW_PART]);
        // In WebAssembly where the codes are in its memory and the owners are any, or one or two (ADR 10,
        // 2026-12-02, session 10): the same codes within the bound, in the same order, with the same distances.
        const pair = memory.scan === null ? null : ownerPair(ownerIds);
        if (pair !== null) memory.scan?.query(words);
        for (const [low, high] of ranges) {
          for (let part = low; part <= high; part++) {
            const written = recent?.parts.get(part);
            if (written) scan(written, part, words, ownerIds, reach, added);
            const members = memory.parts.get(part);
            if (!members) continue;
            if (memory.scan !== null && pair !== null && members.at !== undefined) {
              scanBy(memory.scan, members, part, words, pair, reach, within);
            } else {
              scan(members, part, words, ownerIds, reach, within);
            }
          }
        }
        // The `wanted` nearest by Hamming distance, each with the estimate of its cosine with the query from its
        // list, band and signs (ADR 10, 2026-12-02, session 8): the caller re-ranks exactly only the best of them.
        const kept = nearestWithin(withWritten(within, added, recent), wanted);
        if (kept.some((candidate) => candidate.partition !== OVERFLOW_PART))
          loadEstimates(memory, values, count, vector.length);
        const refined = new Uint8Array(kept.length);
        const estimates = bandEstimates(query, kept, memory.words, values, count, similarities, refined);
        return kept.map((candidate, index) => ({
          id: candidate.id,
          distance: candidate.distance,
          estimate: estimates[index] ?? 0,
          refined: refined[index] === 1,
        }));
      }
      const statement = knnStatement(ownerIds === null ? null : ownerIds.length, bound !== null);
      const rest = [...(ownerIds ?? []).map(BigInt), ...(bound === null ? [] : [bound])];
      for (const { row } of probed) {
        const base = row.list * BANDS;
        found.push(
          ...statement.all(
            code,
            wanted,
            BigInt(base + (row.low_band ?? 0)),
            BigInt(base + (row.high_band ?? 0)),
            ...rest,
          ),
        );
      }
      if (current.overflow_band !== null) {
        const part = BigInt(OVERFLOW_PART);
        found.push(...statement.all(code, wanted, part, part, ...rest));
      }
      return found.sort((a, b) => a.distance - b.distance || a.id - b.id).slice(0, wanted);
    },
  };
}

/**
 * The partitions (list * BANDS + band, or the overflow) a search reads for `query` (a unit vector): of each list,
 * the bands within `reach` of the query's angle to its centroid. With a `pivot` (the list the query's vector is
 * in, and the angles between the centroids), a list whose centroid the triangle inequality puts out of reach
 * (angle(q, c) >= angle(p, c) - angle(q, p), and <= their sum) is left out without its product: it would have
 * no band in the range, as the product would have said; the other lists' ranges are the same numbers.
 */
export function rangesOf(
  query: Float32Array,
  values: Float32Array,
  count: number,
  rows: readonly ListRow[],
  reach: number,
  pivot: { list: number; between: Float64Array } | null,
  products: DotProducts | null = null,
): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  eachRange(query, values, count, rows, reach, pivot, products, (low, high) => {
    ranges.push([low, high]);
    return false;
  });
  return ranges;
}

/**
 * The ranges of {@link rangesOf}, in the same order, each given to `visit` as it is found, until `visit` returns
 * true (then true; false when none did). Linking's first pass asks only whether some range holds an older code: it
 * stops at the first that does, and allocates no pair a range (2026-12-03, session 18: the pairs were a quarter of the
 * JavaScript heap that pass allocated, and the products of the lists after the range that answers are not computed).
 */
function eachRange(
  query: Float32Array,
  values: Float32Array,
  count: number,
  rows: readonly ListRow[],
  reach: number,
  pivot: { list: number; between: Float64Array } | null,
  products: DotProducts | null,
  visit: (low: number, high: number) => boolean,
): boolean {
  const dimensions = query.length;
  products?.query(query);
  const product = (list: number) => (products ? products.dot(list) : dot(query, values, list * dimensions));
  const angleTo = (list: number) => Math.acos(Math.min(1, Math.max(-1, product(list))));
  const toPivot = pivot !== null && pivot.list < count ? angleTo(pivot.list) : Number.NaN;
  for (const row of rows) {
    if (row.list >= count || row.low_band === null || row.high_band === null) continue;
    if (pivot !== null && row.list !== pivot.list) {
      const apart = pivot.between[pivot.list * count + row.list] ?? Number.NaN;
      // NaN (a query or centroid not finite) compares false: the product decides.
      if ((apart - toPivot - PIVOT_SLACK - reach) / BAND >= row.high_band + 1) continue;
      if ((apart + toPivot + PIVOT_SLACK + reach) / BAND < row.low_band) continue;
    }
    const angle = pivot !== null && row.list === pivot.list ? toPivot : angleTo(row.list);
    // A query with no angle (a vector stored before vectors were checked, not finite) reads every band.
    const known = !Number.isNaN(angle);
    const low = known ? Math.max(row.low_band, Math.floor((angle - reach) / BAND)) : row.low_band;
    const high = known ? Math.min(row.high_band, Math.floor((angle + reach) / BAND)) : row.high_band;
    if (low > high) continue;
    if (visit(row.list * BANDS + low, row.list * BANDS + high)) return true;
  }
  return false;
}

/**
 * The snapshot's parts sorted by memory id, and each memory's part (computed once per snapshot). Where recall's
 * WebAssembly scan already holds the snapshot's codes and owners (`readSnapshot`), each part is sorted where it is,
 * in that memory and in its own arrays (ADR 20, 2026-12-03, session 13): no second copy of the codes, which linking's
 * first pass held beside the first while it sorted (about 15 MiB of resident set at 100,000 vectors). Elsewhere the
 * codes and owners are copied, part after part, into a new scan's memory when it can run and every owner is a
 * 32-bit integer.
 */
function sortedById(memory: Snapshot): ById {
  if (memory.byId) return memory.byId;
  const words = memory.words;
  const inPlace =
    memory.scan !== null &&
    memory.scan.stride === words * 4 &&
    [...memory.parts.values()].every((part) => part.at !== undefined);
  const byId = inPlace ? sortInPlace(memory, memory.scan as CodeScan) : sortedCopy(memory);
  memory.byId = byId;
  // Recall's scan reads the sorted parts from here on (their `at` is in this scan's memory).
  memory.scan = byId.scan;
  // The sorted parts hold the same codes, ids and owners (only their order within a part differs, which no search's
  // answer depends on: each sorts its hits by distance, then id): recall searches them too, and the unsorted copy
  // is let go (ADR 20, 2026-12-02, session 9: one copy of the codes, not two, once linking has read them).
  memory.parts = byId.parts;
  return byId;
}

/** The order of a part's members by memory id (equal ids in their order). */
function orderById(ids: Float64Array): number[] {
  return Array.from(ids.keys()).sort((a, b) => (ids[a] ?? 0) - (ids[b] ?? 0));
}

/** Sorts each part of `memory` by memory id where it is: its ids, owners and codes (in `scan`'s memory), and what recall read beside them. */
function sortInPlace(memory: Snapshot, scan: CodeScan): ById {
  const words = memory.words;
  const stride = words * 4;
  const parts = new Map<number, SortedPart>();
  const partOf = createPartOf(memory.parts);
  for (const [partition, part] of memory.parts) {
    const { ids, owners, codes, residuals, residualScales } = part;
    const at = part.at ?? 0;
    const order = orderById(ids);
    const count = ids.length;
    if (order.some((from, index) => from !== index)) {
      const oldIds = ids.slice();
      const oldOwners = owners.slice();
      const oldCodes = codes.slice();
      for (let index = 0; index < count; index++) {
        const from = order[index] ?? 0;
        ids[index] = oldIds[from] ?? 0;
        owners[index] = oldOwners[from] ?? 0;
        scan.owners[at + index] = oldOwners[from] ?? 0;
        codes.set(oldCodes.subarray(from * words, (from + 1) * words), index * words);
      }
      if (residuals && residualScales) {
        const oldResiduals = residuals.slice();
        const oldScales = residualScales.slice();
        for (let index = 0; index < count; index++) {
          const from = order[index] ?? 0;
          residuals.set(oldResiduals.subarray(from * stride, (from + 1) * stride), index * stride);
          residualScales[index] = oldScales[from] ?? Number.NaN;
        }
      }
    }
    // The products of the members' signs with the centroid are computed again when recall needs them, as of the
    // sorted copy this replaces (their order was the unsorted one).
    const { signDots: _signs, residualDots: _residuals, ...sorted } = part;
    parts.set(partition, { ...sorted, at });
  }
  return { parts, partOf, scan };
}

/** The parts of `memory` sorted by memory id into new arrays (and a new scan's memory where it can run). */
function sortedCopy(memory: Snapshot): ById {
  const parts = new Map<number, SortedPart>();
  const words = memory.words;
  let total = 0;
  let small = true;
  for (const { ids, owners } of memory.parts.values()) {
    total += ids.length;
    for (const owner of owners) if (!Number.isInteger(owner) || owner < 0 || owner > 0x7fffffff) small = false;
  }
  const scan = small ? createCodeScan(total, words) : null;
  const perCode = scan === null ? 0 : scan.stride / 4;
  let at = 0;
  for (const [part, { ids, owners, codes, residuals, residualScales }] of memory.parts) {
    const order = orderById(ids);
    // Where the scan's codes have no padding, the part's codes are a view of them rather than a second copy.
    const shared = scan !== null && perCode === words;
    const sorted: SortedPart = {
      ids: new Float64Array(ids.length),
      owners: new Float64Array(ids.length),
      codes: shared ? scan.codes.subarray(at * words, (at + ids.length) * words) : new Uint32Array(codes.length),
      at,
    };
    // The residual codes in the same order (in place: each part's are views of one array, and only reordered).
    if (residuals && residualScales) {
      const stride = words * 4;
      const oldResiduals = residuals.slice();
      const oldScales = residualScales.slice();
      for (const [index, from] of order.entries()) {
        residuals.set(oldResiduals.subarray(from * stride, (from + 1) * stride), index * stride);
        residualScales[index] = oldScales[from] ?? Number.NaN;
      }
      sorted.residuals = residuals;
      sorted.residualScales = residualScales;
    }
    for (const [index, from] of order.entries()) {
      const code = codes.subarray(from * words, (from + 1) * words);
      sorted.ids[index] = ids[from] ?? 0;
      sorted.owners[index] = owners[from] ?? 0;
      if (!shared) sorted.codes.set(code, index * words);
      if (scan !== null) {
        scan.codes.set(code, (at + index) * perCode);
        scan.owners[at + index] = owners[from] ?? 0;
      }
    }
    at += ids.length;
    parts.set(part, sorted);
  }
  return { parts, partOf: createPartOf(memory.parts), scan };
}

/**
 * Each memory's part, as a table indexed by memory id where the ids are whole numbers not much sparser than the
 * codes (4 bytes an id between the least and the largest: about 0.4 MB at 100,000 vectors, where a `Map` of them
 * held some 4-7 MB of the JavaScript heap), else a `Map`. A memory in two parts (not written so) answers the last.
 */
export function createPartOf(parts: ReadonlyMap<number, SnapshotPart>): (id: number) => number | undefined {
  let total = 0;
  let least = Number.POSITIVE_INFINITY;
  let largest = Number.NEGATIVE_INFINITY;
  let whole = true;
  for (const { ids } of parts.values()) {
    total += ids.length;
    for (const id of ids) {
      if (!Number.isInteger(id)) whole = false;
      if (id < least) least = id;
      if (id > largest) largest = id;
    }
  }
  const partitions = [...parts.keys()];
  const dense =
    whole &&
    total > 0 &&
    largest - least < 4 * total + 1024 &&
    partitions.every((partition) => Number.isInteger(partition) && partition >= -1 && partition < 0x7ffffff0);
  if (!dense) {
    const partOf = new Map<number, number>();
    for (const [partition, { ids }] of parts) for (const id of ids) partOf.set(id, partition);
    return (id) => partOf.get(id);
  }
  // partition + 2 per id (0: none; the overflow's partition is -1).
  const table = new Int32Array(largest - least + 1);
  for (const [partition, { ids }] of parts) for (const id of ids) table[id - least] = partition + 2;
  return (id) => {
    if (!(id >= least && id <= largest && Number.isInteger(id))) return undefined;
    const value = table[id - least] ?? 0;
    return value === 0 ? undefined : value - 2;
  };
}

/**
 * The residual rows of `generation` whose code is a blob of `codeBytes` and a scale (ADR 10, 2026-12-02, session 12),
 * in memory-id order, `pageSize` rows at a time: their ids, and their codes end to end in one blob. The blobs are
 * concatenated as text and cast back, which keeps every byte where the file's text is UTF-8 (mneme's files are) and
 * costs about 0.4 of hex() and unhex() on both sides; a value a row cost about 7 us of CPU for its buffer alone.
 */
export function* residualPages(
  database: Database.Database,
  generation: number,
  codeBytes: number,
  pageSize = RESIDUAL_PAGE,
): Generator<{ ids: number[]; codes: Buffer }> {
  // A file whose text is UTF-16 would convert the blobs' bytes as text: there, each code goes through hex() instead.
  const utf8 = database.pragma('encoding', { simple: true }) === 'UTF-8';
  const codes = utf8
    ? "CAST(group_concat(code, '' ORDER BY memory_id) AS BLOB)"
    : "unhex(group_concat(hex(code), '' ORDER BY memory_id))";
  // The last id as SQLite holds it (a bigint): an id past 2^53 read as a number may round down, and the next page
  // would start below it and read the same rows again, for ever (attack12).
  const page = database
    .prepare<[number | bigint, number, number, number], [bigint | null, bigint, string | null, Buffer | null]>(
      `SELECT max(memory_id), count(*), group_concat(memory_id, ',' ORDER BY memory_id), ${codes}
       FROM (SELECT memory_id, code FROM memory_vector_residuals
         WHERE memory_id > ? AND generation = ? AND typeof(code) = 'blob' AND length(code) = ?
         ORDER BY memory_id LIMIT ?)`,
    )
    .raw()
    .safeIntegers();
  const rowBytes = codeBytes + 4;
  for (let after: number | bigint = Number.NEGATIVE_INFINITY; ; ) {
    const row: [bigint | null, bigint, string | null, Buffer | null] = page.get(
      after,
      generation,
      rowBytes,
      pageSize,
    ) ?? [null, 0n, null, null];
    const [last, count, idsText, codes] = row;
    const rows = Number(count);
    if (last === null || rows === 0 || idsText === null || codes === null) return;
    after = last;
    const ids = idsText.split(',').map(Number);
    if (ids.length === rows && codes.length === rows * rowBytes) yield { ids, codes };
  }
}

/**
 * The indexes of `ids` in ascending order of their values (equal values in index order): one native sort of numbers
 * that carry both (the id times 2^21 plus the index) where every id is a whole number below 2^32 and there are at
 * most 2^21 of them, else a sort with a comparison.
 */
export function placesById(ids: Float64Array): Uint32Array {
  const places = new Uint32Array(ids.length);
  const fits = ids.length <= PLACE_SPAN && ids.every((id) => Number.isInteger(id) && id >= 0 && id < 2 ** 32);
  if (!fits) {
    const order = Array.from(ids.keys()).sort((a, b) => (ids[a] ?? 0) - (ids[b] ?? 0) || a - b);
    places.set(order);
    return places;
  }
  const keys = new Float64Array(ids.length);
  for (let index = 0; index < ids.length; index++) keys[index] = (ids[index] ?? 0) * PLACE_SPAN + index;
  keys.sort();
  for (let index = 0; index < keys.length; index++) places[index] = (keys[index] ?? 0) % PLACE_SPAN;
  return places;
}
const PLACE_SPAN = 2 ** 21;

/** The owners of a query as the WebAssembly scan takes them: [-1, -1] for any, else two (one twice); null: more. */
function ownerPair(ownerIds: readonly number[] | null): [number, number] | null {
  if (ownerIds === null) return [-1, -1];
  const first = ownerIds[0];
  const second = ownerIds[1] ?? first;
  if (ownerIds.length > 2 || first === undefined || second === undefined) return null;
  const fits = (owner: number) => Number.isInteger(owner) && owner >= 0 && owner <= 0x7fffffff;
  return fits(first) && fits(second) ? [first, second] : null;
}

/** How many of `ids` (ascending) are below `bound`. */
function countBelow(ids: Float64Array, bound: number): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((ids[middle] ?? 0) < bound) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The angles between every two centroids, computed once per generation. */
function anglesBetween(centroids: Centroids): Float64Array {
  centroids.between ??= anglesAmong(centroids.values, centroids.count, centroids.dimensions);
  return centroids.between;
}

/** The angles between every two of `count` unit vectors of `dimensions` in `values` (`count` by `count`). */
export function anglesAmong(values: Float32Array, count: number, dimensions: number): Float64Array {
  const between = new Float64Array(count * count);
  for (let left = 0; left < count; left++) {
    const centroid = values.subarray(left * dimensions, (left + 1) * dimensions);
    for (let right = left; right < count; right++) {
      const angle = Math.acos(Math.min(1, Math.max(-1, dot(centroid, values, right * dimensions))));
      between[left * count + right] = angle;
      between[right * count + left] = angle;
    }
  }
  return between;
}

/**
 * Whether `part` (sorted by memory id) holds a vector of an id below `olderThan` (of `ownerIds`, null: all)
 * within Hamming distance `bound` of `query`.
 */
function holdsOlder(
  part: SnapshotPart,
  query: Uint32Array,
  ownerIds: readonly number[] | null,
  bound: number,
  olderThan: number,
): boolean {
  const words = query.length;
  const { codes, ids, owners } = part;
  for (let member = 0, offset = 0; member < ids.length; member++, offset += words) {
    if ((ids[member] ?? 0) >= olderThan) return false;
    if (ownerIds !== null && !ownerIds.includes(owners[member] ?? -1)) continue;
    let distance = 0;
    for (let word = 0; word < words; word++) {
      let bits = ((codes[offset + word] ?? 0) ^ (query[word] ?? 0)) >>> 0;
      bits -= (bits >>> 1) & 0x55555555;
      bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
      bits = (bits + (bits >>> 4)) & 0x0f0f0f0f;
      distance += Math.imul(bits, 0x01010101) >>> 24;
      if (distance > bound) break;
    }
    if (distance <= bound) return true;
  }
  return false;
}

/** Centroids with their sign bits (32-bit words), for {@link placeShortlisted}. */
interface Placing {
  values: Float32Array;
  count: number;
  codes: Uint32Array;
  words: number;
  /** Scratch: how many centroids lie at each Hamming distance from the vector being placed. */
  histogram: Int32Array;
  distances: Int32Array;
  /** The centroids' products in WebAssembly, the same numbers (only for centroids that no longer change). */
  products: DotProducts | null;
}

/** The lists' centroids in memory, of one generation. */
interface Centroids extends Placing {
  generation: number;
  dimensions: number;
  /** The angles between the centroids (`count` by `count`), computed when first needed. */
  between?: Float64Array;
}

function centroidsOf(values: Float32Array, count: number, dimensions: number): Placing {
  const words = Math.ceil(dimensions / 32);
  const codes = new Uint32Array(count * words);
  for (let list = 0; list < count; list++) {
    codes.set(
      codeWords(binaryCodeOf(values.subarray(list * dimensions, (list + 1) * dimensions)), words),
      list * words,
    );
  }
  return {
    values,
    count,
    codes,
    words,
    histogram: new Int32Array(words * 32 + 1),
    distances: new Int32Array(count),
    products: null,
  };
}

/** The list of a unit vector (its nearest centroid) and its angle to that centroid. */
function placeOf(unit: Float32Array, values: Float32Array, count: number): { list: number; angle: number } {
  const dimensions = unit.length;
  let best = -2;
  let list = 0;
  for (let centroid = 0; centroid < count; centroid++) {
    const similarity = dot(unit, values, centroid * dimensions);
    if (similarity > best) {
      best = similarity;
      list = centroid;
    }
  }
  return { list, angle: Math.acos(Math.min(1, Math.max(-1, best))) };
}

/**
 * The list of a unit vector among the {@link SHORTLIST} centroids whose sign bits are nearest its `code`
 * (and those tied with the last of them), by exact dot product, and its exact angle to that centroid.
 */
function placeShortlisted(unit: Float32Array, code: Buffer, centroids: Placing): { list: number; angle: number } {
  const { values, count, codes, words, histogram, distances } = centroids;
  if (count <= SHORTLIST) return placeOf(unit, values, count);
  const query = codeWords(code, words);
  histogram.fill(0);
  for (let list = 0; list < count; list++) {
    const distance = hammingAt(codes, list * words, query);
    distances[list] = distance;
    histogram[distance] = (histogram[distance] ?? 0) + 1;
  }
  let cut = 0;
  for (let seen = 0; cut < histogram.length; cut++) {
    seen += histogram[cut] ?? 0;
    if (seen >= SHORTLIST) break;
  }
  const dimensions = unit.length;
  const { products } = centroids;
  products?.query(unit);
  let best = -2;
  let list = 0;
  for (let centroid = 0; centroid < count; centroid++) {
    if ((distances[centroid] ?? 0) > cut) continue;
    const similarity = products ? products.dot(centroid) : dot(unit, values, centroid * dimensions);
    if (similarity > best) {
      best = similarity;
      list = centroid;
    }
  }
  return { list, angle: Math.acos(Math.min(1, Math.max(-1, best))) };
}

/**
 * Balances the lists at the switch to new centroids (ADR 20, 2026-12-01, session 5), in up to
 * {@link BALANCE_ROUNDS} rounds over `points` (unit vectors drawn from the store): each is placed, then
 * each list given less than {@link BALANCE_SHARE} of the mean, smallest first, is moved to the largest list
 * not yet split in the round: the two centroids are put on either side of the largest's, along the
 * direction off it of the one of its first few members that splits them most evenly, so that its
 * vectors are split between them by the side of that direction they lie on. The members of a list
 * moved go to their nearest centroid in the next round.
 */
function balance(values: Float32Array, count: number, dimensions: number, points: readonly Float32Array[]): void {
  if (count < 2 || points.length < count) return;
  const codes = points.map((point) => binaryCodeOf(point));
  const starved = BALANCE_SHARE * (points.length / count);
  for (let round = 0; round < BALANCE_ROUNDS; round++) {
    const centroids = centroidsOf(values, count, dimensions);
    const members: number[][] = Array.from({ length: count }, () => []);
    for (const [index, point] of points.entries()) {
      members[placeShortlisted(point, codes[index] ?? Buffer.alloc(0), centroids).list]?.push(index);
    }
    const sizes = members.map((list) => list.length);
    const order = sizes.map((_, list) => list).sort((a, b) => (sizes[a] ?? 0) - (sizes[b] ?? 0) || a - b);
    const touched = new Set<number>();
    for (const list of order) {
      if ((sizes[list] ?? 0) >= starved) break;
      if (touched.has(list)) continue;
      let largest = -1;
      for (let other = 0; other < count; other++) {
        if (other === list || touched.has(other)) continue;
        if (largest < 0 || (sizes[other] ?? 0) > (sizes[largest] ?? 0)) largest = other;
      }
      const split = members[largest] ?? [];
      if (largest < 0 || split.length < 2 * starved) break;
      splitAlong(values, largest, list, evenest(values, largest, split, points, dimensions), dimensions);
      touched.add(list);
      touched.add(largest);
    }
    if (touched.size === 0) return;
  }
}

/**
 * Of the first {@link SPLIT_TRIALS} of a list's `members` (indexes into `points`), the one whose direction off the
 * list's centroid splits the members most evenly by side.
 */
function evenest(
  values: Float32Array,
  list: number,
  members: readonly number[],
  points: readonly Float32Array[],
  dimensions: number,
): Float32Array | undefined {
  const offset = list * dimensions;
  let best: Float32Array | undefined;
  let bestGap = Number.POSITIVE_INFINITY;
  for (const trial of members.slice(0, SPLIT_TRIALS)) {
    const point = points[trial];
    if (!point) continue;
    const along = dot(point, values, offset);
    const direction = new Float32Array(dimensions);
    for (let index = 0; index < dimensions; index++) {
      direction[index] = (point[index] ?? 0) - along * (values[offset + index] ?? 0);
    }
    let side = 0;
    for (const member of members) {
      const other = points[member];
      if (other && dot(other, direction, 0) >= 0) side++;
    }
    const gap = Math.abs(2 * side - members.length);
    if (gap < bestGap) {
      bestGap = gap;
      best = point;
    }
  }
  return best;
}

/**
 * Puts the centroids `largest` and `list` on either side of `largest`'s, {@link SPLIT_OFFSET} along the
 * direction of `point` off it (a fixed direction when that is none), so that a vector goes to one or the
 * other by the side of that direction it lies on: about half each of a cluster with no finer structure.
 * Both as far off the old centroid: the mean of a few vectors on each side would carry their noise, and
 * a centroid with more noise loses the vectors not drawn to the other one.
 */
function splitAlong(
  values: Float32Array,
  largest: number,
  list: number,
  point: Float32Array | undefined,
  dimensions: number,
): void {
  const offset = largest * dimensions;
  const direction = new Float32Array(dimensions);
  if (point) {
    const along = dot(point, values, offset);
    for (let index = 0; index < dimensions; index++) {
      direction[index] = (point[index] ?? 0) - along * (values[offset + index] ?? 0);
    }
  }
  if (!direction.some((value) => value !== 0)) direction[list % dimensions] = 1;
  normalise(direction, 0, dimensions);
  const target = list * dimensions;
  for (let index = 0; index < dimensions; index++) {
    const value = values[offset + index] ?? 0;
    const off = SPLIT_OFFSET * (direction[index] ?? 0);
    values[target + index] = value - off;
    values[offset + index] = value + off;
  }
  normalise(values, target, dimensions);
  normalise(values, offset, dimensions);
}

/**
 * Moves every starved list (drawn less than {@link STARVED_SHARE} of the mean) beside the most drawn list,
 * the two centroids split along the direction of a vector drawn into it (its component off the centroid):
 * vectors of that list then go to one or the other by the side of that direction they lie on, about half
 * each for a cluster with no finer structure, and the halves of a cluster that has it. The most drawn list's
 * weight is shared between the two, so that neither moves more than the list did.
 */
function splitStarved(
  values: Float32Array,
  weights: number[],
  drawnInto: ReadonlyMap<number, Float32Array>,
  dimensions: number,
): void {
  const count = weights.length;
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  if (count < 2 || total < STARVED_AFTER_DRAWS * count) return;
  const starved = STARVED_SHARE * (total / count);
  for (let list = 0; list < count; list++) {
    if ((weights[list] ?? 0) >= starved) continue;
    let largest = 0;
    for (let other = 1; other < count; other++) if ((weights[other] ?? 0) > (weights[largest] ?? 0)) largest = other;
    if (largest === list) return;
    splitAlong(values, largest, list, drawnInto.get(largest), dimensions);
    const shared = (weights[largest] ?? 0) / 2;
    weights[largest] = shared;
    weights[list] = shared;
  }
}

/** The little-endian 64-bit integer at `offset` of `buffer` (exact up to 2^53), without a BigInt. */
function int64At(buffer: Buffer, offset: number): number {
  return buffer.readInt32LE(offset + 4) * 4294967296 + buffer.readUInt32LE(offset);
}

/** The 32-bit words of a code (zero-padded to `words`), as the snapshot holds codes. */
function codeWords(code: Buffer, words: number): Uint32Array {
  const result = new Uint32Array(words);
  new Uint8Array(result.buffer).set(code.subarray(0, words * 4));
  return result;
}

/**
 * A snapshot's codes within a search's bound but those written since it was read ({@link SqliteVectorLists}'s
 * delta, ADR 10, 2026-12-03, session 13), and the written ones within it as they are now.
 */
function withWritten(
  within: Within[],
  added: Within[],
  recent: { written: ReadonlyMap<number, unknown> } | null,
): Within[] {
  if (recent === null) return within;
  const kept = within.filter((candidate) => !recent.written.has(candidate.id));
  for (const candidate of added) kept.push(candidate);
  return kept;
}

/** A code within a search's Hamming bound: its memory, distance, and where its code is (member `member` of `part`). */
interface Within {
  id: number;
  distance: number;
  part: SnapshotPart;
  member: number;
  /** The partition's number: list * BANDS + band, or the overflow's. */
  partition: number;
}

/**
 * The estimate of each candidate's cosine with `query` (a unit vector) from its list and band and its signs
 * (ADR 10, 2026-12-02, session 8): a vector at angle `r` from its list's centroid `c` is `cos r c + sin r u`
 * (`u` a unit vector off `c`), so its dot product with the query is `cos r <q, c>`, known but for the band's
 * width (`r` is taken at the band's middle), plus `sin r <q - <q, c> c, u>`, estimated from the signs `s` as a
 * Gaussian `u`'s would be: `sqrt(2 / (pi D))` times `<q, s> - <q, c> <c, s>`. `<q, s>` costs a look-up a code
 * byte ({@link estimateTable}, one table a query); `<c, s>` depends on the code alone and is computed once a
 * snapshot for each code of a partition searched ({@link SnapshotPart.signDots}). The overflow's vectors have
 * no centroid: `r` is 90 degrees, the estimate `sqrt(2 / (pi D)) <q, s>`.
 *
 * A member with its residual code (ADR 10, 2026-12-02, session 11: the signs `t` of `v - <v, c> c`, and `k`, their
 * product with the unit residual `u`) has its sign term from those signs instead: `<q, u>` estimated by the
 * regression of `u` on `t` off the centroid, `k / (D - <c, t>^2)` times `<q, t> - <q, c> <c, t>` (the same table
 * gives `<q, t>`; `<c, t>` is computed once a snapshot, as `<c, s>`). Its error is about half the other's on the
 * bench's corpus, where `v`'s own signs say little of `u`. `refined` (when given) is set to 1 for each candidate
 * estimated so, or of the overflow (whose estimate has no finer form), else 0.
 */
export function bandEstimates(
  query: Float32Array,
  candidates: ReadonlyArray<{ part: SnapshotPart; member: number; partition: number }>,
  words: number,
  centroids: Float32Array,
  count: number,
  similarities: Float64Array = centroidProducts(query, centroids, count, null),
  refined: Uint8Array | null = null,
): Float64Array {
  const dimensions = query.length;
  const bytes = words * 4;
  const scale = Math.sqrt(2 / (Math.PI * dimensions));
  const table = estimateTable(query, bytes, scratchTable(bytes));
  let total = 0;
  for (const value of query) total += value;
  const estimates = new Float64Array(candidates.length);
  for (let index = 0; index < candidates.length; index++) {
    const candidate = candidates[index];
    if (!candidate) continue;
    const { part, member, partition } = candidate;
    part.bytes ??= new Uint8Array(part.codes.buffer, part.codes.byteOffset, part.codes.byteLength);
    const code = part.bytes;
    let sum = 0;
    for (let byte = 0, row = 0, at = member * bytes; byte < bytes; byte++, row += 256, at++) {
      sum += table[row + (code[at] ?? 0)] ?? 0;
    }
    const signs = 2 * sum - total;
    const list = partition < 0 ? -1 : Math.floor(partition / BANDS);
    if (list < 0 || list >= count) {
      estimates[index] = scale * signs;
      if (refined && list < 0) refined[index] = 1;
      continue;
    }
    const product = similarities[list] ?? 0;
    const band = partition % BANDS;
    const centroid = centroids.subarray(list * dimensions, (list + 1) * dimensions);
    const residualScale = part.residualScales?.[member] ?? Number.NaN;
    if (part.residuals && !Number.isNaN(residualScale)) {
      const residuals = part.residuals;
      let residualSum = 0;
      for (let byte = 0, row = 0, at = member * bytes; byte < bytes; byte++, row += 256, at++) {
        residualSum += table[row + (residuals[at] ?? 0)] ?? 0;
      }
      part.residualDots ??= signDotsOf(residuals, part.ids.length, centroid, words);
      const centroidDot = part.residualDots[member] ?? 0;
      const spread = dimensions - centroidDot * centroidDot;
      estimates[index] =
        (BAND_COSINES[band] ?? 0) * product +
        (spread > 0
          ? (BAND_SINES[band] ?? 0) * (residualScale / spread) * (2 * residualSum - total - product * centroidDot)
          : 0);
      if (refined) refined[index] = 1;
      continue;
    }
    part.signDots ??= signDotsOf(code, part.ids.length, centroid, words);
    estimates[index] =
      (BAND_COSINES[band] ?? 0) * product +
      (BAND_SINES[band] ?? 0) * scale * (signs - product * (part.signDots[member] ?? 0));
  }
  return estimates;
}

/**
 * The residual code of `vector` listed under the unit centroid `centroid` (ADR 10, 2026-12-02, session 11): with `p`
 * the vector scaled to length 1, the sign bits of `p - <p, c> c` laid out as {@link binaryCodeOf}'s, then, as a
 * little-endian float32, their product with the unit residual (its L1 norm over its L2 norm; 0 for a vector along
 * the centroid).
 */
export function residualCode(vector: Float32Array, centroid: Float32Array): Buffer {
  const point = unit(vector);
  const dimensions = point.length;
  const codeBytes = Math.ceil(dimensions / 8);
  const code = Buffer.alloc(codeBytes + 4);
  const along = dot(point, centroid, 0);
  let absolute = 0;
  let squares = 0;
  for (let index = 0; index < dimensions; index++) {
    const value = (point[index] ?? 0) - along * (centroid[index] ?? 0);
    if (value > 0) code[index >> 3] = (code[index >> 3] ?? 0) | (1 << (index & 7));
    absolute += Math.abs(value);
    squares += value * value;
  }
  code.writeFloatLE(squares > 0 ? absolute / Math.sqrt(squares) : 0, codeBytes);
  return code;
}

/**
 * The product of `query` (a unit vector) with each of the `count` centroids in `values`: through `products` (the
 * same numbers, in WebAssembly) when given, else in JavaScript.
 */
export function centroidProducts(
  query: Float32Array,
  values: Float32Array,
  count: number,
  products: DotProducts | null,
): Float64Array {
  const similarities = new Float64Array(count);
  if (products) {
    products.query(query);
    for (let list = 0; list < count; list++) similarities[list] = products.dot(list);
    return similarities;
  }
  for (let list = 0; list < count; list++) similarities[list] = dot(query, values, list * query.length);
  return similarities;
}

/**
 * The `wanted` codes of `within` nearest by Hamming distance, the smaller id first at the same distance, in that
 * order: what sorting them all and keeping the first `wanted` gives, with only those sorted. The distance of the
 * `wanted`th is found by counting the codes at each distance (whole numbers, at most the code's bits).
 */
export function nearestWithin<T extends { id: number; distance: number }>(within: readonly T[], wanted: number): T[] {
  const byDistance = (a: T, b: T) => a.distance - b.distance || a.id - b.id;
  if (within.length <= wanted) return [...within].sort(byDistance);
  let largest = 0;
  for (const code of within) if (code.distance > largest) largest = code.distance;
  const counts = new Int32Array(largest + 1);
  for (const code of within) counts[code.distance] = (counts[code.distance] ?? 0) + 1;
  let last = 0;
  for (let seen = 0; last <= largest; last++) {
    seen += counts[last] ?? 0;
    if (seen >= wanted) break;
  }
  const kept: T[] = [];
  for (const code of within) if (code.distance <= last) kept.push(code);
  return kept.sort(byDistance).slice(0, wanted);
}

/** The dot product of `centroid` with the signs (+1 for a set bit, -1 for a clear one) of each of `members` codes. */
function signDotsOf(
  codes: Uint8Array,
  members: number,
  centroid: Float32Array,
  words: number,
  table: Float64Array = estimateTable(centroid, words * 4, scratchTable(words * 4, 1)),
): Float64Array {
  let total = 0;
  for (const value of centroid) total += value;
  const bytes = words * 4;
  const dots = new Float64Array(members);
  for (let member = 0, at = 0; member < dots.length; member++) {
    let sum = 0;
    for (let byte = 0, row = 0; byte < bytes; byte++, row += 256, at++) sum += table[row + (codes[at] ?? 0)] ?? 0;
    dots[member] = 2 * sum - total;
  }
  return dots;
}

/**
 * Adds to `found` the members of `part` (partition `partition`; of `ownerIds`, null: all) within Hamming distance
 * `bound` of `query`, with where each is (recall estimates their cosines from it; {@link near} keeps the id and
 * distance).
 */
function scan(
  part: SnapshotPart,
  partition: number,
  query: Uint32Array,
  ownerIds: readonly number[] | null,
  bound: number,
  found: Within[],
): void {
  const words = query.length;
  const { codes, ids, owners } = part;
  for (let member = 0; member < ids.length; member++) {
    if (ownerIds !== null && !ownerIds.includes(owners[member] ?? -1)) continue;
    const offset = member * words;
    let distance = 0;
    for (let word = 0; word < words && distance <= bound; word++) {
      let bits = ((codes[offset + word] ?? 0) ^ (query[word] ?? 0)) >>> 0;
      bits -= (bits >>> 1) & 0x55555555;
      bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
      bits = (bits + (bits >>> 4)) & 0x0f0f0f0f;
      distance += Math.imul(bits, 0x01010101) >>> 24;
    }
    if (distance <= bound) found.push({ id: ids[member] ?? 0, distance, part, member, partition });
  }
}

/** The Hamming distance between `query` and the code of `query.length` words at `offset` of `codes`. */
function hammingAt(codes: Uint32Array, offset: number, query: Uint32Array): number {
  let distance = 0;
  for (let word = 0; word < query.length; word++) {
    let bits = ((codes[offset + word] ?? 0) ^ (query[word] ?? 0)) >>> 0;
    bits -= (bits >>> 1) & 0x55555555;
    bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
    bits = (bits + (bits >>> 4)) & 0x0f0f0f0f;
    distance += Math.imul(bits, 0x01010101) >>> 24;
  }
  return distance;
}

/** The largest bound the WebAssembly scan takes (an unsigned 32-bit comparison; codes have far fewer bits). */
const ANY_DISTANCE = 0x7fffffff;

/**
 * {@link scan} through the WebAssembly scan (its query set to `query`): each next member of `part` within
 * Hamming distance `bound` of the owners `pair` ({@link ownerPair}), then its distance counted in JavaScript.
 */
function scanBy(
  codeScan: CodeScan,
  part: SnapshotPart,
  partition: number,
  query: Uint32Array,
  pair: [number, number],
  bound: number,
  found: Within[],
): void {
  const words = query.length;
  const { codes, ids } = part;
  const at = part.at ?? 0;
  const limit = Math.min(bound, ANY_DISTANCE);
  for (let from = 0; from < ids.length; ) {
    const next = codeScan.first(at + from, ids.length - from, limit, pair[0], pair[1]);
    if (next < 0) return;
    const member = from + next;
    found.push({ id: ids[member] ?? 0, distance: hammingAt(codes, member * words, query), part, member, partition });
    from = member + 1;
  }
}

/**
 * For each of `bytes` code bytes, the sums of the query's values at the bits set in each of the 256 byte values
 * (bit `i % 8` of byte `i / 8` is value `i`, as {@link binaryCodeOf} lays them out); bits past the query are 0.
 */
export function estimateTable(
  query: Float32Array,
  bytes: number,
  table: Float64Array = new Float64Array(bytes * 256),
): Float64Array {
  // Entry 0 of each row is never written (no bit set): 0 in a new table and in one used before.
  for (let byte = 0, row = 0; byte < bytes; byte++, row += 256) {
    // The values with bit `bit` set are those below it plus that bit's value.
    for (let bit = 0, span = 1; bit < 8; bit++, span <<= 1) {
      const value = query[byte * 8 + bit] ?? 0;
      for (let lower = 0; lower < span; lower++) table[row + span + lower] = (table[row + lower] ?? 0) + value;
    }
  }
  return table;
}

/**
 * The tables of the estimates, used again by the next search (ADR 10, 2026-12-02, session 10): 196 KiB a search at
 * 768 bits, allocated and zeroed at every search before (about 0.4 ms of CPU, for 25 us of sums); two tables a code
 * size, for the process.
 */
const scratchTables = new Map<number, Float64Array>();

/** The table for codes of `bytes`: `use` 0 for the query's, 1 for a centroid's (built while the query's is in use). */
function scratchTable(bytes: number, use: 0 | 1 = 0): Float64Array {
  const key = bytes * 2 + use;
  let table = scratchTables.get(key);
  if (!table) {
    table = new Float64Array(bytes * 256);
    scratchTables.set(key, table);
  }
  return table;
}

/** The `memory_vector_list_bits` table for vectors of `dimensions`, with its partition index. */
function createListBitsTable(database: Database.Database, dimensions: number): void {
  database.exec(`CREATE VIRTUAL TABLE memory_vector_list_bits USING vec0(
      memory_id INTEGER PRIMARY KEY,
      part INTEGER PARTITION KEY,
      bits bit[${Math.ceil(dimensions / 8) * 8}],
      owner_id INTEGER,
      chunk_size=${chunkSize(dimensions)}
    );
    CREATE INDEX memory_vector_list_bits_chunks_by_part ON memory_vector_list_bits_chunks (partition00);`);
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function binaryCodeOf(vector: Float32Array): Buffer {
  const code = Buffer.alloc(Math.ceil(vector.length / 8));
  for (let index = 0; index < vector.length; index++) {
    if ((vector[index] ?? 0) > 0) code[index >> 3] = (code[index >> 3] ?? 0) | (1 << (index & 7));
  }
  return code;
}

/** The dot product of `vector` with the `vector.length` values of `values` from `offset`, four sums at a time. */
/**
 * The band (of {@link BANDS}, {@link BAND} wide) a vector is listed in under `centroid`, computed as an insert
 * computes it; for tests that check a file's lists against its vectors.
 */
export function bandUnder(vector: Float32Array, centroid: Float32Array): number {
  const angle = Math.acos(Math.min(1, Math.max(-1, dot(unit(vector), centroid, 0))));
  return Math.min(BANDS - 1, Math.floor(angle / BAND));
}

function dot(vector: Float32Array, values: Float32Array, offset: number): number {
  const length = vector.length;
  let first = 0;
  let second = 0;
  let third = 0;
  let fourth = 0;
  let index = 0;
  for (; index + 3 < length; index += 4) {
    const at = offset + index;
    first += (vector[index] ?? 0) * (values[at] ?? 0);
    second += (vector[index + 1] ?? 0) * (values[at + 1] ?? 0);
    third += (vector[index + 2] ?? 0) * (values[at + 2] ?? 0);
    fourth += (vector[index + 3] ?? 0) * (values[at + 3] ?? 0);
  }
  for (; index < length; index++) first += (vector[index] ?? 0) * (values[offset + index] ?? 0);
  return first + second + third + fourth;
}

function unit(vector: Float32Array): Float32Array {
  const copy = Float32Array.from(vector);
  normalise(copy, 0, copy.length);
  return copy;
}

function normalise(values: Float32Array, offset: number, length: number): void {
  let sum = 0;
  for (let index = offset; index < offset + length; index++) sum += (values[index] ?? 0) ** 2;
  if (sum === 0) return;
  const scale = 1 / Math.sqrt(sum);
  for (let index = offset; index < offset + length; index++) values[index] = (values[index] ?? 0) * scale;
}

function floats(buffer: Buffer): Float32Array {
  return new Float32Array(Uint8Array.from(buffer).buffer);
}

function bytes(values: Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}
