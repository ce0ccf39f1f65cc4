import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { ErrorCode, MnemeError } from '../core/errors.js';
import {
  createPgPoolDatabase,
  isPostgresUrl,
  type PostgresDatabase,
  withPgErrors,
} from '../storage/postgres/postgres-database.js';
import { createPgliteDatabase, isPgliteUrl } from '../storage/postgres/postgres-pglite-database.js';
import { createPostgresStorage } from '../storage/postgres/postgres-storage.js';
import { createPostgresVectorIndex } from '../storage/postgres/postgres-vector-index.js';
import { openSqliteDatabase, toMnemeError } from '../storage/sqlite/sqlite-database.js';
import { WORD_BLOCKS_GENERATION } from '../storage/sqlite/sqlite-migrations.js';
import { createSqliteVectorIndex } from '../storage/sqlite/sqlite-vector-index.js';
import type { VectorIndexInfo } from '../storage/storage.js';
import { COPY_MARK } from '../storage/unfinished-copy.js';
import { describeDatabase, localDatabasePath } from './open-storage.js';

/** One table as `mneme copy` moves it: its columns, and how they differ between SQLite and PostgreSQL. */
interface TableSpec {
  name: string;
  columns: readonly string[];
  /** A numeric key the copy pages by and resumes after (the target's largest); none: copied whole, rows already there kept. */
  key?: string;
  /** Booleans in PostgreSQL, 0/1 in SQLite. */
  booleans?: readonly string[];
  /** `bigint[]` in PostgreSQL, JSON text in SQLite. */
  arrays?: readonly string[];
  /** Ids of rows of the same table that may come later: copied as null, then set once every row is there. */
  later?: string;
  /** Rows copied and counted (a condition both dialects read); left out: every row. Only for tables without `key`. */
  rows?: string;
  /** The columns that name a row, to say which one a copy stops at: `key`, else the first column, unless told. */
  identity?: readonly string[];
}

/** The condition of the rows of `table` a copy moves, as a WHERE clause ('' for every row). */
const whereOf = (table: TableSpec) => (table.rows ? ` WHERE ${table.rows}` : '');

