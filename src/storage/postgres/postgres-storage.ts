import type { Storage } from '../storage.js';
import { COPY_MARK, unfinishedCopy } from '../unfinished-copy.js';
import { createPostgresApiKeyStore } from './postgres-api-key-store.js';
import { type PostgresDatabase, toMnemeErrorPg, withPgErrors } from './postgres-database.js';
import { createPostgresDirectoryStore } from './postgres-directory-store.js';
import { createPostgresExtractionStore } from './postgres-extraction-store.js';
import { createPostgresIdempotencyStore } from './postgres-idempotency-store.js';
import { createPostgresLinkStore } from './postgres-link-store.js';
import { createPostgresMaintenanceStateStore } from './postgres-maintenance-state-store.js';
import { createPostgresMaintenanceStore } from './postgres-maintenance-store.js';
import { createPostgresMembershipStore } from './postgres-membership-store.js';
import { createPostgresMemoryStore } from './postgres-memory-store.js';
import { createPostgresMessageStore } from './postgres-message-store.js';
import { migratePostgres } from './postgres-migrations.js';
import { createPostgresPolicyStore } from './postgres-policy-store.js';
import { createPostgresTransferStore } from './postgres-transfer-store.js';
import { createPostgresVectorBackfillStore } from './postgres-vector-backfill-store.js';
import { createPostgresVectorIndex, type PostgresVectorSupport } from './postgres-vector-index.js';
import { createPostgresWriteHolds } from './postgres-write-holds.js';

export interface PostgresStorageOptions {
  /** The database: `createPgPoolDatabase(url)` or `createPgliteDatabase(path)`. */
  database: PostgresDatabase;
  /** Search vectors with pgvector when the server has it (true by default); false: lexical only. */
  vectors?: boolean;
  /** A scope of at most this many vectors is ranked exactly rather than through the HNSW graph (10,000). */
  exactScanLimit?: number;
  /** Close `database` with the storage (true by default). */
  ownsDatabase?: boolean;
  /** Migrate only up to this schema version (tests that build a database as an older mneme left it). */
  migrateTo?: number;
  /**
   * Open the target of a `mneme copy` that has not ended (`COPY_MARK` in `service_state`): the copy's own opening
   * only. Left out, such a database is refused (`unfinishedCopy`).
   */
  copying?: boolean;
}

/** A PostgreSQL storage, with what it found out about vector search on its server (pgvector's version too). */
export interface PostgresStorage extends Storage {
  readonly vectorSearch: PostgresVectorSupport;
}

/**
 * Opens mneme's storage on a PostgreSQL database (a server through `pg`, or PGlite): migrates the
 * schema (refusing one written by a newer mneme), enables pgvector when the server has it, and returns
 * the stores. Several processes may open one database: writes take a transaction-level advisory lock
 * (`writePg`), extraction runs under leases, and everything else (keys, watermarks, the policy) is rows.
 */
export async function createPostgresStorage(options: PostgresStorageOptions): Promise<PostgresStorage> {
  // Every store's statements go through the holds: within an extraction step that holds the write lock,
  // they run in its transaction.
  const holds = createPostgresWriteHolds(options.database);
  const { database } = holds;
  try {
    await withPgErrors(`opening the database at ${database.description}`, () =>
      migratePostgres(database, options.migrateTo),
    );
    if (options.copying !== true) {
      const { rows } = await withPgErrors(`opening the database at ${database.description}`, () =>
        database.query('SELECT 1 FROM service_state WHERE name = $1', [COPY_MARK]),
      );
      if (rows.length > 0) throw unfinishedCopy(database.description);
    }
    const vectors = await withPgErrors(`opening the vector index at ${database.description}`, () =>
      createPostgresVectorIndex(database, {
        ...(options.vectors === undefined ? {} : { vectors: options.vectors }),
        ...(options.exactScanLimit === undefined ? {} : { exactScanLimit: options.exactScanLimit }),
      }),
    );
    const textSearchLimit = await withPgErrors(`opening the database at ${database.description}`, () =>
      textSearchLimitOf(database),
    );
    let isOpen = true;
    return {
      vectorSearch: vectors.support,
      textSearchLimit,
      transfer: createPostgresTransferStore(database),
      memories: createPostgresMemoryStore(database, vectors),
      links: createPostgresLinkStore(database),
      apiKeys: createPostgresApiKeyStore(database),
      directory: createPostgresDirectoryStore(database),
      memberships: createPostgresMembershipStore(database),
      messages: createPostgresMessageStore(database, vectors),
      maintenanceState: createPostgresMaintenanceStateStore(database),
      extraction: createPostgresExtractionStore(database, vectors, holds),
      maintenance: createPostgresMaintenanceStore(database, vectors),
      vectorBackfill: createPostgresVectorBackfillStore(database, vectors),
      policy: createPostgresPolicyStore(database),
      idempotency: createPostgresIdempotencyStore(database),
      tryLock: (name) => withPgErrors(`taking the lock ${name}`, () => database.tryLock(name)),
      // A server away answers each call STORE_BUSY (503 with Retry-After) and mends itself once it is back; a health
      // probe sends no query, so it never waits on a connection.
      health: () => ({ ok: true, reason: null }),
      async vectorIndex() {
        return vectors.info();
      },
      async configureVectors(info) {
        try {
          return await vectors.configure(info);
        } catch (error) {
          throw toMnemeErrorPg(error, 'configuring the vector index');
        }
      },
      async close() {
        if (!isOpen) return;
        isOpen = false;
        if (options.ownsDatabase !== false) await database.close();
      },
    };
  } catch (error) {
    if (options.ownsDatabase !== false) await database.close().catch(() => {});
    throw error;
  }
}

/**
 * Null when the database's full text folds letters outside ASCII to lower case, as SQLite's does; else why not and
 * what to do (ADR 49). PostgreSQL's word parser lowers letters by the database's `LC_CTYPE`: under `C` (or `POSIX`),
 * `Ελένη`, `Иван` or `École` stay capitalised in the index, and a search (whose words are lowered) never finds them.
 * The index is a generated column over that parser, so nothing but the database's `LC_CTYPE` changes it.
 */
async function textSearchLimitOf(database: PostgresDatabase): Promise<string | null> {
  const { rows } = await database.query<{ folds: boolean; ctype: string }>(
    `SELECT to_tsvector('simple', 'ÉΣЖ') = to_tsvector('simple', 'éσж') AS folds,
       (SELECT datctype FROM pg_database WHERE datname = current_database()) AS ctype`,
  );
  const { folds = true, ctype = 'unknown' } = rows[0] ?? {};
  if (folds) return null;
  return `the database's character classification (LC_CTYPE ${ctype}) lowers no letter outside ASCII, so full-text search finds no word written with a capital one (Ελένη, Иван, École, Über): recall finds those memories by their vectors alone, where the server has pgvector. Create a database with a UTF-8 LC_CTYPE (CREATE DATABASE ... TEMPLATE template0 LC_CTYPE 'C.UTF-8', or en_US.UTF-8) and copy this one into it (mneme copy)`;
}
