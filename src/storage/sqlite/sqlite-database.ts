import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import { migrateSqlite } from './sqlite-migrations.js';

export interface OpenSqliteOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /** Milliseconds a write waits for another connection's lock before failing with STORE_BUSY. */
  busyTimeoutMs?: number;
  /** Stop migrating at this schema version (tests of migrations only). */
  migrateTo?: number;
}

/**
 * Opens (creating when needed) a mneme SQLite database: sqlite-vec loaded, WAL, a busy timeout,
 * foreign keys on, synchronous FULL (an acknowledged write survives a power cut), schema migrated.
 */
export function openSqliteDatabase(options: OpenSqliteOptions): Database.Database {
  const inMemory = options.path === ':memory:';
  if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
  let database: Database.Database;
  try {
    database = new Database(options.path);
  } catch (error) {
    throw new MnemeError(ErrorCode.StoreFailed, `cannot open the database at ${options.path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  try {
    sqliteVec.load(database);
    database.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (!inMemory) database.pragma('journal_mode = WAL');
    database.pragma('synchronous = FULL');
    database.pragma('foreign_keys = ON');
    migrateSqlite(database, options.migrateTo);
    return database;
  } catch (error) {
    database.close();
    throw toMnemeError(error, `cannot open the database at ${options.path}`);
  }
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
  if (options.deferred) database.pragma('synchronous = NORMAL');
  try {
    return database.transaction(work).immediate();
  } catch (error) {
    throw toMnemeError(error, doing);
  } finally {
    if (options.deferred) database.pragma('synchronous = FULL');
  }
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

/** Wraps a driver error once, keeping MnemeErrors as they are. */
export function toMnemeError(error: unknown, doing: string): MnemeError {
  if (error instanceof MnemeError) return error;
  const code = (error as { code?: unknown }).code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new MnemeError(ErrorCode.StoreBusy, `${doing}: the database is busy; try again shortly`, { cause: error });
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new MnemeError(ErrorCode.StoreFailed, `${doing}: the file is not a mneme database or is damaged`, {
      cause: error,
    });
  }
  return new MnemeError(ErrorCode.StoreFailed, `${doing}: ${errorMessage(error)}`, { cause: error });
}
