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
