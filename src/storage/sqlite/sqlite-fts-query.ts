/**
 * An FTS5 MATCH expression that ORs the terms, each one double-quoted (inner quotes doubled), so no
 * user text can be read as FTS5 syntax (`AND`, `NEAR`, `-`, `*`, `:`, `"`). Null when nothing is left to match.
 */
export function ftsQuery(terms: readonly string[]): string | null {
  const quoted = terms
    .map((term) => term.replaceAll('\u0000', '').trim())
    .filter((term) => term.length > 0)
    .map((term) => `"${term.replaceAll('"', '""')}"`);
  return quoted.length === 0 ? null : quoted.join(' OR ');
}
