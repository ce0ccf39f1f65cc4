import type Database from 'better-sqlite3';
import { ftsQuery } from './sqlite-fts-query.js';
import type { SqliteOwnerWords, VisibleCounts } from './sqlite-owner-words.js';
import { placeholders } from './sqlite-vector-index.js';

/** BM25's constants, those of FTS5's `bm25()`. */
const K1 = 1.2;
const B = 0.75;

/** A full-text search ranked over what its owners may see (see {@link createSqliteVisibleRanking}). */
export interface VisibleSearch {
  rare: readonly string[];
  common: readonly string[];
  owners: readonly string[];
  limit: number;
  includeFaded: boolean;
  /**
   * The owners' counts of `rare` then `common` (`SqliteOwnerWords.counts`), when the caller has them
   * already: read again otherwise.
   */
  visible?: VisibleCounts | undefined;
  /**
   * Check each occurrence's owner and state in the owner index's entry found by the memory's id (one
   * seek an occurrence; the default), instead of seeking by id, owner and state together (false: the
   * planner's own choice, a seek per owner asked, each occurrence; kept as the reference the tests
   * compare with). The same rows in the same order (ADR 19 and ADR 25, session 9).
   */
  seekById?: boolean | undefined;
}

export interface SqliteVisibleRanking {
  search(search: VisibleSearch): Array<{ id: number; score: number }>;
}

/**
 * The full-text leg of a search among some owners' memories, ranked by a BM25 whose statistics are
 * those of these owners' memories only (ADR 25): their number, their average length and how many of
 * them hold each term, from the word counts of migration 16. FTS5's `bm25()` takes its statistics from
 * the whole index, so a memory of another owner holding a word would move the order and the scores.
 *
 * FTS5 is used for matching and for what it knows of each matching memory: one statement a rare term
 * (its matches among the owners' searchable memories). Each memory's length comes with its owner from
 * the owner index (`memories.tokens`, kept by the word-count triggers: migration 20, ADR 25 session 7),
 * no longer from the index's document sizes joined after the owner filter. A term of one word (what the index stems it to: nearly
 * every term) is read from an `fts5vocab` table of type `instance` over the index, a row an occurrence:
 * the term's frequency in a memory is its number of rows (ADR 25, session 6), each row one number (the
 * memory's id and length packed: ADR 25, session 8). A term the tokenizer
 * splits into several words (a phrase for FTS5) is matched by `MATCH`, its frequency solved from two
 * `bm25()` values with column weights 1 and 2 (they differ only by the frequency: see `frequency`);
 * `bm25()` costs a second pass over the term's whole posting list and a document size a match.
 * A very common term only scores the memories the rarer ones found, as before, and counts as found
 * once in each (its frequency is not read, so its posting list is not scored whole; its weight is
 * small by definition).
 */
