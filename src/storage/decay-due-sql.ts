import { toIso } from '../core/clock.js';
import type { DecayCandidate, DecayDueRule } from './maintenance-store.js';

/** Milliseconds in a day. */
const DAY_MS = 24 * 60 * 60 * 1000;

/** The due time of a memory that is due whatever the time: the earliest time a JavaScript date holds. */
export const ALWAYS_DUE = -8_640_000_000_000_000;

/**
 * How much later than its due time a memory is read: the SQL's logarithm and the policy's power may
 * round the crossing a few microseconds apart, so a read takes what is due up to a second after `now`
 * and the policy's own `step` decides (a memory read early is left as it is).
 */
export const DUE_MARGIN_MS = 1000;

/** A number as an SQL literal that reads back as the same double. */
function literal(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`decay due rule: ${value} is not a finite number`);
  return String(value);
}

/**
 * The SQL expression of a memory's due time under `rule` (epoch milliseconds, a double), over the
 * columns of `memories`; `greatest` is the dialect's two-argument maximum (`max` in SQLite, `GREATEST`
 * in PostgreSQL). The same text each time for the same rule: SQLite indexes it and matches it in queries.
 */
export function decayDueExpression(rule: DecayDueRule, greatest: 'max' | 'GREATEST'): string {
  const anchor = 'COALESCE(last_accessed, created_at)';
  if (rule.kind === 'every') {
    return `(${greatest}(${anchor}, COALESCE(decayed_at, ${ALWAYS_DUE})) + ${literal(rule.periodMs)})`;
  }
  if (!(rule.perDay > 0 && rule.perDay < 1 && rule.below > 0)) {
    throw new Error('decay due rule: a signal fades by a factor in 0..1 a day towards a line above 0');
  }
  const start = rule.graceMs > 0 ? `${greatest}(${anchor}, created_at + ${literal(rule.graceMs)})` : anchor;
  // signal * perDay^days < below  <=>  days > ln(signal / below) / -ln(perDay)
  const msPerLn = DAY_MS / -Math.log(rule.perDay);
  const below = literal(rule.below);
  return `(CASE WHEN ${rule.signal} > ${below} THEN ${start} + ${literal(msPerLn)} * ln(${rule.signal} / ${below}) ELSE ${ALWAYS_DUE} END)`;
}

/** A memory row's decay columns (both stores name them alike), as decay reads them. */
export interface DecayCandidateRow {
  id: number;
  strength: number;
  salience: number;
  importance: number;
  last_accessed: number | null;
  created_at: number;
  decayed_at: number | null;
}

/** A decay candidate from its row: the stores read active, unpinned memories only. */
export function toDecayCandidate(row: DecayCandidateRow): DecayCandidate {
  return {
    id: row.id,
    strength: row.strength,
    salience: row.salience,
    importance: row.importance,
    pinned: false,
    lastAccessedAt: row.last_accessed === null ? null : toIso(row.last_accessed),
    createdAt: toIso(row.created_at),
    decayedAt: row.decayed_at,
  };
}

/**
 * Whether a memory row, read again in decay's write transaction, is still what decay read of it (`read`): active,
 * unpinned, with the same signals, last retrieval and time its steps are applied up to. A write of decay applies
 * only then: a retrieval, an edit or a pin that landed after the read is not overruled (attack 31c).
 */
export function stillAsRead(
  row: DecayCandidateRow & { archived_at: number | null; pinned: number | boolean },
  read: DecayCandidate,
): boolean {
  if (row.archived_at !== null || row.pinned) return false;
  const now = toDecayCandidate(row);
  return (
    now.strength === read.strength &&
    now.salience === read.salience &&
    now.importance === read.importance &&
    now.lastAccessedAt === read.lastAccessedAt &&
    now.createdAt === read.createdAt &&
    now.decayedAt === read.decayedAt
  );
}
