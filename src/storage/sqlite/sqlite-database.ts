import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import { claimTakenOver, type HeldKey, keyToCount } from '../keyed-work.js';
import { createPrivateFile, makeFolders } from '../make-folders.js';
import { COPY_MARK, unfinishedCopy } from '../unfinished-copy.js';
import { migrateSqlite } from './sqlite-migrations.js';
import { readOnlyFiles } from './sqlite-read-only-files.js';

/** Milliseconds a write waits for another connection's lock when not told (`busyTimeoutMs`). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Bytes the -wal file is cut back to once a checkpoint has copied it all into the database (`journal_size_limit`):
 * SQLite reuses its log rather than shrinking it, so without a limit the file stays as large as the largest
 * transaction or the longest run without a complete checkpoint made it (an import, a purge's rebuild) for as long as
 * the process runs. 8 MiB is twice what the automatic checkpoint (every 1,000 pages of 4 KiB) lets the log reach in
 * steady work, so ordinary writes never cut and regrow it.
 */
export const WAL_SIZE_LIMIT_BYTES = 8 * 1024 * 1024;

export interface OpenSqliteOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /**
   * Milliseconds a write waits for another connection's lock before failing with STORE_BUSY (5000 by
   * default). Opening waits for it synchronously (only a migration takes the lock); after that the
   * connection never sleeps on a lock (`busy_timeout = 0`) and `createSqliteScheduler` waits
   * asynchronously instead.
   */
  busyTimeoutMs?: number;
  /** Stop migrating at this schema version (tests of migrations only). */
  migrateTo?: number;
  /** Stores with fewer vectors get no inverted lists (`LIST_MIN_VECTORS` by default; tests only). */
  vectorListMinVectors?: number;
  /** Lists a recall probes (`LIST_PROBES` by default; 0 scans the owner buckets; tests and measurements only). */
  vectorListProbes?: number;
  /**
   * Quiet full-text searches before the owner index is held in memory (`AUDIENCE_SNAPSHOT_AFTER` by default;
   * 0: at the first; negative: never; tests and measurements only).
   */
  textSnapshotAfter?: number;
  /** How long a named lock (`Storage.tryLock`) lasts unrenewed (`SQLITE_LOCK_TTL_MS` by default; tests only). */
  lockTtlMs?: number;
  /**
   * Refuse, before SQLite opens it, a file this process may not write (`readOnlyFiles`: its mode, or a read-only
   * mount), with STORE_FAILED saying which and what to do. SQLite would open it read-only without a word and refuse
   * every write; a service (`mneme serve`, `mcp`, `proxy`) asks for this so that it does not start on such a file.
   * Left out, such a file opens, and serves reads (`mneme search` on a read-only copy).
   */
  writable?: boolean;
  /**
   * Open the target of a `mneme copy` that has not ended (`COPY_MARK` in `service_state`): the copy's own opening
   * only. Left out, such a database is refused (`unfinishedCopy`).
   */
  copying?: boolean;
}

/**
 * Opens (creating when needed) a mneme SQLite database: sqlite-vec loaded, WAL (cut back to
 * `WAL_SIZE_LIMIT_BYTES` after a complete checkpoint), foreign keys on, synchronous FULL (an acknowledged write survives a power cut), schema migrated. The busy timeout
 * holds while opening only; the open connection fails at once with SQLITE_BUSY on a lock held
 * elsewhere, so that waiting for it never blocks the event loop (see `createSqliteScheduler`).
 */