export function createSqliteVisibleRanking(database: Database.Database, words: SqliteOwnerWords): SqliteVisibleRanking {
  const byTerm = new Map<string, Database.Statement<unknown[], TermMatch>>();
  const byWord = new Map<string, Database.Statement<unknown[], WordOccurrence>>();
  const byWordPacked = new Map<string, Database.Statement<unknown[], number | null>>();
  let averages: Database.Statement<[], Buffer> | null = null;
  let common: Database.Statement<[string], number> | null = null;
  let instances = false;

  /**
   * The owners' searchable memories (`m`), active only unless `includeFaded`. With `seekById`, the
   * owner and the state are no seek keys (a unary `+`): the join seeks the owner index once by the
   * memory's id and reads both from the entry it finds, where the planner otherwise seeks it once per
   * owner asked (`id = ? AND owner = ? AND faded_at = ?`, each owner in turn). The partial index's
   * condition stays a term, so the planner may use the index, and reads no table row for it.
   */
  function stateOf(ownerCount: number, includeFaded: boolean, seekById = false): string {
    const column = (name: string) => (seekById ? `+m.${name}` : `m.${name}`);
    const searchable = '(m.archived_at IS NULL OR m.faded_at IS NOT NULL)';
    const state = includeFaded ? searchable : `${searchable} AND ${column('faded_at')} IS NULL`;
    return `${state} AND ${column('owner')} IN (${placeholders(ownerCount)})`;
  }

  /** The key of a statement made for these owners, state and seek. */
  function keyOf(ownerCount: number, includeFaded: boolean, seekById: boolean): string {
    return `${ownerCount}:${includeFaded}:${seekById}`;
  }

  function termStatement(ownerCount: number, includeFaded: boolean, seekById: boolean) {
    const key = keyOf(ownerCount, includeFaded, seekById);
    let statement = byTerm.get(key);
    if (!statement) {
      // Rows as arrays (id, bm25 with weights 1, with weights 2, length): a term's matches may be many.
      statement = database
        .prepare<unknown[], TermMatch>(
          `SELECT m.id AS id, bm25(memories_fts, 1.0, 1.0) AS one, bm25(memories_fts, 2.0, 2.0) AS two,
            m.tokens AS length
          FROM memories_fts
          CROSS JOIN memories m INDEXED BY memories_searchable_owner ON m.id = memories_fts.rowid
          WHERE memories_fts MATCH ? AND ${stateOf(ownerCount, includeFaded, seekById)}`,
        )
        .raw();
      byTerm.set(key, statement);
    }
    return statement;
  }

  /**
   * A word's occurrences among the owners' searchable memories: a row an occurrence (memory id, its
   * length), from the index's `instance` vocabulary (a temporary table of this connection, made on
   * first use outside a transaction: it stores nothing, it reads the index).
   */
  function wordStatement(ownerCount: number, includeFaded: boolean, seekById: boolean) {
    const key = keyOf(ownerCount, includeFaded, seekById);
    let statement = byWord.get(key);
    if (!statement) {
      statement = database
        .prepare<unknown[], WordOccurrence>(
          `SELECT m.id AS id, m.tokens AS length
          FROM temp.memories_fts_instances i
          CROSS JOIN memories m INDEXED BY memories_searchable_owner ON m.id = i.doc
          WHERE i.term = ? AND ${stateOf(ownerCount, includeFaded, seekById)}`,
        )
        .raw();
      byWord.set(key, statement);
    }
    return statement;
  }

  /**
   * The word statement's rows as one number each, `id * 2^21 + length` (see {@link addPacked}):
   * better-sqlite3 hands back a number for a row instead of an array of two, most of the cost of a row
   * once SQLite made it. A row whose id or length does not fit (an id of 2^32 or more, a length of 2^21
   * or more: the sum would pass 2^53) comes back null, and the word is read by `wordStatement` instead.
   */
  function packedWordStatement(ownerCount: number, includeFaded: boolean, seekById: boolean) {
    const key = keyOf(ownerCount, includeFaded, seekById);
    let statement = byWordPacked.get(key);
    if (!statement) {
      statement = database
        .prepare<unknown[], number | null>(
          `SELECT CASE WHEN m.id BETWEEN 0 AND ${PACKED_IDS - 1} AND m.tokens BETWEEN 0 AND ${PACKED_LENGTHS - 1}
              THEN m.id * ${PACKED_LENGTHS} + m.tokens END
          FROM temp.memories_fts_instances i
          CROSS JOIN memories m INDEXED BY memories_searchable_owner ON m.id = i.doc
          WHERE i.term = ? AND ${stateOf(ownerCount, includeFaded, seekById)}`,
        )
        .pluck();
      byWordPacked.set(key, statement);
    }
    return statement;
  }

  /**
   * Whether the `instance` vocabulary is there, made now if it is not and no transaction is open: made
   * inside one, a rollback would take it away under the statements prepared on it (the term's `MATCH`
   * statement ranks the same meanwhile).
   */
  function instancesReady(): boolean {
    if (!instances && !database.inTransaction) {
      database.exec(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_fts_instances USING fts5vocab(main, 'memories_fts', 'instance')",
      );
      instances = true;
    }
    return instances;
  }

  /** The average length of a memory over the whole index, as `bm25()` computes it. */
  function indexAverageLength(): number {
    averages ??= database.prepare<[], Buffer>('SELECT block FROM memories_fts_data WHERE id = 1').pluck();
    const record = averages.get();
    if (!record) return 1;
    const [rows = 0, ...columns] = varints(record);
    return rows > 0 ? columns.reduce((sum, size) => sum + size, 0) / rows : 1;
  }

  /**
   * The owners' searchable memories holding `term`, each given to `add` once with its length and the
   * term's frequency in it, in the order the index yields them. `indexAverage` is read (once a search)
   * only for a term of several words.
   */
  function matchesOf(
    term: string,
    query: string,
    owners: readonly string[],
    includeFaded: boolean,
    seekById: boolean,
    indexAverage: () => number,
    add: (id: number, length: number, times: number) => void,
  ): void {
    const stems = term.includes('\u0000') ? [] : words.stems(term);
    if (stems.length === 1 && instancesReady()) {
      const packed = packedWordStatement(owners.length, includeFaded, seekById).all(stems[0], ...owners);
      if (packed.includes(null))
        addOccurrences(wordStatement(owners.length, includeFaded, seekById).all(stems[0], ...owners), add);
      else addPacked(packed as number[], add);
      return;
    }
    const average = indexAverage();
    // One row a memory.
    for (const [id, one, two, length] of termStatement(owners.length, includeFaded, seekById).all(query, ...owners)) {
      add(id, length, frequency(one, two, length, average));
    }
  }

  return {
    search({ rare, common: commonTerms, owners, limit, includeFaded, visible: counted, seekById = true }) {
      if (rare.length === 0 || owners.length === 0) return [];
      const visible = counted ?? words.counts([...rare, ...commonTerms], owners);
      const memories = Math.max(1, visible.memories);
      const averageLength = visible.tokens > 0 ? visible.tokens / memories : 1;
      let indexAverage: number | null = null;
      const average = () => {
        indexAverage ??= indexAverageLength();
        return indexAverage;
      };
      const idf = (index: number) => {
        const containing = visible.counts[index] ?? 0;
        const weight = Math.log((memories - containing + 0.5) / (containing + 0.5));
        return weight > 0 ? weight : 1e-6;
      };
      const found = new Map<number, { length: number; score: number }>();
      rare.forEach((term, index) => {
        const query = ftsQuery([term]);
        if (query === null) return;
        const weight = idf(index);
        matchesOf(term, query, owners, includeFaded, seekById, average, (id, length, times) => {
          const entry = found.get(id);
          if (entry) entry.score += weight * saturated(times, length, averageLength);
          else found.set(id, { length, score: weight * saturated(times, length, averageLength) });
        });
      });
      const rareQuery = ftsQuery(rare);
      if (rareQuery !== null && found.size > 0) {
        common ??= database
          .prepare<[string], number>('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?')
          .pluck();
        commonTerms.forEach((term, offset) => {
          const query = ftsQuery([term]);
          if (query === null) return;
          const weight = idf(rare.length + offset);
          for (const id of common?.all(`${query} AND (${rareQuery})`) ?? []) {
            const entry = found.get(id);
            if (entry) entry.score += weight * saturated(1, entry.length, averageLength);
          }
        });
      }
      return best(found, limit);
    },
  };
}