/** The tables in an order that respects their references. Leases are not copied: they belong to running processes. */
const tables: readonly TableSpec[] = [
  // With the keys its name and id read as (ADR 40): a user without them is no namesake of anyone, so a copy that left
  // them out let every display name pass for any other user's unlabelled (attack29c). With the names the user left
  // (ADR 44): a copy without them left a memory made before a rename, written after the copy, calling its speaker by
  // a name anyone may take.
  {
    name: 'users',
    columns: ['id', 'display_name', 'name_key', 'id_key', 'created_at', 'updated_at', 'left_name', 'left_at'],
  },
  { name: 'projects', columns: ['id', 'name', 'managed', 'created_at'], booleans: ['managed'] },
  { name: 'topics', columns: ['id', 'project_id', 'title', 'created_at'] },
  { name: 'channels', columns: ['id', 'visibility', 'created_at', 'updated_at'] },
  { name: 'members', columns: ['kind', 'space_id', 'user_id', 'added_at'], identity: ['kind', 'space_id', 'user_id'] },
  // Not the SQLite store's word blocks' generation: it belongs to the blocks, which are not copied (each store
  // rebuilds its own), and a SQLite target has its own from its migration. Nor the mark of a copy under way.
  {
    name: 'service_state',
    columns: ['name', 'value'],
    rows: `name NOT IN ('${WORD_BLOCKS_GENERATION}', '${COPY_MARK}')`,
  },
  { name: 'policy_versions', columns: ['version', 'preset', 'overrides', 'change', 'actor', 'created_at'] },
  {
    name: 'api_keys',
    key: 'id',
    columns: ['id', 'prefix', 'hash', 'label', 'user_id', 'created_at', 'last_used_at', 'revoked_at'],
  },
  {
    name: 'maintenance_state',
    columns: ['channel_id', 'task', 'watermark', 'last_run_at', 'details'],
    identity: ['channel_id', 'task'],
  },
  {
    name: 'messages',
    key: 'id',
    columns: ['id', 'channel_id', 'sender_id', 'role', 'content', 'topic_id', 'reply_to', 'external_id', 'created_at'],
  },
  { name: 'ingest_files', columns: ['path', 'line', 'prefix_sha256', 'updated_at'] },
  {
    name: 'idempotency_keys',
    identity: ['principal', 'key'],
    columns: ['principal', 'key', 'request_sha256', 'status', 'body', 'locked_until', 'expires_at', 'committed'],
  },
  {
    name: 'memories',
    key: 'id',
    columns: [
      'id',
      'content',
      'category',
      'sector',
      'scope',
      'owner',
      'user_id',
      'channel_id',
      'project_id',
      'topic_id',
      'source',
      'importance',
      'strength',
      'salience',
      'access_count',
      'last_accessed',
      'pinned',
      'source_message_ids',
      'source_ids',
      'valid_from',
      'superseded_by',
      'archived_at',
      'faded_at',
      'created_at',
      'updated_at',
      'embedding_model',
      'decayed_at',
      'search_context',
      'search_context_message_id',
      'chunk_message_id',
      'chunk_index',
    ],
    booleans: ['pinned'],
    arrays: ['source_message_ids', 'source_ids'],
    later: 'superseded_by',
  },
  { name: 'memory_links', key: 'id', columns: ['id', 'source_id', 'target_id', 'type', 'strength', 'created_at'] },
  {
    name: 'memory_versions',
    key: 'id',
    columns: ['id', 'memory_id', 'version', 'action', 'actor', 'reason', 'changes', 'snapshot', 'created_at'],
  },
];

type Row = Record<string, unknown>;

/** The parameters PostgreSQL takes in one statement (its wire protocol counts them in 16 bits). */
const MAX_PARAMETERS = 65_535;

/** One side of a copy: rows in a neutral form (booleans, arrays of numbers), read and written in batches. */
interface CopyEnd {
  readonly description: string;
  count(table: TableSpec): Promise<number>;
  /** Rows with a key greater than `after` (all rows of a table without a key), by key, at most `limit`. */
  read(table: TableSpec, after: number, limit: number): Promise<Row[]>;
  /** The largest key stored (0 when empty). */
  largestKey(table: TableSpec): Promise<number>;
  /** Writes rows in one transaction; rows whose key is already there are kept as they are. */
  write(table: TableSpec, rows: readonly Row[]): Promise<void>;
  /** Sets `column` of rows by id. */
  setLater(table: TableSpec, column: string, values: ReadonlyArray<{ id: number; value: number }>): Promise<void>;
  vectorIndex(): Promise<VectorIndexInfo | null>;
  /** Points the vector index at `info` (emptying it if it held another model): before memories are copied. */
  configureVectors(info: VectorIndexInfo): Promise<void>;
  /** Ids and owners of memories with a vector, by id, after `after`. */
  vectorOwners(after: number, limit: number): Promise<Array<{ id: number; owner: string }>>;
  readVectors(ids: readonly number[]): Promise<Map<number, Float32Array>>;
  writeVectors(
    vectors: ReadonlyArray<{ id: number; owner: string; vector: Float32Array; model: string }>,
  ): Promise<void>;
  countVectors(): Promise<number>;
  /** The source digest a copy into this database recorded when it began (null: none is under way). */
  copyMark(): Promise<number | null>;
  /** Records (or, with null, removes) the digest of the source a copy into this database is copying. */
  setCopyMark(digest: number | null): Promise<void>;
  close(): Promise<void>;
}

