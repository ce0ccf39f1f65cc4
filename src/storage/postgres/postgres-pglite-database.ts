import { readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import { makeFolders } from '../make-folders.js';
import { isSqliteBusy } from '../sqlite/sqlite-database.js';
import type { PostgresDatabase, PostgresQueryable, PostgresResult } from './postgres-database.js';

/** True for a `pglite:` path: PGlite (in-process PostgreSQL), `pglite:memory:` or `pglite:<folder>`. */
export function isPgliteUrl(path: string): boolean {
  return path.startsWith('pglite:');
}

/** The folder a `pglite:<folder>` path names; null for `pglite:memory:` (or `pglite:`), which is in memory. */
export function pgliteFolder(path: string): string | null {
  const where = path.slice('pglite:'.length);
  return where === 'memory:' || where === '' ? null : where;
}

const numbers = (value: string) =>
  value === '{}'
    ? []
    : value
        .slice(1, -1)
        .split(',')
        .map((item) => (item === 'NULL' ? null : Number(item)));

type PgliteModules = [typeof import('@electric-sql/pglite'), typeof import('@electric-sql/pglite-pgvector')];
type Pglite = InstanceType<PgliteModules[0]['PGlite']>;

/** A PGlite folder open in this process: every `createPgliteDatabase` of it shares it until the last closes. */
interface OpenFolder {
  database: Promise<Pglite>;
  /** The named locks of this process (`tryLock`): one PGlite is one session. */
  held: Set<string>;
  users: number;
  /** When to analyze it next (see `analyzeWhenDue`). */
  statistics: Statistics;
  /** Gives a folder's claim back (`claimFolder`); none in memory. */
  giveBack?: () => void;
}

/** Rows changed since PGlite last analyzed a folder, and how many rows it held then (null: not read yet). */
interface Statistics {
  changed: number;
  rows: number | null;
}

/** Autovacuum's defaults: analyze after 50 changed rows plus 10% of the rows analyzed last time. */
const ANALYZE_THRESHOLD = 50;
const ANALYZE_SCALE_FACTOR = 0.1;

/** The user's tables (those of the current schema), and their rows as of their last ANALYZE (0 for one never analyzed). */
async function userTables(database: Pglite): Promise<{ names: string[]; rows: number }> {
  const { rows } = await database.query<{ name: string; rows: number }>(
    `SELECT quote_ident(c.relname) AS name, GREATEST(c.reltuples, 0) AS rows FROM pg_class c
     WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::text::regnamespace`,
  );
  return { names: rows.map((row) => row.name), rows: rows.reduce((sum, row) => sum + Number(row.rows), 0) };
}

/**
 * PGlite runs no autovacuum, so nothing would ever analyze its tables: its planner would take every
 * table for nearly empty and scan it (ranking every vector instead of walking the HNSW graph, counting
 * a word's memories row by row instead of through the GIN index), which made a maintenance cycle over
 * 10,000 memories take 40 minutes. So it analyzes the user's tables (not the catalogs) as autovacuum
 * would: once the rows written since the last ANALYZE pass 50 plus 10% of the rows it counted then.
 */
async function analyzeWhenDue(database: Pglite, statistics: Statistics, changedRows: number): Promise<void> {
  statistics.changed += changedRows;
  statistics.rows ??= (await userTables(database)).rows;
  if (statistics.changed < ANALYZE_THRESHOLD + ANALYZE_SCALE_FACTOR * statistics.rows) return;
  statistics.changed = 0;
  const { names } = await userTables(database);
  if (names.length > 0) await database.exec(`ANALYZE ${names.join(', ')}`);
  statistics.rows = (await userTables(database)).rows;
}

const openFolders = new Map<string, OpenFolder>();

/** The file in a PGlite folder naming the process that has it open (its pid), for the message of a refusal. */
export const PGLITE_OWNER_FILE = 'mneme-pglite.pid';

/** The SQLite file in a PGlite folder whose exclusive lock the process that has the folder open holds. */
export const PGLITE_LOCK_FILE = 'mneme-pglite.lock';

/** The pid a folder's owner file names, or null (no file, or not a pid). */
function ownerOf(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Claims a PGlite folder for this process, or refuses it (STORE_BUSY) while another process (or another open of this
 * process through another path) has it. PGlite is PostgreSQL in one process, with no postmaster to share a folder: a
 * second process opening it works on its own copy of the pages, and whichever closes last overwrites what the other
 * wrote, after both had acknowledged their writes. The claim is an exclusive lock on a SQLite file in the folder, held
 * while the folder is open: the system releases it when the process ends, however it ends (kill -9 too), so there is
 * no stale claim to take over, and two processes starting at once cannot both take one over. The owner file only
 * names the process for the refusal's message. Returns what gives the folder back.
 */
function claimFolder(folder: string, path: string): () => void {
  let lock: Database.Database;
  try {
    lock = new Database(join(folder, PGLITE_LOCK_FILE), { timeout: 0 });
  } catch (error) {
    throw new MnemeError(ErrorCode.StoreFailed, `cannot open ${path}: ${errorMessage(error)}`, { cause: error });
  }
  const file = join(folder, PGLITE_OWNER_FILE);
  try {
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if (!isSqliteBusy(error)) {
      throw new MnemeError(ErrorCode.StoreFailed, `cannot open ${path}: ${errorMessage(error)}`, { cause: error });
    }
    const owner = ownerOf(file);
    if (owner === process.pid) {
      // Only while this process closes the folder (its last user gone, the lock not yet given back).
      throw new MnemeError(ErrorCode.StoreBusy, `${path} is being closed in this process; open it again once it is`);
    }
    throw new MnemeError(
      ErrorCode.StoreBusy,
      `${path} is open in another process${owner === null ? '' : ` (pid ${owner})`}: a PGlite folder serves one process at a time, and a second one would lose writes; stop that process first, or use a PostgreSQL server (postgres://...) for several processes`,
    );
  }
  try {
    writeFileSync(file, `${process.pid}\n`);
  } catch (error) {
    lock.close();
    throw new MnemeError(ErrorCode.StoreFailed, `cannot open ${path}: ${errorMessage(error)}`, { cause: error });
  }
  return () => {
    if (ownerOf(file) === process.pid) rmSync(file, { force: true });
    lock.close();
  };
}

/** The real path of a PGlite folder (its symbolic links followed), made first when it does not exist. */
function realFolder(where: string): string {
  makeFolders(where);
  try {
    return realpathSync(where);
  } catch (error) {
    throw new MnemeError(ErrorCode.StoreFailed, `cannot open the folder ${where}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

async function startPglite(where: string | null, vectors: boolean): Promise<Pglite> {
  let modules: PgliteModules;
  try {
    modules = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  } catch (error) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `a pglite: database needs @electric-sql/pglite and @electric-sql/pglite-pgvector installed (npm install them): ${errorMessage(error)}`,
    );
  }
  const [{ PGlite }, { vector }] = modules;
  return PGlite.create({
    ...(where === null ? {} : { dataDir: where }),
    ...(vectors ? { extensions: { vector } } : {}),
    parsers: { 20: Number, 1700: Number, 1016: numbers },
  });
}

/**
 * Opens PGlite (PostgreSQL compiled to WebAssembly, in this process) with its pgvector extension:
 * `pglite:memory:` in memory (a new database each time), `pglite:<folder>` on disk. A folder is one
 * process's database: opened again in the same process while open (two engines, or a store and its
 * copy), it is the same PGlite, closed when the last of them closes (the first open's extensions
 * hold). PGlite is a development dependency (tests, benchmarks, evaluations); it is loaded only when
 * asked for.
 */
export async function createPgliteDatabase(
  path: string,
  options: { vectors?: boolean } = {},
): Promise<PostgresDatabase> {
  const where = pgliteFolder(path);
  const vectors = options.vectors !== false;
  let folder: OpenFolder;
  let release: () => Promise<void>;
  if (where === null) {
    folder = {
      database: startPglite(null, vectors),
      held: new Set(),
      users: 1,
      statistics: { changed: 0, rows: null },
    };
    release = async () => {
      const database = await folder.database;
      if (!database.closed) await database.close();
    };
  } else {
    // The folder's real path: PGlite cannot open one through a symbolic link, and two paths to one folder are one
    // PGlite in this process.
    const key = realFolder(where);
    const open = openFolders.get(key);
    if (open) {
      open.users++;
      folder = open;
    } else {
      const giveBack = claimFolder(key, path);
      folder = {
        database: startPglite(key, vectors),
        held: new Set(),
        users: 1,
        statistics: { changed: 0, rows: null },
        giveBack,
      };
      openFolders.set(key, folder);
      folder.database.catch(() => {
        openFolders.delete(key);
        giveBack();
      });
    }
    release = async () => {
      folder.users--;
      if (folder.users > 0) return;
      openFolders.delete(key);
      try {
        const database = await folder.database;
        if (!database.closed) await database.close();
      } finally {
        folder.giveBack?.();
      }
    };
  }
  let database: Pglite;
  try {
    database = await folder.database;
  } catch (error) {
    folder.users--;
    throw error;
  }
  const wrap =
    (target: { query: (sql: string, parameters?: unknown[]) => Promise<{ rows: unknown[]; affectedRows?: number }> }) =>
    async <Row>(sql: string, parameters: readonly unknown[] = []): Promise<PostgresResult<Row>> => {
      const result = await target.query(sql, [...parameters]);
      return { rows: result.rows as Row[], changed: result.affectedRows ?? 0 };
    };
  const { held, statistics } = folder;
  let closed = false;
  return {
    description: path,
    oneConnection: true,
    query: wrap(database),
    async exec(sql) {
      await database.exec(sql);
    },
    async transaction(work) {
      return database.transaction(async (transaction) => {
        const queryable: PostgresQueryable = {
          query: wrap(transaction),
          async exec(sql) {
            await transaction.exec(sql);
          },
        };
        return work(queryable);
      });
    },
    // One process, one session: the lock is this process's to share out.
    async tryLock(key) {
      if (held.has(key)) return null;
      held.add(key);
      let released = false;
      return {
        async release() {
          if (released) return;
          released = true;
          held.delete(key);
        },
        confirm: async () => !released,
      };
    },
    afterWrite: (changedRows) => analyzeWhenDue(database, statistics, changedRows),
    async close() {
      if (closed) return;
      closed = true;
      await release();
    },
  };
}