/** Lengths a packed word row holds (2^21), and ids (2^32): an id times 2^21 plus a length stays below 2^53. */
const PACKED_LENGTHS = 2 ** 21;
const PACKED_IDS = 2 ** 32;

/** Whether packed word rows come by memory id (ascending): a packed row orders as its id does. */
function inPackedOrder(rows: readonly number[]): boolean {
  for (let index = 1; index < rows.length; index++) {
    if ((rows[index] as number) < (rows[index - 1] as number)) return false;
  }
  return true;
}

/**
 * Gives `add` each memory of a word's packed occurrence rows once, with its length and the word's
 * frequency in it (its number of rows), in the order of the rows' first occurrences.
 */
function addPacked(rows: readonly number[], add: (id: number, length: number, times: number) => void): void {
  const unpack = (value: number, times: number) => {
    const id = Math.floor(value / PACKED_LENGTHS);
    add(id, value - id * PACKED_LENGTHS, times);
  };
  if (!inPackedOrder(rows)) {
    const times = new Map<number, number>();
    for (const value of rows) times.set(value, (times.get(value) ?? 0) + 1);
    for (const [value, count] of times) unpack(value, count);
    return;
  }
  // A memory's occurrences are consecutive rows (the index lists a word's memories by id), each the
  // same number: their number is the frequency, without a map of the word's matches.
  let index = 0;
  while (index < rows.length) {
    const value = rows[index] as number;
    let times = 1;
    while (rows[index + times] === value) times++;
    unpack(value, times);
    index += times;
  }
}

