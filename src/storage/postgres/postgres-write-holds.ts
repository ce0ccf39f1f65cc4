import { AsyncLocalStorage } from 'node:async_hooks';
import { ErrorCode, MnemeError } from '../../core/errors.js';
import { type PostgresDatabase, type PostgresQueryable, writePg } from './postgres-database.js';

/**
 * Write holds of one storage: a section of the caller's async context (`run`) may hold the write lock
 * in one open transaction (`hold`); until `release` commits or rolls it back, every statement made
 * within that context runs in that transaction, so its reads see what is committed and nothing else
 * commits before it. Extraction holds before the reads a step's writes are decided by (ADR 19).
 */
export interface PostgresWriteHolds {
  /** The database every store of the storage uses: a statement of a context that holds runs in its transaction. */
  readonly database: PostgresDatabase;
  /** Runs `work` as a section that may hold; when it ends, a hold is committed (or rolled back if it threw). Nested: joins. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Opens the section's transaction and takes the write lock in it (`writePg`), if the section holds none yet. */
  hold(doing: string): Promise<void>;
  /** Commits (`ok`) or rolls back the section's transaction, if it holds one: the write lock is given back. */
  release(ok: boolean): Promise<void>;
}

/** One section of the caller's context, and the transaction it holds. */
interface Section {
  transaction: PostgresQueryable | null;
  /** Ends the held transaction's work: committed when true, rolled back when false. */
  finish: ((ok: boolean) => void) | null;
  /** The held transaction's `writePg`: settled once it committed or rolled back. */
  done: Promise<void> | null;
}

/** Thrown inside a held transaction to roll it back (`release(false)`); never seen by a caller. */
const rollBack = new MnemeError(ErrorCode.StoreFailed, 'the held transaction was rolled back');

/**
 * The write holds of `raw`. Within a held transaction, `transaction` (a `writePg` of a store: the step's
 * write) is a savepoint of it, and `afterWrite` waits for the held commit, which reports every row.
 */
export function createPostgresWriteHolds(raw: PostgresDatabase): PostgresWriteHolds {
  const sections = new AsyncLocalStorage<Section>();
  let savepoints = 0;
  const held = () => sections.getStore()?.transaction ?? null;

  const database: PostgresDatabase = {
    description: raw.description,
    ...(raw.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: raw.busyTimeoutMs }),
    ...(raw.oneConnection ? { oneConnection: true } : {}),
    query: (sql, parameters) => (held() ?? raw).query(sql, parameters),
    exec: (sql) => (held() ?? raw).exec(sql),
    async transaction(work) {
      const transaction = held();
      if (!transaction) return raw.transaction(work);
      const name = `held_${++savepoints}`;
      await transaction.query(`SAVEPOINT ${name}`);
      try {
        const result = await work(transaction);
        await transaction.query(`RELEASE SAVEPOINT ${name}`);
        return result;
      } catch (error) {
        await transaction.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
        throw error;
      }
    },
    tryLock: (name) => raw.tryLock(name),
    ...(raw.afterWrite
      ? {
          afterWrite: (changed: number) =>
            held() ? Promise.resolve() : (raw.afterWrite?.(changed) ?? Promise.resolve()),
        }
      : {}),
    close: () => raw.close(),
  };

  async function release(ok: boolean): Promise<void> {
    const section = sections.getStore();
    if (!section?.transaction) return;
    const { finish, done } = section;
    section.transaction = null;
    section.finish = null;
    section.done = null;
    finish?.(ok);
    try {
      await done;
    } catch (error) {
      // Rolled back: as asked, or after the error the caller is already failing with.
      if (ok) throw error;
    }
  }

  return {
    database,
    run(work) {
      if (sections.getStore()) return work();
      const section: Section = { transaction: null, finish: null, done: null };
      return sections.run(section, async () => {
        let result: Awaited<ReturnType<typeof work>>;
        try {
          result = await work();
        } catch (error) {
          await release(false);
          throw error;
        }
        await release(true);
        return result;
      });
    },
    async hold(doing) {
      const section = sections.getStore();
      if (!section || section.transaction) return;
      const finished = new Promise<boolean>((resolve) => {
        section.finish = resolve;
      });
      const opened = new Promise<PostgresQueryable>((resolve, reject) => {
        section.done = writePg(raw, doing, async (transaction) => {
          resolve(transaction);
          if (!(await finished)) throw rollBack;
        });
        // Before the transaction is lent (the write lock's wait timed out, the server is away): the hold fails.
        section.done.catch(reject);
      });
      try {
        section.transaction = await opened;
      } catch (error) {
        section.finish = null;
        section.done = null;
        throw error;
      }
    },
    release,
  };
}
