/**
 * SQL for a `tsquery` that ORs the words of `$n` (a `text[]` parameter) under text search
 * configuration `config`: the words are turned into lexemes by `to_tsvector` (the configuration's
 * stemming and stop words, as the indexed text), and each lexeme is quoted (`'` doubled, `\` escaped)
 * before the lexemes are joined with `|` and read as a `tsquery`. No user text is ever read as query
 * syntax (`&`, `!`, `<->`, `:*`, parentheses); NULL when no lexeme is left, which matches nothing.
 */
export function orTsquery(parameter: number, config: 'english' | 'simple'): string {
  return orTsqueryOf(`array_to_string($${parameter}::text[], ' ')`, config);
}

/** As `orTsquery`, for the words of the SQL text expression `text` (a column, or an `unnest` of a parameter). */
export function orTsqueryOf(text: string, config: 'english' | 'simple'): string {
  return `(SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector('${config}'::regconfig, ${text}))) AS lexeme)`;
}

/**
 * SQL for the rows `(query tsquery, idf float8)`: each distinct lexeme of the words of `$n` as a
 * one-lexeme `tsquery` (quoted as in `orTsquery`), with its BM25 inverse document frequency among the
 * rows of `table` (`ln(1 + (N - df + 0.5) / (df + 0.5))`, df counted through the GIN index, N from the
 * planner's row estimate, or counted up to 100,000 rows when that is lower). `ts_rank` alone does not
 * weigh a word by its rarity; summing `idf x ts_rank` per lexeme does, as BM25 does.
 */
export function weightedLexemes(parameter: number, config: 'english' | 'simple', table: string): string {
  return `(WITH lexemes AS (
      SELECT DISTINCT ('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery AS query
      FROM unnest(tsvector_to_array(to_tsvector('${config}'::regconfig, array_to_string($${parameter}::text[], ' ')))) AS lexeme
    ),
    total AS (
      SELECT GREATEST(1, (SELECT reltuples FROM pg_class WHERE oid = '${table}'::regclass),
        (SELECT count(*) FROM (SELECT 1 FROM ${table} LIMIT 100000) AS counted)) AS n
    )
    SELECT lexemes.query, ln(1 + (total.n - found.df + 0.5) / (found.df + 0.5)) AS idf
    FROM lexemes, total, LATERAL (SELECT count(*) AS df FROM ${table} WHERE fts @@ lexemes.query) AS found)`;
}
