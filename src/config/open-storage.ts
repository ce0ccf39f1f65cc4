import { createPgPoolDatabase, describePostgresUrl, isPostgresUrl } from '../storage/postgres/postgres-database.js';
import { createPgliteDatabase, isPgliteUrl, pgliteFolder } from '../storage/postgres/postgres-pglite-database.js';
import { createPostgresStorage } from '../storage/postgres/postgres-storage.js';
import { PGLITE_EXACT_SCAN_LIMIT } from '../storage/postgres/postgres-vector-index.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../storage/storage.js';

/** How a database setting is opened: everything but the path is optional. */
export interface OpenStorageOptions {
  /**
   * A SQLite file or `:memory:`; `postgres://user:password@host:5432/db` (PostgreSQL, with pgvector
   * when the server has it); or `pglite:memory:` / `pglite:<folder>` (PGlite, in-process PostgreSQL,
   * when @electric-sql/pglite is installed).
   */
  path: string;
  /** Milliseconds a write waits for another process's lock (SQLite's busy timeout; PostgreSQL's lock_timeout of a write). */
  busyTimeoutMs?: number;
  /**
   * Refuse a SQLite file this process may not write (its mode, or a read-only mount) at open, rather than open it
   * for reads with every write refused (`OpenSqliteOptions.writable`). PostgreSQL and PGlite: no check.
   */
  writable?: boolean;
}

/** True when the database setting names a server or PGlite rather than a SQLite file. */
export function isDatabaseUrl(path: string): boolean {
  return isPostgresUrl(path) || isPgliteUrl(path);
}

/**
 * The local place a database setting keeps its data in, that a command may check exists before opening
 * it: the file of a SQLite path, the folder of `pglite:<folder>`; null for `:memory:`, `pglite:memory:`
 * and a server URL, which are always there.
 */
export function localDatabasePath(path: string): { path: string; kind: 'file' | 'folder' } | null {
  if (path === ':memory:' || isPostgresUrl(path)) return null;
  if (!isPgliteUrl(path)) return { path, kind: 'file' };
  const folder = pgliteFolder(path);
  return folder === null ? null : { path: folder, kind: 'folder' };
}

/** The database setting as it may be printed: a URL's password masked. */
export function describeDatabase(path: string): string {
  return isPostgresUrl(path) ? describePostgresUrl(path) : path;
}

/** Opens the storage a database setting names. The only place that picks a storage adapter. */
export async function openStorage(options: OpenStorageOptions): Promise<Storage> {
  const { path } = options;
  if (isPostgresUrl(path)) {
    const { busyTimeoutMs } = options;
    return createPostgresStorage({
      database: createPgPoolDatabase(path, {
        ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }),
        serverOptions: process.env.PGOPTIONS,
      }),
    });
  }
  if (isPgliteUrl(path)) {
    const database = await createPgliteDatabase(path);
    return createPostgresStorage({ database, exactScanLimit: PGLITE_EXACT_SCAN_LIMIT });
  }
  return createSqliteStorage({
    path,
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    ...(options.writable === undefined ? {} : { writable: options.writable }),
  });
}
