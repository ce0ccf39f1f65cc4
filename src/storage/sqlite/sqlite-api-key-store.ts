import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { ApiKeyRecord, ApiKeyStore } from '../api-key-store.js';
import { getRow, readSqlite, writeSqlite } from './sqlite-database.js';
import { createSqliteUserNames } from './sqlite-user-names.js';

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

/** The SQLite implementation of the ApiKeyStore port. */
export function createSqliteApiKeyStore(database: Database.Database): ApiKeyStore {
  const userNames = createSqliteUserNames(database);
  const statements = {
    insert: database.prepare<[string, string, string, string | null, number], ApiKeyRow>(
      'INSERT INTO api_keys (prefix, hash, label, user_id, created_at) VALUES (?, ?, ?, ?, ?) RETURNING *',
    ),
    findActive: database.prepare<[string], ApiKeyRow>('SELECT * FROM api_keys WHERE prefix = ? AND revoked_at IS NULL'),
    markUsed: database.prepare<[number, number]>('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    list: database.prepare<[], ApiKeyRow>('SELECT * FROM api_keys ORDER BY id'),
    revoke: database.prepare<[number, string], ApiKeyRow>(
      'UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL RETURNING *',
    ),
    countActive: database.prepare<[], { count: number }>(
      'SELECT COUNT(*) AS count FROM api_keys WHERE revoked_at IS NULL',
    ),
    markCreated: database.prepare<[number]>(
      "INSERT INTO service_state (name, value) VALUES ('first_api_key_at', ?) ON CONFLICT DO NOTHING",
    ),
    everCreated: database.prepare<[], { found: 1 }>(
      "SELECT 1 AS found FROM service_state WHERE name = 'first_api_key_at'",
    ),
  };

  return {
    async insert(key, at) {
      return writeSqlite(database, 'storing an API key', () => {
        statements.markCreated.run(at);
        if (key.userId !== null) userNames.know([key.userId], at);
        return toRecord(getRow(statements.insert, key.prefix, key.hash, key.label, key.userId, at));
      });
    },
    async findActive(prefix) {
      return readSqlite('reading an API key', () => {
        const row = statements.findActive.get(prefix);
        return row ? { ...toRecord(row), hash: row.hash } : null;
      });
    },
    async markUsed(id, at) {
      readSqlite('recording an API key use', () => statements.markUsed.run(at, id));
    },
    async list() {
      return readSqlite('listing API keys', () => statements.list.all().map(toRecord));
    },
    async revoke(prefix, at) {
      return readSqlite('revoking an API key', () => {
        const row = statements.revoke.get(at, prefix);
        return row ? toRecord(row) : null;
      });
    },
    async countActive() {
      return readSqlite('counting API keys', () => getRow(statements.countActive).count);
    },
    async everCreated() {
      return readSqlite('reading the service state', () => statements.everCreated.get() !== undefined);
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
