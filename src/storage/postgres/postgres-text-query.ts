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

/** As `orTsquery`, for the words of the SQL text expression `text`. */
function orTsqueryOf(text: string, config: 'english' | 'simple'): string {
  return `(SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector('${config}'::regconfig, ${text}))) AS lexeme)`;
}

/**
 * A lexeme (as `to_tsvector` made it) as the text of a one-lexeme `tsquery`: quoted, `'` doubled and
 * `\\` escaped, so that no character of it is read as query syntax. Passed as a parameter (`$n::tsquery`),
 * its value is known when the statement is planned, and the planner can use the GIN index on `fts`
 * (it cannot for a `tsquery` computed inside the statement).
 */
export function lexemeQuery(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** The text of the `tsquery` that ORs `lexemes` (each quoted as by `lexemeQuery`); null for none, which matches nothing. */
export function orLexemeQuery(lexemes: readonly string[]): string | null {
  return lexemes.length === 0 ? null : lexemes.map(lexemeQuery).join(' | ');
}