export function openSqliteDatabase(options: OpenSqliteOptions): Database.Database {
  const inMemory = options.path === ':memory:';
  if (!inMemory) makeFolders(dirname(resolve(options.path)));
  if (!inMemory && options.writable === true) {
    const readOnly = readOnlyFiles(options.path);
    if (readOnly) {
      throw new MnemeError(
        ErrorCode.StoreFailed,
        `cannot open the database at ${options.path}: ${readOnly.reason}, and a service that would refuse every write does not start on it: ${readOnly.fix}${readOnly.mount ? '' : ' (commands that only read, such as mneme search, still open it)'}`,
      );
    }
  }
  // A new file is created only its owner's first: SQLite would make it (and its -wal and -shm) readable by everyone.
  if (!inMemory) createPrivateFile(options.path);
  let database: Database.Database;
  try {
    database = new Database(options.path);
  } catch (error) {
    throw (
      onReadOnlyMount(error, options.path) ??
      new MnemeError(ErrorCode.StoreFailed, `cannot open the database at ${options.path}: ${errorMessage(error)}`, {
        cause: error,
      })
    );
  }
  try {
    sqliteVec.load(database);
    database.pragma(`busy_timeout = ${options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS}`);
    refuseForeignDatabase(database, options.path);
    if (!inMemory) database.pragma('journal_mode = WAL');
    if (!inMemory) database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    database.pragma('synchronous = FULL');
    database.pragma('foreign_keys = ON');
    migrateSqlite(database, options.migrateTo);
    if (options.copying !== true && holdsCopyMark(database)) throw unfinishedCopy(options.path);
    database.pragma('busy_timeout = 0');
    if (!inMemory) recordOpenedFiles(database, resolve(options.path));
    return database;
  } catch (error) {
    database.close();
    throw onReadOnlyMount(error, options.path) ?? toMnemeError(error, `cannot open the database at ${options.path}`);
  }
}

/**
 * SQLite says only "unable to open database file" (SQLITE_CANTOPEN) for a database in WAL mode on a read-only mount
 * without its -shm, which it needs even to read and cannot create there: that case named, with what to do; else null.
 */
function onReadOnlyMount(error: unknown, path: string): MnemeError | null {
  if (sqliteCode(error) !== 'SQLITE_CANTOPEN' || path === ':memory:') return null;
  const readOnly = readOnlyFiles(path);
  if (!readOnly?.mount) return null;
  return new MnemeError(
    ErrorCode.StoreFailed,
    `cannot open the database at ${path}: ${readOnly.reason}, where SQLite cannot create the -shm file it needs even to read a database in WAL mode: ${readOnly.fix}`,
    { cause: error },
  );
}

/**
 * Refuses a file that holds tables but no mneme schema: another application's SQLite database, named by
 * mistake, is not taken for a new mneme database (migrated, its journal turned to WAL). Checked before
 * anything is written; a mneme file records its schema in the transaction of its first tables.
 */
function refuseForeignDatabase(database: Database.Database, path: string): void {
  const tables = database
    .prepare<[], { name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .all()
    .map((table) => table.name);
  if (tables.length === 0 || tables.includes('schema_migrations')) return;
  const named = tables.length > 3 ? `${tables.slice(0, 3).join(', ')}, ...` : tables.join(', ');
  throw new MnemeError(
    ErrorCode.StoreIncompatible,
    `cannot open the database at ${path}: the file is not a mneme database but the SQLite database of something else (tables ${named}); open another file, or a new one`,
  );
}

/** A file as it was when its database was opened: its path, and the device and inode that name it. */
interface OpenedFile {
  path: string;
  dev: number;
  ino: number;
}

/** The file, -wal and -shm of each open database on a file (`checkFilesInPlace`). */
const openedFiles = new WeakMap<Database.Database, readonly OpenedFile[]>();

function recordOpenedFiles(database: Database.Database, path: string): void {
  if (statSync(path, { throwIfNoEntry: false })?.isFile() !== true) return;
  const files = [path, `${path}-wal`, `${path}-shm`].flatMap((file) => {
    const found = statSync(file, { throwIfNoEntry: false });
    return found ? [{ path: file, dev: found.dev, ino: found.ino }] : [];
  });
  openedFiles.set(database, files);
}

/**
 * Throws STORE_FAILED when the database file, its -wal or its -shm is no longer at its path (removed, moved, or
 * replaced by another file) since the connection opened it: SQLite goes on writing into the files it holds open,
 * so a write committed now would be acknowledged and lost (in a file no other process opens, gone when this one
 * stops), and a second process would open a new -wal or -shm beside this one's and damage the file. Called inside
 * each write transaction before its COMMIT, so the write is rolled back. A path that cannot be looked at (a folder
 * made unreadable) says nothing: only a file known gone or replaced is refused.
 */
export function checkFilesInPlace(database: Database.Database): void {
  const moved = filesOutOfPlace(database);
  if (moved !== null) throw new MnemeError(ErrorCode.StoreFailed, moved);
}

/**
 * Null while the database file, its -wal and its -shm are the files the connection opened; else one line saying
 * which one was removed, moved or replaced and what to do (`checkFilesInPlace`). Three `stat` calls, no SQL, no
 * lock: cheap enough for a health probe polled every second.
 */
export function filesOutOfPlace(database: Database.Database): string | null {
  for (const file of openedFiles.get(database) ?? []) {
    let found: ReturnType<typeof statSync>;
    try {
      found = statSync(file.path, { throwIfNoEntry: false });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') continue;
      found = undefined;
    }
    if (found && found.dev === file.dev && found.ino === file.ino) continue;
    return `the database file ${file.path} was ${found ? 'replaced by another file' : 'removed or moved'} while this process had it open, so nothing more is written to it (what it wrote would be lost, or would damage the file another process opens there): put the file back, or restart mneme on the database as it is now`;
  }
  return null;
}

/**
 * A statement prepared on first use: for SQL that names a column or table of a later migration, so a
 * file opened at an older schema (`migrateTo`, in tests of migrations) can still be written by the
 * statements that existed then.
 */
export function preparedOnUse<Parameters extends unknown[] | object, Row = unknown>(
  database: Database.Database,
  sql: string,
): () => Database.Statement<Parameters, Row> {
  let statement: Database.Statement<Parameters, Row> | null = null;
  return () => {
    statement ??= database.prepare<Parameters, Row>(sql);
    return statement;
  };
}

/** Runs a read, wrapping a driver error once (`doing` says what was being done). */
export function readSqlite<T>(doing: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw toMnemeError(error, doing);
  }
}

