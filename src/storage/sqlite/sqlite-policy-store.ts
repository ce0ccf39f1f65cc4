import type Database from 'better-sqlite3';
import { toIso } from '../../core/clock.js';
import type { PolicyStore, PolicyVersion } from '../policy-store.js';
import { readSqlite, writeSqlite } from './sqlite-database.js';

interface PolicyVersionRow {
  version: number;
  preset: string;
  overrides: string;
  change: string;
  actor: string | null;
  created_at: number;
}

/** The SQLite implementation of the PolicyStore port: one row per version in `policy_versions`. */
export function createSqlitePolicyStore(database: Database.Database): PolicyStore {
  // Prepared on first use: a file opened at an older schema (migrateTo, in tests) has no policy_versions.
  let prepared: ReturnType<typeof prepare> | null = null;
  const statements = () => {
    prepared ??= prepare(database);
    return prepared;
  };
  return {
    async current() {
      return readSqlite('reading the policy', () => {
        const row = statements().current.get();
        return row ? toVersion(row) : null;
      });
    },
    async history() {
      return readSqlite('reading the policy history', () => statements().history.all().map(toVersion));
    },
    async replaceUnusedFirst(first, at) {
      return writeSqlite(database, 'storing the policy', () => {
        const unused = statements().unusedFirst.get();
        if (!unused) return false;
        const { version, preset, overrides, change, actor } = first;
        statements().replaceFirst.run(preset, JSON.stringify(overrides), change, actor, at, version);
        return true;
      });
    },
    async append(next, at) {
      return writeSqlite(database, 'storing the policy', () => {
        const { version, preset, overrides, change, actor } = next;
        return statements().append.run(version, preset, JSON.stringify(overrides), change, actor, at).changes === 1;
      });
    },
  };
}

function prepare(database: Database.Database) {
  return {
    current: database.prepare<[], PolicyVersionRow>('SELECT * FROM policy_versions ORDER BY version DESC LIMIT 1'),
    history: database.prepare<[], PolicyVersionRow>('SELECT * FROM policy_versions ORDER BY version'),
    append: database.prepare<[number, string, string, string, string | null, number]>(
      `INSERT INTO policy_versions (version, preset, overrides, change, actor, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (version) DO NOTHING`,
    ),
    unusedFirst: database.prepare<[], { unused: 1 }>(
      `SELECT 1 AS unused WHERE (SELECT MAX(version) FROM policy_versions) = 1
        AND NOT EXISTS (SELECT 1 FROM memories) AND NOT EXISTS (SELECT 1 FROM messages)`,
    ),
    replaceFirst: database.prepare<[string, string, string, string | null, number, number]>(
      'UPDATE policy_versions SET preset = ?, overrides = ?, change = ?, actor = ?, created_at = ? WHERE version = ?',
    ),
  };
}

function toVersion(row: PolicyVersionRow): PolicyVersion {
  return {
    version: row.version,
    preset: row.preset,
    overrides: JSON.parse(row.overrides) as Record<string, unknown>,
    change: row.change,
    actor: row.actor,
    createdAt: toIso(row.created_at),
  };
}