function sqliteEnd(path: string, copying: boolean): CopyEnd {
  const database: Database.Database = openSqliteDatabase({ path, copying });
  const vectors = createSqliteVectorIndex(database);
  const guard = <T>(doing: string, work: () => T): T => {
    try {
      return work();
    } catch (error) {
      throw toMnemeError(error, doing);
    }
  };
  const fromSqlite = (table: TableSpec, row: Row): Row => {
    const out = { ...row };
    for (const column of table.booleans ?? []) out[column] = row[column] === 1;
    for (const column of table.arrays ?? []) out[column] = JSON.parse(String(row[column])) as number[];
    return out;
  };
  const toSqlite = (table: TableSpec, row: Row): Row => {
    const out = { ...row };
    for (const column of table.booleans ?? []) out[column] = row[column] ? 1 : 0;
    for (const column of table.arrays ?? []) out[column] = JSON.stringify(row[column]);
    if (table.later) out[table.later] = null;
    return out;
  };
  return {
    description: path,
    async count(table) {
      return guard(`counting ${table.name}`, () =>
        Number(
          database
            .prepare(`SELECT COUNT(*) AS count FROM ${table.name}${whereOf(table)}`)
            .pluck()
            .get(),
        ),
      );
    },
    async read(table, after, limit) {
      return guard(`reading ${table.name}`, () => {
        const columns = table.columns.join(', ');
        const rows = table.key
          ? database
              .prepare(`SELECT ${columns} FROM ${table.name} WHERE ${table.key} > ? ORDER BY ${table.key} LIMIT ?`)
              .all(after, limit)
          : after > 0
            ? []
            : database.prepare(`SELECT ${columns} FROM ${table.name}${whereOf(table)}`).all();
        return (rows as Row[]).map((row) => fromSqlite(table, row));
      });
    },
    async largestKey(table) {
      if (!table.key) return 0;
      return guard(`reading ${table.name}`, () =>
        Number(database.prepare(`SELECT COALESCE(MAX(${table.key}), 0) FROM ${table.name}`).pluck().get()),
      );
    },
    async write(table, rows) {
      guard(`writing ${table.name}`, () => {
        const statement = database.prepare(
          `INSERT OR IGNORE INTO ${table.name} (${table.columns.join(', ')}) VALUES (${table.columns
            .map((column) => `@${column}`)
            .join(', ')})`,
        );
        database.transaction(() => {
          for (const row of rows) statement.run(toSqlite(table, row));
        })();
      });
    },
    async setLater(table, column, values) {
      guard(`writing ${table.name}`, () => {
        const statement = database.prepare(`UPDATE ${table.name} SET ${column} = ? WHERE id = ?`);
        database.transaction(() => {
          for (const { id, value } of values) statement.run(value, id);
        })();
      });
    },
    async vectorIndex() {
      return vectors.info();
    },
    async configureVectors(info) {
      guard('configuring the vector index', () => vectors.configure(info));
    },
    async vectorOwners(after, limit) {
      const model = vectors.info()?.model;
      if (!model) return [];
      return guard('reading vectors', () =>
        database
          .prepare<[string, number, number], { id: number; owner: string }>(
            'SELECT id, owner FROM memories WHERE embedding_model = ? AND id > ? ORDER BY id LIMIT ?',
          )
          .all(model, after, limit),
      );
    },
    async readVectors(ids) {
      return guard('reading vectors', () => vectors.vectors(ids));
    },
    async writeVectors(entries) {
      guard('writing vectors', () =>
        database.transaction(() => {
          for (const entry of entries) vectors.put(entry.id, entry.owner, { model: entry.model, vector: entry.vector });
        })(),
      );
    },
    async countVectors() {
      return guard('counting vectors', () =>
        Number(database.prepare('SELECT COUNT(*) FROM vector_owners').pluck().get()) === 0
          ? 0
          : Number(database.prepare('SELECT COALESCE(SUM(vectors), 0) FROM vector_owners').pluck().get()),
      );
    },
    async copyMark() {
      return guard('reading the copy mark', () => {
        const value = database.prepare('SELECT value FROM service_state WHERE name = ?').pluck().get(COPY_MARK);
        return value === undefined ? null : Number(value);
      });
    },
    async setCopyMark(digest) {
      guard('writing the copy mark', () => {
        if (digest === null) database.prepare('DELETE FROM service_state WHERE name = ?').run(COPY_MARK);
        else
          database
            .prepare(
              'INSERT INTO service_state (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
            )
            .run(COPY_MARK, digest);
      });
    },
    async close() {
      database.close();
    },
  };
}