/**
 * Runs `work` in one IMMEDIATE transaction (it takes the write lock at once), wrapping a driver error
 * once. A `deferred` write (data that can be rebuilt, see `WriteContext.deferred`) commits with
 * `synchronous = NORMAL`: no fsync of its own; in WAL mode it survives a process crash, and the next
 * durable commit's fsync makes it durable too, since the log is written in order.
 */
export function writeSqlite<T>(
  database: Database.Database,
  doing: string,
  work: () => T,
  options: { deferred?: boolean | undefined } = {},
): T {
  // Within a transaction already open (a batch of extraction steps), `work` is a savepoint of it,
  // committed with it; the safety level may not change there.
  const nested = database.inTransaction;
  const deferred = options.deferred === true && !nested;
  if (deferred) setSynchronous(database, 'NORMAL');
  // A savepoint is counted (and checked) by the transaction around it; a deferred write is data that can be rebuilt.
  const keyed = nested || options.deferred === true ? null : keyToCount();
  try {
    return transactionOf(database).immediate(() => {
      const count = keyed === null ? null : countKeyedWrite(database, keyed);
      const result = work();
      count?.();
      if (!nested) checkFilesInPlace(database);
      return result;
    }) as T;
  } catch (error) {
    throw toMnemeError(error, doing);
  } finally {
    if (deferred) setSynchronous(database, 'FULL');
  }
}

const keyedStatements = new WeakMap<
  Database.Database,
  { changes: Database.Statement<[], number>; count: Database.Statement<[string, string, number]> }
>();

/**
 * Called at the start of a durable write transaction of keyed work (`keyToCount`): returns what to call at its end,
 * which counts the transaction on the key's row when it changed rows (ADR 14, 2026-12-04), so that the count commits
 * with the work or not at all, and throws CONFLICT when the claim was taken over meanwhile (ADR 14, attack 25).
 */
export function countKeyedWrite(database: Database.Database, held: HeldKey): () => void {
  let statements = keyedStatements.get(database);
  if (!statements) {
    statements = {
      changes: database.prepare<[], number>('SELECT total_changes()').pluck(),
      count: database.prepare<[string, string, number]>(
        `UPDATE idempotency_keys SET committed = committed + 1
        WHERE principal = ? AND key = ? AND locked_until = ? AND status IS NULL`,
      ),
    };
    keyedStatements.set(database, statements);
  }
  const { changes, count } = statements;
  const before = changes.get();
  return () => {
    if (changes.get() === before) return;
    // Not counted: the claim is no longer this work's, and its writes roll back with the transaction.
    if (count.run(held.principal, held.key, held.lockedUntil).changes === 0) throw claimTakenOver(held);
  };
}

/**
 * Sets the connection's `synchronous` level. `exec` runs the pragma without the statement object
 * `database.pragma()` makes (and its rows), a few microseconds a call: a recall's touch sets it twice.
 * A prepared `PRAGMA synchronous` would not do: it takes effect when prepared, not when run.
 */
