import { type IdempotencyRecord, type IdempotencyStore, staleLockFrom } from '../idempotency-store.js';
import { runUnderKey } from '../keyed-work.js';
import { firstRow, type PostgresDatabase, writePg } from './postgres-database.js';

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
    lockedUntil: Number(row.locked_until),
    committed: Number(row.committed) > 0,
  };
}

/**
 * The PostgreSQL implementation of the IdempotencyStore port, over `idempotency_keys` (migration 2).
 * Every call is one transaction under the write lock (`writePg`), so two claims of one key never both win.
 */
export function createPostgresIdempotencyStore(database: PostgresDatabase): IdempotencyStore {
  return {
    async claim(claim) {
      return writePg(database, 'claiming an idempotency key', async (q): Promise<IdempotencyRecord | null> => {
        await q.query('DELETE FROM idempotency_keys WHERE expires_at <= $1', [claim.now]);
        const { principal, key, requestSha256 } = claim;
        if (claim.formerPrincipal !== undefined) {
          const former = await q.query<IdempotencyRow>(
            `SELECT request_sha256, status, body, locked_until, committed FROM idempotency_keys
             WHERE principal = $1 AND key = $2 AND request_sha256 = $3 AND (status IS NOT NULL OR locked_until > $4)
               AND expires_at >= $5`,
            [claim.formerPrincipal, key, requestSha256, claim.now, claim.formerExpiresFrom ?? 0],
          );
          const row = former.rows[0];
          if (row) return record(row);
        }
        const inserted = await q.query(
          `INSERT INTO idempotency_keys (principal, key, request_sha256, locked_until, expires_at)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (principal, key) DO NOTHING`,
          [principal, key, requestSha256, claim.lockedUntil, claim.expiresAt],
        );
        if (inserted.changed === 1) return null;
        const takenOver = await q.query(
          `UPDATE idempotency_keys SET locked_until = $1
           WHERE principal = $2 AND key = $3 AND request_sha256 = $4 AND status IS NULL AND committed = 0
             AND (locked_until <= $5 OR locked_until > $6)`,
          [claim.lockedUntil, principal, key, requestSha256, claim.now, staleLockFrom(claim)],
        );
        if (takenOver.changed === 1) return null;
        const sql =
          'SELECT request_sha256, status, body, locked_until, committed FROM idempotency_keys WHERE principal = $1 AND key = $2';
        return record(firstRow(await q.query<IdempotencyRow>(sql, [principal, key]), sql));
      });
    },
    async complete(claim, response) {
      await writePg(database, 'storing an idempotent response', async (q) => {
        let body: string | null = response.body;
        if (claim.purges !== undefined) {
          const { rows } = await q.query<{ value: string | number }>(
            "SELECT value FROM service_state WHERE name = 'purges'",
          );
          if (Number(rows[0]?.value ?? 0) !== claim.purges) body = null;
        }
        await q.query(
          `INSERT INTO idempotency_keys (principal, key, request_sha256, status, body, locked_until, expires_at)
           VALUES ($1, $2, $3, $4, $5, 0, $6)
           ON CONFLICT (principal, key) DO UPDATE SET status = excluded.status, body = excluded.body, locked_until = 0`,
          [claim.principal, claim.key, claim.requestSha256, response.status, body, claim.expiresAt],
        );
      });
    },
    async release(principal, key, lockedUntil) {
      await writePg(database, 'releasing an idempotency key', async (q) => {
        await q.query(
          'DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND status IS NULL AND locked_until = $3',
          [principal, key, lockedUntil],
        );
      });
    },
    underKey: runUnderKey,
  };
}