/**
 * INVALID_INPUT naming the first row of `rows` with a text holding the NUL character, which PostgreSQL's text cannot
 * store, or null. SQLite stored it before mneme refused it at every face (ADR 43); the copy stops at that row rather
 * than alter the text, and says how to carry it.
 */
function nulInRows(table: TableSpec, rows: readonly Row[]): MnemeError | null {
  for (const row of rows) {
    for (const column of table.columns) {
      const value = row[column];
      if (typeof value !== 'string' || !value.includes('\u0000')) continue;
      const identity = table.identity ?? [table.key ?? (table.columns[0] as string)];
      const named = identity.map((name) => `${name} ${JSON.stringify(row[name])}`).join(', ');
      return new MnemeError(
        ErrorCode.InvalidInput,
        `the ${table.name} row (${named}) holds the NUL character (\\u0000) in its ${column}, ` +
          'which PostgreSQL cannot store, and the copy does not alter text; nothing of this batch was written. ' +
          'Export the source (mneme export), take the NUL out of that line of the file, and import the file into PostgreSQL',
      );
    }
  }
  return null;
}

async function postgresEnd(path: string, copying: boolean): Promise<CopyEnd> {
  const open = async (): Promise<PostgresDatabase> =>
    isPgliteUrl(path)
      ? createPgliteDatabase(path)
      : createPgPoolDatabase(path, { serverOptions: process.env.PGOPTIONS });
  // Migrate (and enable pgvector) through the storage, then work on the tables directly.
  await (await createPostgresStorage({ database: await open(), copying })).close();
  const database = await open();
  const vectors = await createPostgresVectorIndex(database);
  const run = <T>(doing: string, work: () => Promise<T>) => withPgErrors(doing, work);
  const columnsOf = (table: TableSpec) => table.columns.join(', ');
  return {
    description: describeDatabase(path),
    async count(table) {
      return run(`counting ${table.name}`, async () => {
        const { rows } = await database.query<{ count: number }>(
          `SELECT count(*) AS count FROM ${table.name}${whereOf(table)}`,
        );
        return rows[0]?.count ?? 0;
      });
    },
    async read(table, after, limit) {
      return run(`reading ${table.name}`, async () => {
        if (!table.key) {
          return after > 0
            ? []
            : (await database.query<Row>(`SELECT ${columnsOf(table)} FROM ${table.name}${whereOf(table)}`)).rows;
        }
        const { rows } = await database.query<Row>(
          `SELECT ${columnsOf(table)} FROM ${table.name} WHERE ${table.key} > $1 ORDER BY ${table.key} LIMIT $2`,
          [after, limit],
        );
        return rows;
      });
    },
    async largestKey(table) {
      if (!table.key) return 0;
      return run(`reading ${table.name}`, async () => {
        const { rows } = await database.query<{ key: number }>(
          `SELECT COALESCE(MAX(${table.key}), 0) AS key FROM ${table.name}`,
        );
        return rows[0]?.key ?? 0;
      });
    },
    async write(table, rows) {
      if (rows.length === 0) return;
      const refused = nulInRows(table, rows);
      if (refused) throw refused;
      await run(`writing ${table.name}`, () =>
        database.transaction(async (q) => {
          // A table copied whole comes in one batch: one statement per chunk stays under 65,535 parameters.
          const perStatement = Math.floor(MAX_PARAMETERS / table.columns.length);
          for (let start = 0; start < rows.length; start += perStatement) {
            const parameters: unknown[] = [];
            const tuples = rows.slice(start, start + perStatement).map((row) => {
              const values = table.columns.map((column) => {
                parameters.push(column === table.later ? null : row[column]);
                return `$${parameters.length}`;
              });
              return `(${values.join(', ')})`;
            });
            await q.query(
              `INSERT INTO ${table.name} (${columnsOf(table)}) VALUES ${tuples.join(', ')} ON CONFLICT DO NOTHING`,
              parameters,
            );
          }
          if (table.key === 'id') {
            // Ids were given: the identity continues after them, and after those a purge deleted
            // (`service_state`'s `<table>_id_floor`, copied before this table), so none is given twice.
            await q.query(
              `SELECT setval(pg_get_serial_sequence('${table.name}', 'id'), GREATEST((SELECT MAX(id) FROM ${table.name}),
                (SELECT value FROM service_state WHERE name = '${table.name}_id_floor')))`,
            );
          }
        }),
      );
    },
    async setLater(table, column, values) {
      if (values.length === 0) return;
      await run(`writing ${table.name}`, () =>
        database.query(
          `UPDATE ${table.name} SET ${column} = later.value FROM unnest($1::bigint[], $2::bigint[]) AS later(id, value)
           WHERE ${table.name}.id = later.id`,
          [values.map((entry) => entry.id), values.map((entry) => entry.value)],
        ),
      );
    },
    async vectorIndex() {
      return vectors.info();
    },
    async configureVectors(info) {
      await run('configuring the vector index', () => vectors.configure(info));
    },
    async vectorOwners(after, limit) {
      return run('reading vectors', async () => {
        const { rows } = await database.query<{ id: number; owner: string }>(
          'SELECT memory_id AS id, owner FROM memory_vectors WHERE memory_id > $1 ORDER BY memory_id LIMIT $2',
          [after, limit],
        );
        return rows;
      });
    },
    async readVectors(ids) {
      return run('reading vectors', () => vectors.vectors(ids));
    },
    async writeVectors(entries) {
      await run('writing vectors', () =>
        database.transaction(async (q) => {
          for (const entry of entries) {
            await vectors.put(q, entry.id, entry.owner, { model: entry.model, vector: entry.vector });
          }
        }),
      );
    },
    async countVectors() {
      return run('counting vectors', async () => {
        const { rows } = await database.query<{ count: number }>('SELECT count(*) AS count FROM memory_vectors');
        return rows[0]?.count ?? 0;
      });
    },
    async copyMark() {
      return run('reading the copy mark', async () => {
        const { rows } = await database.query<{ value: number | string }>(
          'SELECT value FROM service_state WHERE name = $1',
          [COPY_MARK],
        );
        return rows[0] === undefined ? null : Number(rows[0].value);
      });
    },
    async setCopyMark(digest) {
      await run('writing the copy mark', () =>
        digest === null
          ? database.query('DELETE FROM service_state WHERE name = $1', [COPY_MARK])
          : database.query(
              'INSERT INTO service_state (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
              [COPY_MARK, digest],
            ),
      );
    },
    async close() {
      await database.close();
    },
  };
}

