import pg from 'pg';
import { ErrorCode, errorMessage, MnemeError } from '../../core/errors.js';
import { claimTakenOver, keyToCount } from '../keyed-work.js';
import type { HeldLock } from '../storage.js';

/** The rows of one statement. */
export interface PostgresResult<Row> {
  rows: Row[];
  /** Rows an INSERT, UPDATE or DELETE changed. */
  changed: number;
}

/** Runs one statement with `$1`-style parameters: a pool, one of its connections, or PGlite. */
export interface PostgresQueryable {
  query<Row = Record<string, unknown>>(sql: string, parameters?: readonly unknown[]): Promise<PostgresResult<Row>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * One PostgreSQL database as the adapter uses it: statements on any connection, transactions on one,
 * session-level advisory locks (held on one connection until released), and closing. `pg.Pool` and
 * PGlite both fit behind it (see `createPgPoolDatabase`, `createPgliteDatabase`).
 */
export interface PostgresDatabase extends PostgresQueryable {
  /** Where it is, without a password, for messages. */
  readonly description: string;
  /** Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (transaction: PostgresQueryable) => Promise<T>): Promise<T>;
  /**
   * Takes the advisory lock named `name` for this process if no other session holds it
   * (`pg_try_advisory_lock`), on a connection kept for it until it is released (or the process dies and
   * its session ends; `confirm` is false once that connection failed). Null when another session holds it.
   */
  tryLock(name: string): Promise<HeldLock | null>;
  /**
   * Told after each writing transaction (`writePg`) committed, with how many rows it inserted, updated
   * or deleted. PGlite analyzes its tables here (it has no autovacuum); a server's autovacuum does that
   * itself, so a pool leaves it out.
   */
  afterWrite?(changedRows: number): Promise<void>;
  /** Milliseconds a writing transaction waits for a lock (the write lock first) before STORE_BUSY (5,000 when not set). */
  readonly busyTimeoutMs?: number;
  /**
   * True when one connection runs every statement of the process (PGlite): a transaction there holds every
   * other statement until it ends, so none is kept open for as long as its caller likes (an export's snapshot).
   */
  readonly oneConnection?: boolean;
  close(): Promise<void>;
}

/** Milliseconds a write waits for a lock when not told, as SQLite's busy timeout. */
export const DEFAULT_WRITE_WAIT_MS = 5000;

/**
 * Milliseconds a pool waits for a connection when not told (or `busyTimeoutMs`, when longer): for a new
 * one to be answered (a server that accepts TCP and never answers, a black-holing network) or for one of
 * its connections to be free. Then the statement fails (`toMnemeErrorPg`: STORE_FAILED for a server never
 * reached, else STORE_BUSY) instead of waiting forever. There is no statement timeout of mneme's own:
 * index builds, imports and purges run long on large stores; `?statement_timeout=<ms>` in the URL sets
 * one (node-postgres passes it to the server), and a statement it cancels is STORE_BUSY.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * TCP keepalives of a pool's connections (ADR 12, 2026-12-03): the server probes a connection silent for
 * `KEEPALIVE_IDLE_SECONDS`, then every 10 s, and ends its session after 3 unanswered probes. A process
 * cut off from the server by the network (or whose host died) while it held the write lock, a lease
 * or an open transaction then gives them back within about a minute; the kernel's default (two hours
 * of silence before the first probe) kept every other process's writes waiting (STORE_BUSY) that long.
 * A client that is alive answers the probes whatever it is doing, so a slow import is never cut. The
 * pool's sockets probe the server the same way after that idle time (the interval and count are the
 * client system's). Ignored on a Unix-domain socket.
 */
export const KEEPALIVE_IDLE_SECONDS = 30;
const SERVER_KEEPALIVES = `-c tcp_keepalives_idle=${KEEPALIVE_IDLE_SECONDS} -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3`;

/** A 64-bit integer as a JavaScript number: ids and epoch milliseconds stay far below 2^53. */
const toNumber = (value: string) => Number(value);
const toNumbers = (value: string) =>
  value === '{}'
    ? []
    : value
        .slice(1, -1)
        .split(',')
        .map((item) => (item === 'NULL' ? null : Number(item)));

/** Turns `synchronous_commit` on in a session where it is off, and leaves every other value. */
const PERSISTENT_COMMITS =
  "SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') = 'off'";

/** The first key of named locks (`tryLock`), a space apart from the one-key write lock. */
const NAMED_LOCKS = 0x6d6e6d6c;

const INT8 = 20;
const INT8_ARRAY = 1016;
const NUMERIC = 1700;

/** The parsers of a pool: bigint, bigint[] and numeric as numbers, the rest as pg parses them. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return toNumber;
    if (oid === INT8_ARRAY) return toNumbers;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** `postgres://user:secret@host/db` without its password, for messages. */
export function describePostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'a PostgreSQL URL';
  }
}

