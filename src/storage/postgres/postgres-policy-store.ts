import { toIso } from '../../core/clock.js';
import type { PolicyStore, PolicyVersion } from '../policy-store.js';
import { type PostgresDatabase, withPgErrors, writePg } from './postgres-database.js';

interface PolicyVersionRow {
  version: number;
  preset: string;
  overrides: string;
  change: string;
  actor: string | null;
  created_at: number;
}

/** The PostgreSQL implementation of the PolicyStore port: one row per version in `policy_versions`, shared by every process. */
export function createPostgresPolicyStore(database: PostgresDatabase): PolicyStore {
  return {
    async current() {
      return withPgErrors('reading the policy', async () => {
        const row = (
          await database.query<PolicyVersionRow>('SELECT * FROM policy_versions ORDER BY version DESC LIMIT 1')
        ).rows[0];
        return row ? toVersion(row) : null;
      });
    },
    async history() {
      return withPgErrors('reading the policy history', async () =>
        (await database.query<PolicyVersionRow>('SELECT * FROM policy_versions ORDER BY version')).rows.map(toVersion),
      );
    },
    async replaceUnusedFirst(first, at) {
      return writePg(database, 'storing the policy', async (q) => {
        const unused = await q.query(
          `SELECT 1 WHERE (SELECT MAX(version) FROM policy_versions) = 1
             AND NOT EXISTS (SELECT 1 FROM memories) AND NOT EXISTS (SELECT 1 FROM messages)`,
        );
        if (unused.rows.length === 0) return false;
        await q.query(
          'UPDATE policy_versions SET preset = $1, overrides = $2, change = $3, actor = $4, created_at = $5 WHERE version = $6',
          [first.preset, JSON.stringify(first.overrides), first.change, first.actor, at, first.version],
        );
        return true;
      });
    },
    async append(next, at) {
      return writePg(database, 'storing the policy', async (q) => {
        const result = await q.query(
          `INSERT INTO policy_versions (version, preset, overrides, change, actor, created_at)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING`,
          [next.version, next.preset, JSON.stringify(next.overrides), next.change, next.actor, at],
        );
        return result.changed === 1;
      });
    },
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
