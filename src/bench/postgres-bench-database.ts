import { createPgPoolDatabase, isPostgresUrl } from '../storage/postgres/postgres-database.js';
import { isPgliteUrl } from '../storage/postgres/postgres-pglite-database.js';

/** A database the bench created on a PostgreSQL server for one store size, and dropped after it. */
export interface PostgresBenchDatabase {
  url: string;
  /** The database's size on the server (`pg_database_size`), in bytes. */
  bytes(): Promise<number>;
  drop(): Promise<void>;
}

/** True for a `postgres://` URL: the bench measures mneme on a PostgreSQL server. */
export const isBenchServerUrl = isPostgresUrl;

/** True for a `pglite:` setting (any): the bench measures mneme on PGlite folders it makes in its own temporary folder. */
export const isBenchPgliteSetting = isPgliteUrl;

/**
 * Creates an empty database `name` on the server of `serverUrl` (its user needs the CREATEDB right),
 * so the bench never writes into a database it did not create.
 */
export async function createPostgresBenchDatabase(serverUrl: string, name: string): Promise<PostgresBenchDatabase> {
  const admin = createPgPoolDatabase(serverUrl, { max: 1 });
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.close();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async bytes() {
      const database = createPgPoolDatabase(url.toString(), { max: 1 });
      try {
        const { rows } = await database.query<{ bytes: number }>(
          'SELECT pg_database_size(current_database()) AS bytes',
        );
        return rows[0]?.bytes ?? 0;
      } finally {
        await database.close();
      }
    },
    async drop() {
      const database = createPgPoolDatabase(serverUrl, { max: 1 });
      try {
        await database.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await database.close();
      }
    },
  };
}