/**
 * `url` with `sslmode=prefer`, `require` or `verify-ca` written `verify-full`, which is how node-postgres 8 reads them
 * (the server's certificate and name verified: the same connection either way). Read as written, node-postgres prints a
 * ten-line security warning on stderr that their meaning changes in its next major version, at every command of the
 * CLI on such a URL (a hosted database's usual one). `uselibpqcompat=true` (libpq's meanings) is left as given.
 */
export function sslModeSpelledOut(url: string): string {
  if (/[?&]uselibpqcompat=/i.test(url)) return url;
  return url.replace(/([?&]sslmode=)(prefer|require|verify-ca)(?=&|#|$)/gi, '$1verify-full');
}

/** True for a `postgres://` or `postgresql://` URL. */
export function isPostgresUrl(path: string): boolean {
  return /^postgres(ql)?:\/\//i.test(path);
}

/**
 * Errors of a connection lost, or refused, after the pool had reached its server once (a restart, the
 * server or the network going away): `toMnemeErrorPg` makes them STORE_BUSY (HTTP 503, retry) rather
 * than "check the URL", which is for a server never reached. A connection lost while committing is in
 * `commitUnknown` instead: whether the change was saved is not known, so a blind retry may do it twice.
 */
const lostAfterReached = new WeakSet<object>();
const commitUnknown = new WeakSet<object>();
/** Errors of a pool whose every connection stayed in use past its connect timeout, with what to say: STORE_BUSY. */
const poolFull = new WeakMap<object, string>();

/** True for a driver error that says the connection is gone or cannot be made (no SQLSTATE of a statement). */
function isConnectionLoss(error: unknown): boolean {
  const state = sqlState(error);
  if (UNREACHABLE_CODES.includes(state)) return true;
  return state === '' && /^Connection terminated/.test(errorMessage(error));
}

/**
 * Opens a `pg.Pool` on `url` (node-postgres; nothing connects until the first statement). A connection
 * waits at most `connectTimeoutMs` to be answered or to be free: by default `DEFAULT_CONNECT_TIMEOUT_MS`,
 * or `busyTimeoutMs` when longer, so that a request never gives up on a busy pool before a write would
 * give up on the write lock.
 */
export function createPgPoolDatabase(
  url: string,
  options: {
    max?: number;
    busyTimeoutMs?: number;
    connectTimeoutMs?: number;
    /** Server settings the process was given for its sessions (`PGOPTIONS`), sent before mneme's own. */
    serverOptions?: string | undefined;
  } = {},
): PostgresDatabase {
  const max = options.max ?? 10;
  const connectTimeoutMs = options.connectTimeoutMs ?? Math.max(DEFAULT_CONNECT_TIMEOUT_MS, options.busyTimeoutMs ?? 0);
  let reached = false;
  const pool = new pg.Pool({
    connectionString: sslModeSpelledOut(url),
    types,
    max,
    connectionTimeoutMillis: connectTimeoutMs,
    // The server's settings of each session, in its startup message (a URL's own `options` replace them).
    options: [options.serverOptions, SERVER_KEEPALIVES].filter((given) => given?.trim()).join(' '),
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_SECONDS * 1000,
    // An acknowledged write survives a crash (docs/reliability.md, promise 1) whatever the server's default: with
    // `synchronous_commit` off (set for the server, the database or the role, often for speed) a commit is answered
    // before its WAL reaches the disk, and a crash of the server loses the last ones, acknowledged. Raised to `on` for
    // mneme's sessions before their first statement; `local`, `remote_write`, `on` and `remote_apply` are kept. Recall's
    // touches lower it for their own transaction (ADR 12). The pool lends the connection once this has finished: a
    // statement queued behind one still running makes node-postgres print a deprecation warning to the user's terminal
    // (the pool's `connect` event, which does not wait, did so on every command). A connection on which it fails is
    // closed and its error is the statement's.
    onConnect: async (client) => {
      reached = true;
      await client.query(PERSISTENT_COMMITS);
    },
  });
  // An idle connection the server dropped must not crash the process: the next statement reconnects.
  pool.on('error', () => {});
  const tag = (thrown: unknown) => {
    if (typeof thrown !== 'object' || thrown === null) return thrown;
    const message = errorMessage(thrown);
    // pg-pool's words for its two timeouts: no free connection in time, and a new one not answered in time.
    if (message === 'timeout exceeded when trying to connect') {
      poolFull.set(
        thrown,
        `${max === 1 ? 'the 1 connection' : `all ${max} connections`} of the pool to the PostgreSQL server stayed in use for ${connectTimeoutMs} ms: the database is busy`,
      );
      return thrown;
    }
    const error = /^Connection terminated due to connection timeout/.test(message)
      ? Object.assign(new Error(`no answer within ${connectTimeoutMs} ms of connecting`, { cause: thrown }), {
          code: 'ETIMEDOUT',
        })
      : thrown;
    if (reached && isConnectionLoss(error)) lostAfterReached.add(error);
    return error;
  };
  const tagged = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw tag(error);
    }
  };
  const lockClients = new Set<() => Promise<void>>();
  const run = <Row>(
    client: pg.Pool | pg.PoolClient,
    sql: string,
    parameters: readonly unknown[] = [],
  ): Promise<PostgresResult<Row>> =>
    tagged(async () => {
      const result = await client.query(sql, parameters as unknown[]);
      return { rows: result.rows as Row[], changed: result.rowCount ?? 0 };
    });
  return {
    description: describePostgresUrl(url),
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    query: (sql, parameters) => run(pool, sql, parameters),
    async exec(sql) {
      await tagged(() => pool.query(sql));
    },
    async transaction(work) {
      const client = await tagged(() => pool.connect());
      // A connection lent out has no listener of the pool: the server ending its session (a restart,
      // pg_terminate_backend) would emit an unhandled 'error' and end the process. The statement in
      // flight fails on its own; the connection is then destroyed rather than given back.
      let broken = false;
      const onError = () => {
        broken = true;
      };
      client.on('error', onError);
      try {
        await tagged(() => client.query('BEGIN'));
        const result = await work({
          query: (sql, parameters) => run(client, sql, parameters),
          async exec(sql) {
            await tagged(() => client.query(sql));
          },
        });
        try {
          await client.query('COMMIT');
        } catch (error) {
          if (typeof error === 'object' && error !== null && isConnectionLoss(error)) commitUnknown.add(error);
          throw error;
        }
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw error;
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    async tryLock(name) {
      const client = await tagged(() => pool.connect());
      // A lock's connection stays checked out: its server dropping it must not crash the process, and
      // ends the session that held the lock. The listener goes with the lock: the pool lends the same
      // connection to the next lock, and one left behind each time would pile up on it.
      let failed = false;
      const onError = () => {
        failed = true;
      };
      client.on('error', onError);
      const giveBack = (destroy: boolean) => {
        client.off('error', onError);
        client.release(destroy);
      };
      try {
        const { rows } = await client.query<{ locked: boolean }>(
          `SELECT pg_try_advisory_lock(${NAMED_LOCKS}, hashtext($1)) AS locked`,
          [name],
        );
        if (!rows[0]?.locked) {
          giveBack(false);
          return null;
        }
      } catch (error) {
        giveBack(true);
        throw tag(error);
      }
      let released = false;
      const release = async () => {
        if (released) return;
        released = true;
        lockClients.delete(release);
        try {
          await client.query(`SELECT pg_advisory_unlock(${NAMED_LOCKS}, hashtext($1))`, [name]);
          giveBack(false);
        } catch {
          giveBack(true);
        }
      };
      lockClients.add(release);
      return { release, confirm: async () => !released && !failed };
    },
    async close() {
      // Locks still held end with their sessions; pool.end() waits for every checked-out connection.
      await Promise.all([...lockClients].map((release) => release()));
      await pool.end();
    },
  };
}

/** The SQLSTATE of a driver error (`23505`, `40P01`, ...), or ''. */
function sqlState(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * SQLSTATEs after which the same request may well succeed a moment later: serialization_failure,
 * deadlock_detected, lock_not_available, query_canceled (statement timeout), too_many_connections, and
 * the server ending or refusing sessions while it shuts down, restarts or starts (admin_shutdown,
 * crash_shutdown, cannot_connect_now, idle_session_timeout): the pool opens a new connection.
 */
const BUSY_STATES = ['40001', '40P01', '55P03', '57014', '53300', '57P01', '57P02', '57P03', '57P05'];
/** Errors of the driver or the socket when the server cannot be reached. */
const UNREACHABLE_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'EPIPE'];

/**
 * Wraps a driver error once, keeping MnemeErrors as they are. Class 08 is about the connection
 * (cannot connect, lost, rejected), except 08P01 (protocol_violation): the server understood the
 * connection but not a message of the client (a statement's parameters not matching its
 * placeholders, for one), which retrying or checking the URL does not fix.
 */
export function toMnemeErrorPg(error: unknown, doing: string): MnemeError {
  if (error instanceof MnemeError) return error;
  const state = sqlState(error);
  const message = errorMessage(error) || state;
  if (commitUnknown.has(error as object)) {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: the connection to the PostgreSQL server was lost while committing, so whether the change was saved is unknown (${message}); read it back before retrying`,
      { cause: error },
    );
  }
  const full = poolFull.get(error as object);
  if (full) return new MnemeError(ErrorCode.StoreBusy, `${doing}: ${full}; try again shortly`, { cause: error });
  if (lostAfterReached.has(error as object)) {
    return new MnemeError(
      ErrorCode.StoreBusy,
      `${doing}: the PostgreSQL server cannot be reached now, though it could before: it may be restarting (${message}); try again shortly`,
      { cause: error },
    );
  }
  if (BUSY_STATES.includes(state)) {
    const why = state.startsWith('57P')
      ? `the PostgreSQL server is shutting down, restarting or starting (${message})`
      : 'the database is busy';
    return new MnemeError(ErrorCode.StoreBusy, `${doing}: ${why}; try again shortly`, { cause: error });
  }
  // character_not_in_repertoire: from a JavaScript string (valid UTF-8 once encoded), only the NUL
  // character, which PostgreSQL's text cannot hold (SQLite's can). Bad input, refused: the
  // statement's transaction rolled back, so nothing of the request was stored.
  if (state === '22021') return nulRefused(doing, error);
  // disk_full ("could not extend file": a table or index cannot grow): the statement failed and its transaction
  // rolls back, so nothing of it was written, and the same call goes through once there is room (as SQLite's
  // SQLITE_FULL: STORE_BUSY, HTTP 503 with Retry-After, not a 500).
  if (state === '53100') {
    return new MnemeError(
      ErrorCode.StoreBusy,
      `${doing}: the disk holding the PostgreSQL database is full (${message}); nothing of what failed was written, and it goes through once there is room: free space on that disk, then try again`,
      { cause: error },
    );
  }
  if (state === '08P01') {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: the PostgreSQL server refused a message of mneme (protocol violation: ${message}); this is a bug of mneme or the driver, not of the connection: please report it`,
      { cause: error },
    );
  }
  if (state === '08007') {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: the connection was lost while committing, so whether the change was saved is unknown (${message}); read it back before retrying`,
      { cause: error },
    );
  }
  // A connection lost before the pool ever reached the server (what listens there closed it: not PostgreSQL,
  // or a proxy with no server behind it) is not reaching it either.
  if (UNREACHABLE_CODES.includes(state) || state.startsWith('08') || isConnectionLoss(error)) {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: cannot reach the PostgreSQL server (${message}); check the URL and that the server runs`,
      { cause: error },
    );
  }
  if (state === '28P01' || state === '28000' || state === '3D000') {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: ${errorMessage(error)}; check the user, password and database of the URL`,
      {
        cause: error,
      },
    );
  }
  // insufficient_privilege: most often a new database on PostgreSQL 15 or later, where only the database's owner may
  // create tables in its `public` schema, opened by another user (mneme creates and changes its tables when it opens
  // a database: its schema steps).
  if (state === '42501') {
    return new MnemeError(
      ErrorCode.StoreFailed,
      `${doing}: ${message}: the user of the URL may not do this. mneme creates and changes its own tables in the database (its schema steps) and reads and writes them: make that user the database's owner (ALTER DATABASE <database> OWNER TO <user>), or grant it what is missing (GRANT CREATE, USAGE ON SCHEMA public TO <user>, on PostgreSQL 15 and later)`,
      { cause: error },
    );
  }
  if (state === '57P04') {
    return new MnemeError(ErrorCode.StoreFailed, `${doing}: the database was dropped (${message})`, { cause: error });
  }
  return new MnemeError(ErrorCode.StoreFailed, `${doing}: ${errorMessage(error)}`, { cause: error });
}

