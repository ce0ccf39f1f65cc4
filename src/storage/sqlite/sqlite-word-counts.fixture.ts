import type Database from 'better-sqlite3';

/**
 * Where the word counts of ADR 25 (`memory_words`, `memory_word_owners`, `memories.tokens`) differ from a
 * recount from the full-text index, which holds every memory: each owner key's memories and tokens, each
 * (owner key, stem)'s memories, each memory's length. Empty when they agree.
 */
export function wordCountDifferences(database: Database.Database): string[] {
  database.exec(
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.word_recount USING fts5vocab(main, 'memories_fts', 'instance')",
  );
  const rows = <T>(sql: string) => database.prepare<[], T>(sql).all();
  const differences: string[] = [];
  const compare = (what: string, stored: Map<string, string>, recounted: Map<string, string>) => {
    for (const [key, value] of recounted) {
      if (stored.get(key) !== value) differences.push(`${what} ${key}: stored ${stored.get(key)}, recounted ${value}`);
    }
    for (const [key, value] of stored) {
      if (!recounted.has(key)) differences.push(`${what} ${key}: stored ${value}, recounted none`);
    }
  };
  compare(
    'owner',
    new Map(
      rows<{ owner: string; memories: number; tokens: number }>(
        'SELECT owner, memories, tokens FROM memory_word_owners',
      ).map((row) => [row.owner, `${row.memories}/${row.tokens}`]),
    ),
    new Map(
      rows<{ owner: string; memories: number; tokens: number }>(
        `SELECT m.owner AS owner, count(*) AS memories, IFNULL(SUM(t.tokens), 0) AS tokens FROM memories m
        LEFT JOIN (SELECT doc, count(*) AS tokens FROM temp.word_recount GROUP BY doc) t ON t.doc = m.id
        GROUP BY m.owner`,
      ).map((row) => [row.owner, `${row.memories}/${row.tokens}`]),
    ),
  );
  compare(
    'word',
    new Map(
      rows<{ owner: string; stem: string; memories: number }>(
        `SELECT o.owner AS owner, w.stem AS stem, w.memories AS memories
        FROM memory_words w JOIN memory_word_owners o ON o.id = w.owner`,
      ).map((row) => [`${row.owner} ${row.stem}`, String(row.memories)]),
    ),
    new Map(
      rows<{ owner: string; stem: string; memories: number }>(
        `SELECT m.owner AS owner, v.term AS stem, count(DISTINCT v.doc) AS memories
        FROM temp.word_recount v JOIN memories m ON m.id = v.doc GROUP BY m.owner, v.term`,
      ).map((row) => [`${row.owner} ${row.stem}`, String(row.memories)]),
    ),
  );
  compare(
    'length of memory',
    new Map(
      rows<{ id: number; tokens: number }>('SELECT id, tokens FROM memories').map((row) => [
        `${row.id}`,
        `${row.tokens}`,
      ]),
    ),
    new Map(
      rows<{ id: number; tokens: number }>(
        `SELECT m.id AS id, IFNULL(t.tokens, 0) AS tokens FROM memories m
        LEFT JOIN (SELECT doc, count(*) AS tokens FROM temp.word_recount GROUP BY doc) t ON t.doc = m.id`,
      ).map((row) => [`${row.id}`, `${row.tokens}`]),
    ),
  );
  const unnumbered = rows<{ stale: number }>(
    'SELECT count(*) AS stale FROM memory_words WHERE owner NOT IN (SELECT id FROM memory_word_owners)',
  )[0];
  if (unnumbered && unnumbered.stale > 0) differences.push(`${unnumbered.stale} word rows of no owner key`);
  return differences;
}
