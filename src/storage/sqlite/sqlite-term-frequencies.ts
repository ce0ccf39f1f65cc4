import type Database from 'better-sqlite3';
import { ftsQuery } from './sqlite-fts-query.js';

/**
 * How common the terms of a full-text search are. BM25 weighs a term by its rarity, so a term found
 * in a large share of the memories moves a match only a little, yet FTS5 scores every memory on its
 * posting list: searched like the others, it makes the search cost as much as that list is long. A
 * term is very common when more than {@link COMMON_SHARE} of the memories, and more than
 * {@link COMMON_MIN_MEMORIES}, contain it. When the rarer terms alone match at least as many memories
 * as a search asks for, they decide which memories are candidates, and every term still scores them
 * (see `createSqliteMemoryStore`): only memories that have none but very common terms are left out.
 */
export interface SqliteTermFrequencies {
  /**
   * The very common terms of `terms` (none unless the rarer ones alone match `limit` memories) and the
   * others, by `counted` (the terms' counts, in order, among the memories searched; every memory's
   * when omitted).
   */
  split(
    terms: readonly string[],
    limit: number,
    counted?: { memories: number; counts: readonly number[] },
  ): { rare: readonly string[]; common: readonly string[] };
  /** The memories each term is in (remembered while the store keeps its size and nothing was purged), and the number of memories. */
  counts(terms: readonly string[]): { memories: number; counts: number[] };
  /** The memories each term is in, counted now up to `upTo` (more: `upTo + 1`), and the number of memories. */
  exactCounts(terms: readonly string[], upTo: number): { memories: number; counts: number[] };
  /**
   * The `count` rarest of `terms` (ties: the first), in their order; all of them when there are no more.
   * By `counts` (the terms' counts, in order, among the memories searched) when given.
   */
  rarest(terms: readonly string[], count: number, counts?: readonly number[]): readonly string[];
}

/** A term in more than this share of the memories (BM25 weight under ln 99, against ln 10,000 for a term in 10 of 100,000)... */
export const COMMON_SHARE = 0.01;
/** ...and in more than this many memories is very common; below it, a posting list is short anyway. */
export const COMMON_MIN_MEMORIES = 1000;
/** Terms whose frequency is remembered. */
const CACHED_TERMS = 10_000;
/** A remembered frequency is counted again once the number of memories moved by more than this share. */
const STALE_SHARE = 0.1;

/** What a remembered count depends on: the number of memories, and how many purges deleted some. */
interface Store {
  size: number;
  purges: number;
}

export function createSqliteTermFrequencies(database: Database.Database): SqliteTermFrequencies {
  let statements: {
    size: Database.Statement<[], Store>;
    count: Database.Statement<[string], number>;
  } | null = null;
  const cache = new Map<string, { frequency: number } & Store>();
  /** One statement counting `n` terms up to a limit, by `n:limit`: one call into SQLite for a text's terms. */
  const countsUpTo = new Map<string, Database.Statement<string[], number[]>>();

  function countingUpTo(terms: number, limit: number): Database.Statement<string[], number[]> {
    const key = `${terms}:${limit}`;
    let statement = countsUpTo.get(key);
    if (!statement) {
      const count = `(SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ${limit}))`;
      statement = database.prepare<string[], number[]>(`SELECT ${Array(terms).fill(count).join(', ')}`).raw();
      countsUpTo.set(key, statement);
    }
    return statement;
  }

  function prepared() {
    statements ??= {
      // An upper bound on the rows of the full-text index (memory ids only grow), and the purges so far.
      size: database.prepare<[], Store>(
        `SELECT COALESCE(MAX(id), 0) AS size,
          IFNULL((SELECT value FROM service_state WHERE name = 'purges'), 0) AS purges FROM memories`,
      ),
      count: database.prepare<[string], number>('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?').pluck(),
    };
    return statements;
  }

  function store(): Store {
    return prepared().size.get() ?? { size: 0, purges: 0 };
  }

  /**
   * Memories (archived ones too) whose text contains `term`, remembered while the store keeps its size and
   * no purge (by any process) deleted memories whose words it counted.
   */
  function frequency(term: string, now: Store): number {
    const known = cache.get(term);
    cache.delete(term);
    if (known && known.purges === now.purges && Math.abs(now.size - known.size) <= known.size * STALE_SHARE) {
      cache.set(term, known);
      return known.frequency;
    }
    const query = ftsQuery([term]);
    const counted = query === null ? 0 : (prepared().count.get(query) ?? 0);
    cache.set(term, { frequency: counted, ...now });
    if (cache.size > CACHED_TERMS) cache.delete(cache.keys().next().value ?? '');
    return counted;
  }

  return {
    counts(terms) {
      const now = store();
      return { memories: now.size, counts: terms.map((term) => frequency(term, now)) };
    },
    exactCounts(terms, upTo) {
      const limit = Math.max(0, Math.floor(upTo)) + 1;
      const queries = terms.map((term) => ftsQuery([term]));
      const asked = queries.filter((query): query is string => query !== null);
      // Counted together: a text's terms in one statement, not one call into SQLite each.
      const counted = asked.length === 0 ? [] : (countingUpTo(asked.length, limit).get(...asked) ?? []);
      let next = 0;
      return {
        memories: store().size,
        counts: queries.map((query) => (query === null ? 0 : (counted[next++] ?? 0))),
      };
    },
    rarest(terms, count, counts) {
      if (terms.length <= count) return terms;
      const now = counts === undefined ? store() : null;
      const kept = new Set(
        terms
          .map((term, index) => ({ index, frequency: now === null ? (counts?.[index] ?? 0) : frequency(term, now) }))
          .sort((left, right) => left.frequency - right.frequency || left.index - right.index)
          .slice(0, Math.max(0, count))
          .map((entry) => entry.index),
      );
      return terms.filter((_term, index) => kept.has(index));
    },

    split(terms, limit, visible) {
      const none = { rare: terms, common: [] };
      if (terms.length < 2) return none;
      const now = visible === undefined ? store() : null;
      const size = now?.size ?? visible?.memories ?? 0;
      const threshold = Math.max(COMMON_MIN_MEMORIES, COMMON_SHARE * size);
      if (size <= threshold) return none;
      const counted = terms.map((term, index) => ({
        term,
        frequency: now === null ? (visible?.counts[index] ?? 0) : frequency(term, now),
      }));
      const rare = counted.filter((entry) => entry.frequency <= threshold);
      if (rare.length === counted.length || rare.length === 0) return none;
      if (Math.max(...rare.map((entry) => entry.frequency)) < limit) return none;
      return {
        rare: rare.map((entry) => entry.term),
        common: counted.filter((entry) => entry.frequency > threshold).map((entry) => entry.term),
      };
    },
  };
}
