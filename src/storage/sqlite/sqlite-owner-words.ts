import Database from 'better-sqlite3';
import { porterStem } from '../../core/recall/porter-stem.js';

/**
 * The word counts of migrations 16 and 19 (ADR 25): how many memories of each owner key hold each stem
 * of the full-text index (keyed by the owner key's number in `memory_word_owners`), and how many memories
 * (and tokens) each owner key has. Triggers on `memories` keep them in the transaction of every write, so
 * they are exact at every read. A viewer's count of a word is the sum over the owner keys it may see: no
 * count depends on a memory the viewer may not see.
 */
export interface SqliteOwnerWords {
  /**
   * For each term, the memories of `owners` the full-text index finds it in; and their number and
   * tokens. A term the tokenizer splits into several words (`e-mail`: a phrase for FTS5) counts as its
   * rarest word, an upper bound on the phrase's count; a term with no word counts 0.
   */
  counts(terms: readonly string[], owners: readonly string[]): VisibleCounts;
  /**
   * The counts of `terms` among `owners` as the last `counts` call read them, when that call counted
   * each of them among the same owners and nothing was written since (by this connection: no row
   * changed; by another: no commit); null otherwise. Taken once: a second call answers null. For a
   * search that follows its caller's count of the same terms in the same transaction (extraction's
   * related-memory search: ADR 19, session 10), which a rollback cannot come between.
   */
  countedBefore(terms: readonly string[], owners: readonly string[]): VisibleCounts | null;
  /** The stems the full-text index makes of `term`, in order (none for a term without a word). */
  stems(term: string): readonly string[];
}

export interface VisibleCounts {
  memories: number;
  tokens: number;
  counts: number[];
}

/** Terms whose stems are remembered. */
const CACHED_TERMS = 10_000;

