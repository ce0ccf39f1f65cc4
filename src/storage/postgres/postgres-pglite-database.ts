import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import type { PostgresDatabase, PostgresQueryable, PostgresResult } from './postgres-database.js';

/** True for a `pglite:` path: PGlite (in-process PostgreSQL), `pglite:memory:` or `pglite:<folder>`. */
export function isPgliteUrl(path: string): boolean {
  return path.startsWith('pglite:');
}

const numbers = (value: string) =>
  value === '{}'
    ? []
    : value
        .slice(1, -1)
        .split(',')
        .map((item) => (item === 'NULL' ? null : Number(item)));

/**
 * Opens PGlite (PostgreSQL compiled to WebAssembly, in this process) with its pgvector extension:
 * `pglite:memory:` in memory, `pglite:<folder>` on disk. PGlite is a development dependency (tests,
 * benchmarks, evaluations); it is loaded only when asked for.
 */
export async function createPgliteDatabase(
  path: string,
  options: { vectors?: boolean } = {},
): Promise<PostgresDatabase> {
  const where = path.slice('pglite:'.length);
  let modules: [typeof import('@electric-sql/pglite'), typeof import('@electric-sql/pglite-pgvector')];
  try {
    modules = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  } catch (error) {
    throw new MnemeError(
      ErrorCode.ConfigInvalid,
      `a pglite: database needs @electric-sql/pglite and @electric-sql/pglite-pgvector installed (npm install them): ${errorMessage(error)}`,
    );
  }
  const [{ PGlite }, { vector }] = modules;
  const database = await PGlite.create({
    ...(where === 'memory:' || where === '' ? {} : { dataDir: where }),
    ...(options.vectors === false ? {} : { extensions: { vector } }),
    parsers: { 20: Number, 1700: Number, 1016: numbers },
  });
  const wrap =
    (target: { query: (sql: string, parameters?: unknown[]) => Promise<{ rows: unknown[]; affectedRows?: number }> }) =>
    async <Row>(sql: string, parameters: readonly unknown[] = []): Promise<PostgresResult<Row>> => {
      const result = await target.query(sql, [...parameters]);
      return { rows: result.rows as Row[], changed: result.affectedRows ?? 0 };
    };
  const held = new Set<string>();
  return {
    description: path,
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
      return async () => {
        held.delete(key);
      };
    },
    async close() {
      if (!database.closed) await database.close();
    },
  };
}
