import { toIso } from '../../core/clock.js';
import type { ApiKeyRecord, ApiKeyStore } from '../api-key-store.js';
import { firstRow, type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';
import { knowPostgresUsers } from './postgres-user-names.js';

interface ApiKeyRow {
  id: number;
  prefix: string;
  hash: string;
  label: string;
  user_id: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** The PostgreSQL implementation of the ApiKeyStore port: keys are shared by every process on the database. */
export function createPostgresApiKeyStore(database: PostgresDatabase): ApiKeyStore {
  return {
    async insert(key, at) {
      return writePg(database, 'storing an API key', async (q) => {
        await q.query(
          "INSERT INTO service_state (name, value) VALUES ('first_api_key_at', $1) ON CONFLICT DO NOTHING",
          [at],
        );
        if (key.userId !== null) await knowPostgresUsers(database, q, [key.userId], at);
        const sql =
          'INSERT INTO api_keys (prefix, hash, label, user_id, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING *';
        return toRecord(
          firstRow(await q.query<ApiKeyRow>(sql, [key.prefix, key.hash, key.label, key.userId, at]), sql),
        );
      });
    },
    async findActive(prefix) {
      return withPgErrors('reading an API key', async () => {
        const row = (
          await database.query<ApiKeyRow>('SELECT * FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL', [prefix])
        ).rows[0];
        return row ? { ...toRecord(row), hash: row.hash } : null;
      });
    },
    async markUsed(id, at) {
      await withPgErrors('recording an API key use', () =>
        database.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id]),
      );
    },
    async list() {
      return withPgErrors('listing API keys', async () =>
        (await database.query<ApiKeyRow>('SELECT * FROM api_keys ORDER BY id')).rows.map(toRecord),
      );
    },
    async revoke(prefix, at) {
      return withPgErrors('revoking an API key', async () => {
        const row = (
          await database.query<ApiKeyRow>(
            'UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL RETURNING *',
            [at, prefix],
          )
        ).rows[0];
        return row ? toRecord(row) : null;
      });
    },
    async countActive() {
      return withPgErrors('counting API keys', async () => {
        const { rows } = await database.query<{ count: number }>(
          'SELECT count(*) AS count FROM api_keys WHERE revoked_at IS NULL',
        );
        return rows[0]?.count ?? 0;
      });
    },
    async everCreated() {
      return withPgErrors('reading the service state', async () => {
        const { rows } = await database.query("SELECT 1 FROM service_state WHERE name = 'first_api_key_at'");
        return rows.length > 0;
      });
    },
  };
}

function toRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    prefix: row.prefix,
    label: row.label,
    userId: row.user_id,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : toIso(row.revoked_at),
  };
}
