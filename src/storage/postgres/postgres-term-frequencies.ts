import type { TermCounts } from '../memory-store.js';
import type { PostgresQueryable } from './postgres-database.js';
import { lexemeQuery, orLexemeQuery } from './postgres-text-query.js';

/** Terms whose lexemes, and `tsquery` texts whose frequency, are remembered. */
const CACHED = 10_000;
/** A lexeme in more than this share of the memories... */
export const COMMON_SHARE = 0.01;
/** ...and in more than this many memories is very common; below it, a posting list is short anyway. */
export const COMMON_MIN_MEMORIES = 1000;

/** The lexemes a full-text search scores by, and which memories are its candidates. */
export interface WeightedSearch {
  /** Each distinct lexeme of the terms as a one-lexeme `tsquery` text, with its BM25 inverse document frequency. */
  lexemes: Array<{ query: string; idf: number }>;
  /** The `tsquery` text the candidates match: the OR of the lexemes, or of the rarer ones only (see `weighted`). */
  candidates: string;
}

/** The owner keys counted among (`null`: every owner, from the full-text index). */
type Owners = readonly string[] | null;

export interface PostgresTermFrequencies {
  /** `MemoryStore.termCounts`. */
  counts(q: PostgresQueryable, terms: readonly string[], owners: Owners): Promise<TermCounts>;
  /** `MemoryStore.termCounts` with `exactUpTo`: counted now, each up to `upTo` (more: `upTo + 1`). */
  exactCounts(q: PostgresQueryable, terms: readonly string[], upTo: number, owners: Owners): Promise<TermCounts>;
  /** The `count` rarest of `terms` by these counts (ties: the first), in their order; all when there are no more. */
  rarest(q: PostgresQueryable, terms: readonly string[], count: number, owners: Owners): Promise<readonly string[]>;
  /** What a search for `terms` among `owners` that wants `limit` hits scores by; null when no term has a lexeme. */
  weighted(
    q: PostgresQueryable,
    terms: readonly string[],
    limit: number,
    owners: Owners,
  ): Promise<WeightedSearch | null>;
}

/**
 * How common search terms and their lexemes are among the memories (archived ones too). A term is
 * stemmed by `english` (as `memories.fts` is) once, with one statement for the terms not seen before;
 * its count is that of the memories whose `fts` matches the OR of its lexemes (a stop word or a term
 * without a word counts 0). Counts are made through the GIN index: each `tsquery` is a parameter, so
 * the planner knows it. A count is remembered while the largest memory id and the number of purges (read
 * with the counts) are those it was counted at, so recall's rarity weights cost one short statement for words seen
 * before. Unlike SQLite's (one process a file), no staleness is allowed: several processes share
 * the database, and a count one of them remembered from a smaller store would rank near ties
 * differently from the others (`test/postgres-two-serve.test.ts` asks both for the same recall).
 *
 * BM25 weighs a lexeme by its rarity, so a lexeme found in a large share of the memories moves a
 * match only a little, yet scoring every memory that contains it makes the search cost as much as its
 * posting list is long. When the rarer lexemes alone match at least as many memories as a search
 * wants, they decide which memories are candidates, and every lexeme still scores them (SQLite does
 * the same): only memories that have none but very common lexemes are left out.
 */