/** One end of a copy; `copying` for the target only, which may hold the mark of this copy begun before. */
async function openEnd(path: string, copying = false): Promise<CopyEnd> {
  return isPostgresUrl(path) || isPgliteUrl(path) ? postgresEnd(path, copying) : sqliteEnd(path, copying);
}

/** Where a copy is: the table it is copying, and its rows done of its total. */
export interface CopyProgress {
  table: string;
  done: number;
  total: number;
}

/** What a copy found at the end: each table's rows in the source and in the target (equal, or it failed). */
export interface CopyReport {
  from: string;
  to: string;
  tables: Array<{ table: string; source: number; target: number }>;
}

export interface CopyOptions {
  from: string;
  to: string;
  /** Rows per batch (500 by default). */
  batchSize?: number;
  onProgress?: (progress: CopyProgress) => void;
}

/**
 * Copies everything of one mneme database into another, SQLite to PostgreSQL and back (or any pair):
 * users, projects, topics, channels and members, the service state and API keys, the policy with its
 * history, watermarks, messages, memories with their versions and links, and the vectors of the
 * current model. Batches, each in one transaction; run again after an interruption, it resumes after
 * the rows already copied. The target must be new, or an interrupted copy of the same source, unchanged
 * since: the target keeps a digest of every row of the source from the start of the copy, and a resumed
 * copy whose source's digest differs now (a key revoked, a channel made private, a memory forgotten
 * meanwhile: rows it would not copy again) fails with STORE_FAILED, as does a source whose digest at the end of
 * the copy differs from the one at its start (a service still writing to it). Verified by counts at the end: a
 * table whose counts differ fails the copy with STORE_FAILED. A failed copy leaves its mark in the target.
 */