/** The same as {@link addPacked} for occurrence rows as arrays (id, length). */
function addOccurrences(
  rows: readonly WordOccurrence[],
  add: (id: number, length: number, times: number) => void,
): void {
  if (!inMemoryOrder(rows)) {
    const matches = new Map<number, { length: number; times: number }>();
    for (const [id, length] of rows) {
      const match = matches.get(id);
      if (match) match.times++;
      else matches.set(id, { length, times: 1 });
    }
    for (const [id, { length, times }] of matches) add(id, length, times);
    return;
  }
  let index = 0;
  while (index < rows.length) {
    const [id, length] = rows[index] as WordOccurrence;
    let times = 1;
    while (rows[index + times]?.[0] === id) times++;
    add(id, length, times);
    index += times;
  }
}

/** Whether a word's occurrence rows come by memory id (ascending), each memory's rows together. */
function inMemoryOrder(rows: readonly WordOccurrence[]): boolean {
  for (let index = 1; index < rows.length; index++) {
    if ((rows[index] as WordOccurrence)[0] < (rows[index - 1] as WordOccurrence)[0]) return false;
  }
  return true;
}

/**
 * The `limit` best of the found memories, by score then id: what sorting them all and keeping the
 * first `limit` gives (the order is total), by keeping the best so far in order instead (a search may
 * find thousands).
 */
function best(found: ReadonlyMap<number, { score: number }>, limit: number): Array<{ id: number; score: number }> {
  const kept: Array<{ id: number; score: number }> = [];
  if (limit <= 0) return kept;
  const before = (left: { id: number; score: number }, right: { id: number; score: number }) =>
    left.score > right.score || (left.score === right.score && left.id < right.id);
  for (const [id, { score }] of found) {
    const hit = { id, score };
    const last = kept[kept.length - 1];
    if (kept.length === limit && last && !before(hit, last)) continue;
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (before(kept[middle] as { id: number; score: number }, hit)) low = middle + 1;
      else high = middle;
    }
    kept.splice(low, 0, hit);
    if (kept.length > limit) kept.pop();
  }
  return kept;
}

/** A word's occurrence: memory id, the memory's length in tokens. */
type WordOccurrence = [id: number, length: number];

/** A term's match: memory id, `bm25()` with column weights 1 and with 2, the memory's length in tokens. */
type TermMatch = [id: number, one: number, two: number, length: number];

/** BM25's term-frequency part for a term found `times` in a memory of `length` tokens. */
function saturated(times: number, length: number, averageLength: number): number {
  return (times * (K1 + 1)) / (times + K1 * (1 - B + (B * length) / averageLength));
}

/**
 * How many times the matched term is in the memory, from `bm25()` with weights 1 and 2: with
 * s(w) = C·w·f / (w·f + K) (C the term's weight over the whole index, K = k1·(1 - b + b·D/avgdl), D
 * the memory's length and avgdl the index's average), 1/s(w) = 1/C + K/(C·f·w), so the two values
 * give 1/C and K/(C·f), hence f. Weights 1 make f a whole number: rounded, it is exact.
 */
function frequency(bm25One: number, bm25Two: number, length: number, indexAverage: number): number {
  const one = 1 / -bm25One;
  const two = 1 / -bm25Two;
  const k = K1 * (1 - B + (B * length) / indexAverage);
  const perTimes = 2 * (one - two);
  if (!(perTimes > 0) || !Number.isFinite(one)) return 1;
  return Math.max(1, Math.round((k * (2 * two - one)) / perTimes));
}

/** The SQLite varints of an FTS5 record (its averages). */
function varints(record: Buffer): number[] {
  const values: number[] = [];
  let index = 0;
  while (index < record.length) {
    let value = 0;
    let read = 0;
    for (;;) {
      const byte = record[index++] ?? 0;
      read++;
      if (read === 9) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    values.push(value);
  }
  return values;
}