/** INVALID_INPUT: PostgreSQL's text cannot hold the NUL character. */
function nulRefused(doing: string, cause?: unknown): MnemeError {
  return new MnemeError(
    ErrorCode.InvalidInput,
    `${doing}: PostgreSQL cannot store the NUL character (\\u0000) in text; remove it from the input`,
    cause === undefined ? {} : { cause },
  );
}

/** Runs `work`, wrapping a driver error once (`doing` says what was being done). */
export async function withPgErrors<T>(doing: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toMnemeErrorPg(error, doing);
  }
}

/**
 * The advisory lock every writing transaction takes first (`pg_advisory_xact_lock`): writes commit one
 * at a time, as in SQLite, so ids of messages and memories become visible in the order they were
 * taken (a watermark never skips a row committed late) and two writes never deadlock on row locks.
 */
export const WRITE_LOCK = 0x6d6e656d;

/**
 * Runs `work` in one transaction that holds the write lock, wrapping a driver error once. The
 * transaction waits for a lock (the write lock, held by another process's write, import or purge; a
 * table's) at most `busyTimeoutMs` (`lock_timeout`, set in the statement that takes the write lock):
 * then 55P03, STORE_BUSY (HTTP 503 with Retry-After), as SQLite's busy timeout. Without it a write
 * waited as long as the holder, and writers waiting held every pooled connection: reads waited too.
 */