export async function copyDatabase(options: CopyOptions): Promise<CopyReport> {
  const batchSize = options.batchSize ?? 500;
  if (options.from === options.to) {
    throw new MnemeError(ErrorCode.InvalidInput, '--from and --to name the same database; give another --to');
  }
  const local = localDatabasePath(options.from);
  if (local !== null && !existsSync(local.path)) {
    throw new MnemeError(ErrorCode.NotFound, `there is no database at ${options.from}; check --from`);
  }
  const source = await openEnd(options.from);
  let target: CopyEnd | null = null;
  try {
    target = await openEnd(options.to, true);
    const mark = await target.copyMark();
    if (mark === null) await checkTargetNew(target);
    const digest = await sourceDigest(source, batchSize);
    if (mark !== null && mark !== digest) {
      throw new MnemeError(
        ErrorCode.StoreFailed,
        `${source.description} changed since the interrupted copy into ${target.description} began, and the rows it copied then are not copied again; copy into a new database (stop what writes to the source first)`,
      );
    }
    if (mark === null) await target.setCopyMark(digest);
    const info = await source.vectorIndex();
    if (info) await target.configureVectors(info);
    for (const table of tables) {
      const total = await source.count(table);
      let after = await target.largestKey(table);
      let done = table.key ? await countUpTo(target, table) : 0;
      options.onProgress?.({ table: table.name, done, total });
      for (;;) {
        const rows = await source.read(table, after, batchSize);
        if (rows.length === 0) break;
        await target.write(table, rows);
        done += rows.length;
        options.onProgress?.({ table: table.name, done: Math.min(done, total), total });
        if (!table.key) break;
        after = Number(rows.at(-1)?.[table.key]);
      }
      if (table.later) await copyLater(source, target, table, batchSize);
    }
    if (info) {
      const total = await countSourceVectors(source);
      let done = 0;
      let after = 0;
      options.onProgress?.({ table: 'vectors', done, total });
      for (;;) {
        const owners = await source.vectorOwners(after, batchSize);
        if (owners.length === 0) break;
        const found = await source.readVectors(owners.map((entry) => entry.id));
        await target.writeVectors(
          owners.flatMap((entry) => {
            const vector = found.get(entry.id);
            return vector ? [{ id: entry.id, owner: entry.owner, vector, model: info.model }] : [];
          }),
        );
        done += owners.length;
        after = owners.at(-1)?.id ?? after;
        options.onProgress?.({ table: 'vectors', done, total });
      }
    }
    // The rows copied before a write to the source committed are not read again: a source that changed while the
    // copy ran (a service still writing to it) would leave the target with rows it has since changed (a key
    // revoked, a member removed, a memory forgotten), counts equal. The mark stays: the target is no copy.
    if ((await sourceDigest(source, batchSize)) !== digest) {
      throw new MnemeError(
        ErrorCode.StoreFailed,
        `${source.description} changed while the copy into ${target.description} ran, and the rows copied before the change are not copied again; stop what writes to the source, then copy into a new database`,
      );
    }
    const report: CopyReport = { from: source.description, to: target.description, tables: [] };
    for (const table of tables) {
      report.tables.push({ table: table.name, source: await source.count(table), target: await target.count(table) });
    }
    if (info)
      report.tables.push({
        table: 'vectors',
        source: await source.countVectors(),
        target: await target.countVectors(),
      });
    const differing = report.tables.filter((entry) => entry.source !== entry.target);
    if (differing.length > 0) {
      throw new MnemeError(
        ErrorCode.StoreFailed,
        `the copy does not match its source: ${differing
          .map((entry) => `${entry.table} ${entry.target} of ${entry.source}`)
          .join(', ')}; was the target not empty, or did the source change meanwhile? Copy into a new database`,
      );
    }
    await target.setCopyMark(null);
    return report;
  } finally {
    await target?.close();
    await source.close();
  }
}