export function createSqliteOwnerWords(database: Database.Database): SqliteOwnerWords {
  let tokenizer: {
    put: Database.Statement<[string]>;
    terms: Database.Statement<[], string>;
    clear: Database.Statement;
  } | null = null;
  const stemsOf = new Map<string, readonly string[]>();
  let statements: {
    counted: Database.Statement<
      { stems: string; owners: string },
      { stem: string | null; memories: number | null; tokens: number | null }
    >;
    changes: Database.Statement<[], number>;
    version: Database.Statement<[], number>;
  } | null = null;
  /**
   * The last counts read, and what the database was then: this connection's rows changed so far
   * (`total_changes()`: every write, a trigger's through the statement that fired it) and the other
   * connections' commits (`data_version`). A recall counts its words twice (the full-text leg, then
   * the calibrated relevance): the second read is this, while nothing was written in between.
   */
  let last: { key: string; changes: number; version: number; counts: VisibleCounts } | null = null;
  /**
   * The last counts read, by term, for `countedBefore`; inside a transaction too, and then given only inside one:
   * a `ROLLBACK` moves neither mark, so counts read before it would otherwise be given after it (session 10's
   * attack). A rollback and a new transaction between the count and the search are not told apart: the only
   * caller (extraction) counts and searches in one step, under the channel's lock.
   */
  let latest: {
    inTransaction: boolean;
    owners: string;
    changes: number;
    version: number;
    memories: number;
    tokens: number;
    byTerm: Map<string, number>;
  } | null = null;

  /**
   * The index's own tokenizer, on a connection of its own (an in-memory database, so a read never
   * writes to the store): the stems are the index's by construction, not an imitation of them.
   */
  function tokenize(term: string): readonly string[] {
    if (tokenizer === null) {
      const scratch = new Database(':memory:');
      scratch.exec(`CREATE VIRTUAL TABLE words USING fts5(
          text, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'row');`);
      tokenizer = {
        put: scratch.prepare('INSERT INTO words (rowid, text) VALUES (1, ?)'),
        terms: scratch.prepare<[], string>('SELECT term FROM word_terms').pluck(),
        clear: scratch.prepare("INSERT INTO words (words) VALUES ('delete-all')"),
      };
    }
    tokenizer.put.run(term);
    try {
      return tokenizer.terms.all();
    } finally {
      tokenizer.clear.run();
    }
  }

  function stems(term: string): readonly string[] {
    // A lower-case ASCII word is one token, stemmed by `porterStem` exactly as the index's porter
    // tokenizer stems it (`sqlite-porter-stem.test.ts`; FTS5 leaves tokens over 64 bytes alone): no
    // statement at all, so a read-only recall runs no INSERT, not even into the tokenizer's table. A word with "yy"
    // is where the two still part ("sayyed": "sayi" here, "sai" in the index; the counts' inserts leave such words to
    // the tokenizer too): it goes to the index's tokenizer, or its count would read 0 and hide its memories.
    if (/^[a-z0-9]{1,64}$/.test(term) && !term.includes('yy')) return [porterStem(term)];
    const known = stemsOf.get(term);
    if (known) return known;
    const found = tokenize(term);
    stemsOf.set(term, found);
    if (stemsOf.size > CACHED_TERMS) stemsOf.delete(stemsOf.keys().next().value ?? '');
    return found;
  }

  function prepared() {
    statements ??= {
      // The owners' number of memories and tokens (the row without a stem), then each asked stem's
      // memories among them: one statement.
      counted: database.prepare(
        `SELECT NULL AS stem, SUM(memories) AS memories, SUM(tokens) AS tokens FROM memory_word_owners
          WHERE owner IN (SELECT value FROM json_each(@owners))
        UNION ALL
        SELECT w.stem AS stem, SUM(w.memories) AS memories, NULL AS tokens
          FROM memory_word_owners o JOIN memory_words w ON w.owner = o.id
          WHERE w.stem IN (SELECT value FROM json_each(@stems)) AND o.owner IN (SELECT value FROM json_each(@owners))
          GROUP BY w.stem`,
      ),
      // Two statements: `pragma_data_version` as a table costs more than both.
      changes: database.prepare<[], number>('SELECT total_changes()').pluck(),
      version: database.prepare<[], number>('PRAGMA data_version').pluck(),
    };
    return statements;
  }

  /** Remembers `counted`, the counts of `terms` among the owners of `ownerList` read at `now`, for `countedBefore`. */
  function keep(
    terms: readonly string[],
    ownerList: string,
    now: { changes: number; version: number },
    counted: VisibleCounts,
  ) {
    const byTerm = new Map(terms.map((term, index) => [term, counted.counts[index] ?? 0]));
    latest = {
      inTransaction: database.inTransaction,
      owners: ownerList,
      ...now,
      memories: counted.memories,
      tokens: counted.tokens,
      byTerm,
    };
  }

  return {
    stems,
    countedBefore(terms, owners) {
      const kept = latest;
      latest = null;
      if (kept === null || kept.owners !== JSON.stringify(owners)) return null;
      if (kept.inTransaction !== database.inTransaction) return null;
      if (!terms.every((term) => kept.byTerm.has(term))) return null;
      const { changes, version } = prepared();
      if (kept.changes !== (changes.get() ?? 0) || kept.version !== (version.get() ?? 0)) return null;
      return { memories: kept.memories, tokens: kept.tokens, counts: terms.map((term) => kept.byTerm.get(term) ?? 0) };
    },
    counts(terms, owners) {
      const { counted: read, changes, version } = prepared();
      const ownerList = JSON.stringify(owners);
      const key = `${JSON.stringify(terms)}\u0000${ownerList}`;
      const now = { changes: changes.get() ?? 0, version: version.get() ?? 0 };
      if (last !== null && last.key === key && last.changes === now.changes && last.version === now.version) {
        keep(terms, ownerList, now, last.counts);
        return { ...last.counts, counts: [...last.counts.counts] };
      }
      // The full-text statement drops NUL from a term (`ftsQuery`): its count is that of the term without them, or a
      // count of 0 for words the statement finds would let the search return before it (attack12).
      const stemmed = terms.map((term) => stems(term.replaceAll('\u0000', '')));
      const asked = [...new Set(stemmed.flat())];
      const found = new Map<string, number>();
      let size: { memories: number | null; tokens: number | null } | undefined;
      for (const row of read.all({ stems: JSON.stringify(asked), owners: ownerList })) {
        if (row.stem === null) size = row;
        else found.set(row.stem, row.memories ?? 0);
      }
      const counted = {
        memories: size?.memories ?? 0,
        tokens: size?.tokens ?? 0,
        counts: stemmed.map((parts) =>
          parts.length === 0 ? 0 : Math.min(...parts.map((stem) => found.get(stem) ?? 0)),
        ),
      };
      // Counts read inside a transaction may hold its writes, which a rollback undoes without moving
      // either mark: only counts of committed rows are remembered.
      if (!database.inTransaction) last = { key, ...now, counts: { ...counted, counts: [...counted.counts] } };
      keep(terms, ownerList, now, counted);
      return counted;
    },
  };
}
