import type { PostgresDatabase } from './postgres-database.js';
import { createPostgresStorage, type PostgresStorage, type PostgresStorageOptions } from './postgres-storage.js';

/**
 * Opens storages on one shared test database, each on an empty schema: `public` is dropped and made
 * again first (much faster than a new PGlite or a new server database per test). The storage leaves
 * the database open when closed.
 */
export function freshPostgresStorage(
  database: () => PostgresDatabase,
  options: Omit<PostgresStorageOptions, 'database' | 'ownsDatabase'> = {},
): () => Promise<PostgresStorage> {
  return async () => {
    const shared = database();
    await shared.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    return createPostgresStorage({ ...options, database: shared, ownsDatabase: false });
  };
}
