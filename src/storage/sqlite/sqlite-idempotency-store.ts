import type Database from 'better-sqlite3';
import { type IdempotencyRecord, type IdempotencyStore, staleLockFrom } from '../idempotency-store.js';
import { runUnderKey } from '../keyed-work.js';
import { preparedOnUse, writeSqlite } from './sqlite-database.js';

interface IdempotencyRow {
  request_sha256: string;
  status: number | null;
  body: string | null;
  locked_until: number;
  committed: number;
}

function record(row: IdempotencyRow): IdempotencyRecord {
  return {
    requestSha256: row.request_sha256,
    status: row.status,
    body: row.body,
    lockedUntil: row.locked_until,
    committed: row.committed > 0,
  };
}

/** The SQLite implementation of the IdempotencyStore port, over `idempotency_keys` (migration 14). */
export function createSqliteIdempotencyStore(database: Database.Database): IdempotencyStore {
  const statements = {
    expire: preparedOnUse<[number]>(database, 'DELETE FROM idempotency_keys WHERE expires_at <= ?'),
    insert: preparedOnUse<[string, string, string, number, number]>(
      database,
      `INSERT INTO idempotency_keys (principal, key, request_sha256, locked_until, expires_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (principal, key) DO NOTHING`,
    ),
    takeOver: preparedOnUse<[number, string, string, string, number, number]>(
      database,
      `UPDATE idempotency_keys SET locked_until = ?
      WHERE principal = ? AND key = ? AND request_sha256 = ? AND status IS NULL AND committed = 0
        AND (locked_until <= ? OR locked_until > ?)`,
    ),
    get: preparedOnUse<[string, string], IdempotencyRow>(
      database,
      'SELECT request_sha256, status, body, locked_until, committed FROM idempotency_keys WHERE principal = ? AND key = ?',
    ),
    former: preparedOnUse<[string, string, string, number, number], IdempotencyRow>(
      database,
      `SELECT request_sha256, status, body, locked_until, committed FROM idempotency_keys
      WHERE principal = ? AND key = ? AND request_sha256 = ? AND (status IS NOT NULL OR locked_until > ?)
        AND expires_at >= ?`,
    ),
    purges: preparedOnUse<[], { value: number }>(database, "SELECT value FROM service_state WHERE name = 'purges'"),
    complete: preparedOnUse<[string, string, string, number, string | null, number]>(
      database,
      `INSERT INTO idempotency_keys (principal, key, request_sha256, status, body, locked_until, expires_at)
      VALUES (?, ?, ?, ?, ?, 0, ?)
      ON CONFLICT (principal, key) DO UPDATE SET status = excluded.status, body = excluded.body, locked_until = 0`,
    ),
    release: preparedOnUse<[string, string, number]>(
      database,
      'DELETE FROM idempotency_keys WHERE principal = ? AND key = ? AND status IS NULL AND locked_until = ?',
    ),
  };

  return {
    async claim(claim) {
      return writeSqlite(database, 'claiming an idempotency key', (): IdempotencyRecord | null => {
        statements.expire().run(claim.now);
        const { principal, key, requestSha256 } = claim;
        if (claim.formerPrincipal !== undefined) {
          const from = claim.formerExpiresFrom ?? 0;
          const former = statements.former().get(claim.formerPrincipal, key, requestSha256, claim.now, from);
          if (former) return record(former);
        }
        if (statements.insert().run(principal, key, requestSha256, claim.lockedUntil, claim.expiresAt).changes === 1) {
          return null;
        }
        const farAhead = staleLockFrom(claim);
        if (
          statements.takeOver().run(claim.lockedUntil, principal, key, requestSha256, claim.now, farAhead).changes === 1
        ) {
          return null;
        }
        const row = statements.get().get(principal, key);
        if (!row) throw new Error(`idempotency key ${key} was neither claimed nor found`);
        return record(row);
      });
    },
    async complete(claim, response) {
      writeSqlite(database, 'storing an idempotent response', () => {
        const { principal, key, requestSha256, expiresAt } = claim;
        const purged = claim.purges !== undefined && (statements.purges().get()?.value ?? 0) !== claim.purges;
        const body = purged ? null : response.body;
        statements.complete().run(principal, key, requestSha256, response.status, body, expiresAt);
      });
    },
    async release(principal, key, lockedUntil) {
      writeSqlite(database, 'releasing an idempotency key', () => {
        statements.release().run(principal, key, lockedUntil);
      });
    },
    underKey: runUnderKey,
  };
}