export function createPostgresTermFrequencies(): PostgresTermFrequencies {
  const stems = new Map<string, readonly string[]>();
  const frequencies = new Map<string, { frequency: number; stamp: string }>();

  const remember = <V>(cache: Map<string, V>, key: string, value: V) => {
    cache.set(key, value);
    if (cache.size > CACHED) cache.delete(cache.keys().next().value ?? '');
  };

  async function lexemesOf(q: PostgresQueryable, terms: readonly string[]): Promise<Array<readonly string[]>> {
    const missing = [...new Set(terms.filter((term) => !stems.has(term)))];
    if (missing.length > 0) {
      const { rows } = await q.query<{ term: string; lexemes: string[] }>(
        `SELECT term, tsvector_to_array(to_tsvector('english'::regconfig, term)) AS lexemes
         FROM unnest($1::text[]) AS term`,
        [missing],
      );
      for (const { term, lexemes } of rows) remember(stems, term, [...lexemes].sort());
    }
    return terms.map((term) => stems.get(term) ?? []);
  }

  /**
   * The memories matching each `tsquery` text, and the number of memories, in one statement: a
   * remembered count is used while that number and the purges so far (`service_state.purges`: a purge
   * deletes memories without changing the number) are those it was counted at, else counted again.
   */
  async function frequenciesOf(
    q: PostgresQueryable,
    queries: readonly string[],
  ): Promise<{ size: number; counts: number[] }> {
    const distinct = [...new Set(queries)];
    const known = distinct.map((query) => frequencies.get(query));
    const values = distinct.flatMap((query, index) => [query, known[index]?.stamp ?? '']);
    const counts = distinct.map(
      (_, index) =>
        `CASE WHEN s.stamp = $${2 * index + 2}::text
          THEN -1 ELSE (SELECT count(*) FROM memories WHERE fts @@ $${2 * index + 1}::tsquery) END`,
    );
    const { rows } = await q.query<{ size: number; stamp: string; counts: number[] }>(
      `WITH s AS (
         SELECT size, size || ':' || COALESCE((SELECT value FROM service_state WHERE name = 'purges'), 0) AS stamp
         FROM (SELECT COALESCE(MAX(id), 0) AS size FROM memories) AS m
       )
       SELECT s.size, s.stamp, ARRAY[${counts.join(', ')}]::bigint[] AS counts FROM s`,
      values,
    );
    const size = rows[0]?.size ?? 0;
    const stamp = rows[0]?.stamp ?? '';
    const counted = rows[0]?.counts ?? [];
    const found = new Map<string, number>();
    distinct.forEach((query, index) => {
      const count = Number(counted[index] ?? 0);
      const remembered = known[index];
      if (count < 0 && remembered) {
        frequencies.delete(query);
        remember(frequencies, query, remembered);
        found.set(query, remembered.frequency);
      } else {
        remember(frequencies, query, { frequency: Math.max(0, count), stamp });
        found.set(query, Math.max(0, count));
      }
    });
    return { size, counts: queries.map((query) => found.get(query) ?? 0) };
  }

  /**
   * The memories of `owners` holding each lexeme, and their number, from the word counts of schema
   * step 4 (ADR 25): written with every memory, so exact now, and no memory of another owner moves them.
   */
  async function ownerCounts(
    q: PostgresQueryable,
    lexemes: readonly string[],
    owners: readonly string[],
  ): Promise<{ size: number; counts: Map<string, number> }> {
    const { rows } = await q.query<{ stem: string | null; memories: string | number }>(
      `SELECT stem, sum(memories)::bigint AS memories FROM memory_words
         WHERE stem = ANY ($1::text[]) AND owner = ANY ($2::text[]) GROUP BY stem
       UNION ALL
       SELECT NULL, COALESCE(sum(memories), 0)::bigint FROM memory_word_owners WHERE owner = ANY ($2::text[])`,
      [[...new Set(lexemes)], [...owners]],
    );
    const counts = new Map<string, number>();
    let size = 0;
    for (const row of rows) {
      if (row.stem === null) size = Number(row.memories);
      else counts.set(row.stem, Number(row.memories));
    }
    return { size, counts };
  }

  /**
   * Each term's count among the memories of `owners`: that of its most common lexeme (exact for a
   * term of one lexeme; the index matches a term by any of its lexemes, so at least that many).
   */
  async function ownerTermCounts(
    q: PostgresQueryable,
    terms: readonly string[],
    owners: readonly string[],
  ): Promise<TermCounts> {
    const lexemes = await lexemesOf(q, terms);
    const { size, counts } = await ownerCounts(q, lexemes.flat(), owners);
    return {
      memories: size,
      counts: lexemes.map((words) => Math.max(0, ...words.map((word) => counts.get(word) ?? 0))),
    };
  }

  async function counts(q: PostgresQueryable, terms: readonly string[], owners: Owners): Promise<TermCounts> {
    if (owners !== null) return ownerTermCounts(q, terms, owners);
    const queries = (await lexemesOf(q, terms)).map(orLexemeQuery);
    const asked = queries.filter((query): query is string => query !== null);
    const { size, counts: found } = await frequenciesOf(q, asked);
    const byQuery = new Map(asked.map((query, index) => [query, found[index] ?? 0]));
    return { memories: size, counts: queries.map((query) => (query === null ? 0 : (byQuery.get(query) ?? 0))) };
  }

  async function exactCounts(
    q: PostgresQueryable,
    terms: readonly string[],
    upTo: number,
    owners: Owners,
  ): Promise<TermCounts> {
    if (owners !== null) {
      const counted = await ownerTermCounts(q, terms, owners);
      const limit = Math.max(0, Math.floor(upTo)) + 1;
      return { memories: counted.memories, counts: counted.counts.map((count) => Math.min(count, limit)) };
    }
    const queries = (await lexemesOf(q, terms)).map(orLexemeQuery);
    const asked = [...new Set(queries.filter((query): query is string => query !== null))];
    if (asked.length === 0) {
      const { rows } = await q.query<{ size: number }>('SELECT COALESCE(MAX(id), 0) AS size FROM memories');
      return { memories: Number(rows[0]?.size ?? 0), counts: queries.map(() => 0) };
    }
    const limit = Math.max(0, Math.floor(upTo)) + 1;
    const counts = asked.map(
      (_, index) => `(SELECT count(*) FROM (SELECT 1 FROM memories WHERE fts @@ $${index + 2}::tsquery LIMIT $1) AS m)`,
    );
    const { rows } = await q.query<{ size: number; counts: number[] }>(
      `SELECT (SELECT COALESCE(MAX(id), 0) FROM memories) AS size, ARRAY[${counts.join(', ')}]::bigint[] AS counts`,
      [limit, ...asked],
    );
    const byQuery = new Map(asked.map((query, index) => [query, Number(rows[0]?.counts?.[index] ?? 0)]));
    return {
      memories: Number(rows[0]?.size ?? 0),
      counts: queries.map((query) => (query === null ? 0 : (byQuery.get(query) ?? 0))),
    };
  }

  return {
    counts,
    exactCounts,

    async rarest(q, terms, count, owners) {
      if (terms.length <= count) return terms;
      const counted = (await counts(q, terms, owners)).counts;
      const kept = new Set(
        counted
          .map((frequency, index) => ({ index, frequency }))
          .sort((left, right) => left.frequency - right.frequency || left.index - right.index)
          .slice(0, Math.max(0, count))
          .map((entry) => entry.index),
      );
      return terms.filter((_term, index) => kept.has(index));
    },

    async weighted(q, terms, limit, owners) {
      const lexemes = [...new Set((await lexemesOf(q, terms)).flat())];
      if (lexemes.length === 0) return null;
      const queries = lexemes.map(lexemeQuery);
      // Rarity among the memories searched (ADR 25): ts_rank reads the memory alone, so with these
      // weights no score depends on a memory of another owner.
      const { size, counts: found } =
        owners === null
          ? await frequenciesOf(q, queries)
          : await ownerCounts(q, lexemes, owners).then(({ size, counts }) => ({
              size,
              counts: lexemes.map((lexeme) => counts.get(lexeme) ?? 0),
            }));
      const total = Math.max(1, size);
      const counted = queries.map((query, index) => {
        const frequency = found[index] ?? 0;
        return { query, frequency, idf: Math.log(1 + (total - frequency + 0.5) / (frequency + 0.5)) };
      });
      const threshold = Math.max(COMMON_MIN_MEMORIES, COMMON_SHARE * size);
      const rare = counted.filter((entry) => entry.frequency <= threshold);
      const split =
        counted.length > 1 &&
        size > threshold &&
        rare.length > 0 &&
        rare.length < counted.length &&
        Math.max(...rare.map((entry) => entry.frequency)) >= limit;
      return {
        lexemes: counted.map(({ query, idf }) => ({ query, idf })),
        candidates: (split ? rare : counted).map((entry) => entry.query).join(' | '),
      };
    },
  };
}