export function setSynchronous(database: Database.Database, level: 'NORMAL' | 'FULL'): void {
  database.exec(`PRAGMA synchronous = ${level}`);
}

/**
 * One transaction function a connection, running the work it is given: `database.transaction()`
 * makes four wrapped functions and their properties a call, for a transaction that is the same each
 * time (its `BEGIN`, `COMMIT` and `ROLLBACK` statements are the connection's, prepared once).
 */
const transactions = new WeakMap<Database.Database, Database.Transaction<(work: () => unknown) => unknown>>();

function transactionOf(database: Database.Database): Database.Transaction<(work: () => unknown) => unknown> {
  let transaction = transactions.get(database);
  if (!transaction) {
    transaction = database.transaction((work: () => unknown) => work());
    transactions.set(database, transaction);
  }
  return transaction;
}

/**
 * Runs a statement that always yields a row (an aggregate, or `... RETURNING` of a row known to
 * exist) and returns that row, typed by the statement.
 */
export function getRow<Parameters extends unknown[], Row>(
  statement: { source: string; get(...parameters: Parameters): Row | undefined },
  ...parameters: Parameters
): Row {
  const row = statement.get(...parameters);
  if (row === undefined) throw new MnemeError(ErrorCode.StoreFailed, `no row came back from: ${statement.source}`);
  return row;
}

/** The driver's result code of an error (`SQLITE_BUSY`, `SQLITE_READONLY_DIRECTORY`, ...), or ''. */
function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * True when the error says another connection holds the lock (SQLITE_BUSY and its extended codes),
 * either as the driver threw it or wrapped by `toMnemeError`: nothing was done, the same call may
 * succeed once the lock is free.
 */
export function isSqliteBusy(error: unknown): boolean {
  const cause = error instanceof MnemeError ? error.cause : error;
  return sqliteCode(cause).startsWith('SQLITE_BUSY');
}

/** Wraps a driver error once, keeping MnemeErrors as they are. */
export function toMnemeError(error: unknown, doing: string): MnemeError {
  if (error instanceof MnemeError) return error;
  const code = sqliteCode(error);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new MnemeError(ErrorCode.StoreBusy, `${doing}: the database is busy; try again shortly`, { cause: error });
  }
  // The disk is full (or the file reached its size limit): SQLite rolled the statement or the transaction back, so
  // nothing of it was written, and the same call succeeds once there is room. STORE_BUSY (HTTP 503 with Retry-After,
  // CLI exit 6) says so; STORE_FAILED would answer a 500 for a full disk. SQLITE_IOERR_SHMSIZE: SQLite could not grow
  // the -shm file (opening a file no other process has open, or a write-ahead log grown long), on a full disk.
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_SHMSIZE') {
    const what =
      code === 'SQLITE_FULL'
        ? 'the database or the disk holding it is full'
        : 'the -shm file next to the database cannot grow: the disk holding it is likely full';
    return new MnemeError(
      ErrorCode.StoreBusy,
      `${doing}: ${what} (${code}); nothing of what failed was written, and it goes through once there is room: free space on that disk, then try again`,
      { cause: error },
    );
  }
  if (code === 'SQLITE_READONLY_DIRECTORY') {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: the database is in WAL mode and its folder is read-only, so SQLite cannot create the -wal and -shm files it needs even to read: make the folder writable, or keep those files next to the database`,
      { cause: error },
    );
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: the database file is read-only (${code}); reads work, changes need write access`,
      { cause: error },
    );
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new MnemeError(ErrorCode.StoreFailed, `${doing}: the file is not a mneme database or is damaged`, {
      cause: error,
    });
  }
  return new MnemeError(ErrorCode.StoreFailed, `${doing}: ${errorMessage(error)}`, { cause: error });
}

/**
 * Runs `work` in one DEFERRED transaction (a read: every statement of it sees one state of the file), on
 * the connection's transaction function.
 */
export function readInTransaction<T>(database: Database.Database, work: () => T): T {
  return transactionOf(database).deferred(work) as T;
}

/** Whether the database holds the mark of a `mneme copy` into it that has not ended (`service_state` came with migration 7). */
function holdsCopyMark(database: Database.Database): boolean {
  const table = database
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'service_state'")
    .pluck()
    .get();
  return (
    table !== undefined &&
    database.prepare('SELECT 1 FROM service_state WHERE name = ?').pluck().get(COPY_MARK) !== undefined
  );
}
