import type { TermCounts } from '../memory-store.js';
import type { PostgresQueryable } from './postgres-database.js';
import { orTsqueryOf } from './postgres-text-query.js';

/** Terms whose frequency is remembered. */
const CACHED_TERMS = 10_000;
/** A remembered frequency is counted again once the number of memories moved by more than this share. */
const STALE_SHARE = 0.1;

/**
 * How common search terms are among the memories (archived ones too), as `MemoryStore.termCounts`
 * answers: a term counts the memories whose `fts` matches its lexemes (stemmed by `english`, as
 * `searchText` matches them; a stop word or a term without a word counts 0), through the GIN index.
 * As in SQLite, a count is remembered while the number of memories (an upper bound: the largest id)
 * stays within a tenth of what it was, so recall's per-query rarity weights cost one indexed read
 * for terms seen before; the terms not remembered are counted in one statement.
 */
export function createPostgresTermFrequencies(): {
  counts(q: PostgresQueryable, terms: readonly string[]): Promise<TermCounts>;
  /** The `count` rarest of `terms` by these counts (ties: the first), in their order; all when there are no more. */
  rarest(q: PostgresQueryable, terms: readonly string[], count: number): Promise<readonly string[]>;
} {
  const cache = new Map<string, { frequency: number; size: number }>();

  const remembered = (term: string, size: number): number | undefined => {
    const known = cache.get(term);
    if (!known) return undefined;
    cache.delete(term);
    if (Math.abs(size - known.size) > known.size * STALE_SHARE) return undefined;
    cache.set(term, known);
    return known.frequency;
  };

  async function counts(q: PostgresQueryable, terms: readonly string[]): Promise<TermCounts> {
    const { rows } = await q.query<{ size: number }>('SELECT COALESCE(MAX(id), 0) AS size FROM memories');
    const size = rows[0]?.size ?? 0;
    const known = terms.map((term) => remembered(term, size));
    const missing = [...new Set(terms.filter((_, index) => known[index] === undefined))];
    if (missing.length > 0) {
      const counted = await q.query<{ term: string; frequency: number }>(
        `SELECT term, (SELECT count(*) FROM memories WHERE fts @@ ${orTsqueryOf('term', 'english')}) AS frequency
           FROM unnest($1::text[]) AS term`,
        [missing],
      );
      for (const { term, frequency } of counted.rows) {
        cache.set(term, { frequency, size });
        if (cache.size > CACHED_TERMS) cache.delete(cache.keys().next().value ?? '');
      }
    }
    return {
      memories: size,
      counts: terms.map((term, index) => known[index] ?? cache.get(term)?.frequency ?? 0),
    };
  }

  return {
    counts,
    async rarest(q, terms, count) {
      if (terms.length <= count) return terms;
      const counted = (await counts(q, terms)).counts;
      const kept = new Set(
        counted
          .map((frequency, index) => ({ index, frequency }))
          .sort((left, right) => left.frequency - right.frequency || left.index - right.index)
          .slice(0, Math.max(0, count))
          .map((entry) => entry.index),
      );
      return terms.filter((_term, index) => kept.has(index));
    },
  };
}