export async function writePg<T>(
  database: PostgresDatabase,
  doing: string,
  work: (transaction: PostgresQueryable) => Promise<T>,
): Promise<T> {
  let changed = 0;
  // Keyed work that creates (ADR 14, 2026-12-04): the transaction counts itself on the key's row when it changed rows.
  const keyed = keyToCount();
  // lock_timeout 0 is no limit in PostgreSQL: a busy timeout of 0 waits 1 ms.
  const wait = `${Math.max(1, Math.floor(database.busyTimeoutMs ?? DEFAULT_WRITE_WAIT_MS))}ms`;
  const result = await withPgErrors(doing, () =>
    database.transaction(async (transaction) => {
      // The CTE runs first: the timeout is set before the lock is waited for.
      await transaction.query(
        `WITH wait AS MATERIALIZED (SELECT set_config('lock_timeout', $2, true))
         SELECT pg_advisory_xact_lock($1) FROM wait`,
        [WRITE_LOCK, wait],
      );
      const result = await work({
        async query<Row>(sql: string, parameters?: readonly unknown[]) {
          const rows = await transaction.query<Row>(sql, parameters);
          changed += rows.changed;
          return rows;
        },
        exec: (sql) => transaction.exec(sql),
      });
      if (keyed !== null && changed > 0) {
        const counted = await transaction.query(
          `UPDATE idempotency_keys SET committed = committed + 1
           WHERE principal = $1 AND key = $2 AND locked_until = $3 AND status IS NULL`,
          [keyed.principal, keyed.key, keyed.lockedUntil],
        );
        // Not counted: the claim was taken over meanwhile (ADR 14, attack 25); the transaction rolls back.
        if (counted.changed === 0) throw claimTakenOver(keyed);
      }
      return result;
    }),
  );
  // Committed: bookkeeping after it (PGlite's statistics) must not turn a saved write into an error.
  if (database.afterWrite && changed > 0) await database.afterWrite(changed).catch(() => {});
  return result;
}

/** The one row a statement known to return one returned. */
export function firstRow<Row>(result: PostgresResult<Row>, sql: string): Row {
  const row = result.rows[0];
  if (row === undefined) throw new MnemeError(ErrorCode.StoreFailed, `no row came back from: ${sql}`);
  return row;
}