/**
 * A digest of every row of every table the copy moves (and of the vector index's model and count), as
 * a whole number below 2^52 (a `service_state` value): equal digests, unchanged source. Rows of a table
 * without a key are sorted, so the order a database returns them in does not matter.
 */
async function sourceDigest(source: CopyEnd, batchSize: number): Promise<number> {
  const hash = createHash('sha256');
  for (const table of tables) {
    hash.update(`\n${table.name}\n`);
    if (!table.key) {
      for (const line of (await source.read(table, 0, 0)).map(rowText).sort()) {
        hash.update(line).update('\n');
      }
      continue;
    }
    for (let after = 0; ; ) {
      const rows = await source.read(table, after, batchSize);
      if (rows.length === 0) break;
      for (const row of rows) hash.update(rowText(row)).update('\n');
      after = Number(rows.at(-1)?.[table.key]);
    }
  }
  hash.update(JSON.stringify([await source.vectorIndex(), await source.countVectors()]));
  return Number.parseInt(hash.digest('hex').slice(0, 13), 16);
}

/** A row as text for the digest (PostgreSQL may return a bigint as one). */
function rowText(row: Row): string {
  return JSON.stringify(row, (_, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

/** Rows of the target already copied (a resumed copy's starting count). */
async function countUpTo(target: CopyEnd, table: TableSpec): Promise<number> {
  return target.count(table);
}

async function countSourceVectors(source: CopyEnd): Promise<number> {
  return source.countVectors();
}

/** Sets the later column (a memory superseded by a later one) once every row is copied. */
async function copyLater(source: CopyEnd, target: CopyEnd, table: TableSpec, batchSize: number): Promise<void> {
  const column = table.later;
  if (!column || !table.key) return;
  let after = 0;
  for (;;) {
    const rows = await source.read(table, after, batchSize * 10);
    if (rows.length === 0) return;
    await target.setLater(
      table,
      column,
      rows.flatMap((row) =>
        row[column] === null || row[column] === undefined ? [] : [{ id: Number(row.id), value: Number(row[column]) }],
      ),
    );
    after = Number(rows.at(-1)?.[table.key]);
  }
}

/**
 * Refuses a target that is not new (and holds no unfinished copy): the copy keeps every row already there, so a
 * target's own policy, channel visibility or members would stand instead of the source's (a private channel public,
 * the preset another), its keys beside or instead of the source's, and the counts could still agree. Opening a
 * database writes none of these rows (the word blocks' generation is not copied).
 */
async function checkTargetNew(target: CopyEnd): Promise<void> {
  const held: string[] = [];
  for (const table of tables) {
    const count = await target.count(table);
    if (count > 0) held.push(`${table.name} ${count}`);
  }
  if (held.length > 0) {
    throw new MnemeError(
      ErrorCode.Conflict,
      `${target.description} already holds rows (${held.join(', ')}), which a copy would keep instead of the source's; copy into a new database`,
    );
  }
}
