import type Database from 'better-sqlite3';
import { readInTransaction } from './sqlite-database.js';
import { ftsQuery } from './sqlite-fts-query.js';
import type { SqliteOwnerWords, VisibleCounts } from './sqlite-owner-words.js';
import { createSqliteRecallChanges } from './sqlite-recall-changes.js';
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
  /**
   * Whether the audience snapshot may answer (the default): false for consolidation's searches of one memory's
   * rarest words (`maxTerms`), a thousand in a row in a steady cycle, which would read every owner's occurrences
   * of their words into JavaScript arrays where the join reads only the one owner's (session 10: the peak
   * resident set of `mneme bench`'s steady cycle 11-28 MiB higher with them).
   */
  snapshot?: boolean | undefined;
}

export interface SqliteVisibleRanking {
  search(search: VisibleSearch): Array<{ id: number; score: number }>;
  /**
   * Runs `write`, which changes no memory's id, owner, state (archived, faded) or length: recall's touch
   * of active memories (access count, strength, salience, importance, last access). The audience
   * snapshot (see {@link SqliteVisibleRankingOptions}) stays valid through its changes, and only through
   * them: any other write this connection made since the last search drops it as before.
   */
  unchangedBy<T>(write: () => T): T;
  /** Whether the last search's words were filtered by the audience snapshot (tests and measurements). */
  lastSearchHeld(): boolean;
}

export interface SqliteVisibleRankingOptions {
  /**
   * Searches with nothing written in between by another connection (`PRAGMA data_version` unmoved; this
   * connection's own writes are recorded and brought in) after which the owner index is read once into the
   * audience snapshot ({@link AUDIENCE_SNAPSHOT_AFTER}
   * by default; 0: at the first such search; tests only). A negative number: never.
   */
  snapshotAfter?: number;
}

/**
 * Quiet searches before the audience snapshot is read: reading it costs about what a few dozen word
 * statements save, so a store written between most searches keeps the SQL join.
 */
export const AUDIENCE_SNAPSHOT_AFTER = 32;

/**
 * The owner index of the full-text search (`memories_searchable_owner`: each searchable memory's owner key,
 * whether it faded, its length) held in memory by memory id, read in one read transaction: what the
 * word statement's join reads for each occurrence, without the seek (ADR 25, 2026-12-02, session 10).
 */
interface AudienceSnapshot {
  /** The id of entry 0. */
  lowest: number;
  /**
   * Each id's entry (id - lowest): -1 for a memory not searchable (archived, not faded) or none; a
   * searchable one's owner key's number times 2, plus 1 when it faded; -2 (active) or -3 (faded) while
   * its owner key was not read (the keys are read as searches ask for them, each in the snapshot's state).
   */
  states: Int32Array;
  /** Each id's length in tokens (id - lowest). */
  lengths: Uint32Array;
  /** How many entries are searchable (not -1): the bound on how sparse the ids may grow (see `patch`). */
  count: number;
  /** The owner keys read so far, and their numbers (this snapshot's own). */
  owners: Map<string, number>;
}

/** Searches a snapshot must serve before it is dropped for the next one to be read as soon (see `after`). */
const SNAPSHOT_PAYS_AFTER = 64;

/**
 * Ids a snapshot holds: below 2^26 (64 Mi), so that an id and a length (below 2^21) pack into 12 hex
 * digits. The entries are the ids from the lowest searchable to the highest.
 */
const SNAPSHOT_IDS = 2 ** 26;

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
 *
 * A connection that searches again and again with nothing written in between holds the owner index in
 * memory (the audience snapshot, ADR 25, 2026-12-02, session 10): a word is then read from the vocabulary
 * alone (its occurrences' memory ids) and each occurrence's owner key, state and length looked up by id in
 * typed arrays instead of sought in the index (about 1.2 µs an occurrence, two thirds of the statement).
 * The snapshot is the audience filter, so it is exact whenever used: read in a read transaction after the
 * marks, used in one (the search's marks, snapshot and vocabulary reads of one state of the file), brought up to
 * date with this connection's own writes (session 13), dropped when another connection commits (`data_version`);
 * in the connection's own write transactions too, each such search stamped so that a rollback drops it (session
 * 14); the same memories, order and scores as the join.
 */
export function createSqliteVisibleRanking(
  database: Database.Database,
  words: SqliteOwnerWords,
  options: SqliteVisibleRankingOptions = {},
): SqliteVisibleRanking {
  const snapshotAfter = options.snapshotAfter ?? AUDIENCE_SNAPSHOT_AFTER;
  const byTerm = new Map<string, Database.Statement<unknown[], TermMatch>>();
  const byWord = new Map<string, Database.Statement<unknown[], WordOccurrence>>();
  const byWordPacked = new Map<string, Database.Statement<unknown[], number | null>>();
  let averages: Database.Statement<[], Buffer> | null = null;
  let common: Database.Statement<[string], number> | null = null;
  let instances = false;
  let audienceStatements: {
    changes: Database.Statement<[], number>;
    version: Database.Statement<[], number>;
    docs: Database.Statement<[string], number>;
    entries: Database.Statement<[], EntriesRow>;
    owner: Database.Statement<[string, number, number], string | null>;
  } | null = null;
  /** The statements of the record of this connection's changed memories, once made ({@link trackingReady}). */
  let tracking: Tracking | null = null;
  /**
   * What the database was at the last search outside a transaction (this connection's `total_changes()`,
   * the other connections' `data_version`), the searches since then with both unmoved, and the snapshot
   * read under these marks (null until {@link snapshotAfter} such searches).
   */
  let marks: { changes: number; version: number } | null = null;
  let quietSearches = 0;
  let audience: AudienceSnapshot | null = null;
  /**
   * The newest entry of the record of changed memories (ADR 27) that {@link audience} holds; null: read inside a
   * caller's transaction, whose entries a rollback may take back (another connection's commit then drops it).
   */
  let audienceChanges: number | null = null;
  /** The record's newest entry when the marks were last set by another connection's commit (no snapshot held). */
  let quietChanges: number | null = null;
  /** Whether the search runs in this ranking's own read transaction (not a caller's). */
  let ownRead = false;
  const recallChanges = createSqliteRecallChanges(database);
  /**
   * Quiet searches before the next snapshot: {@link snapshotAfter}, doubled (up to 32 times it) each time a
   * snapshot is dropped before it served {@link SNAPSHOT_PAYS_AFTER} searches, back to it when one did: a
   * store written every few dozen searches stops paying for snapshots it drops before they pay back.
   */
  let after = snapshotAfter;
  let served = 0;
  let lastHeld = false;
  /**
   * The stamp written by this ranking's last search in a caller's transaction, until a search outside any
   * transaction finds it in the table (the transaction committed): null when there is none to check.
   */
  let stamped: number | null = null;

  function audienceSql() {
    audienceStatements ??= {
      changes: database.prepare<[], number>('SELECT total_changes()').pluck(),
      version: database.prepare<[], number>('PRAGMA data_version').pluck(),
      // A word's occurrences, a row each (the memory's id), in the index's order: by id.
      docs: database.prepare<[string], number>('SELECT doc FROM temp.memories_fts_instances WHERE term = ?').pluck(),
      // The owner index whole, as the word statement's join reads it (the partial index's condition): each
      // entry as 12 hex digits (the id times 2^22, plus the length times 2, plus 1 when the memory faded),
      // concatenated by SQLite; with the bounds that say whether they fit. A row each would cost ten times
      // as much (a JavaScript array and an owner string an entry: about 0.3 s at 100,000 memories).
      entries: database
        .prepare<[], EntriesRow>(
          `SELECT count(*), min(id), max(id), max(tokens), min(tokens),
            group_concat(printf('%012x', id * ${2 ** 22} + tokens * 2 + (faded_at IS NOT NULL)), '')
          FROM memories INDEXED BY memories_searchable_owner WHERE archived_at IS NULL OR faded_at IS NOT NULL`,
        )
        .raw(),
      // An owner key's memories (every state), as 8 hex digits an id: a range of the index by owner.
      owner: database
        .prepare<[string, number, number], string | null>(
          `SELECT group_concat(printf('%08x', id), '') FROM memories INDEXED BY memories_by_owner
          WHERE owner = ? AND id BETWEEN ? AND ?`,
        )
        .pluck(),
    };
    return audienceStatements;
  }

  /**
   * Makes, once a connection and outside any transaction (a rollback would take them away), the temporary table
   * and triggers that record each memory this connection's writes add, remove, or change in what the owner
   * index holds (owner, archived, faded, length). They are of this connection only (a `TEMP` trigger), and of
   * the writing transaction: a rollback takes the record back with the write.
   */
  function trackingReady(): Tracking | null {
    if (!tracking && !database.inTransaction) {
      // The triggers record only once this connection read a snapshot (`recording`, set in the read's transaction):
      // a connection that never holds one (an import that only writes) keeps no record (ADR 25, session 14).
      const recording = `(SELECT recording FROM temp.${STAMP_TABLE})`;
      database.exec(`CREATE TEMP TABLE IF NOT EXISTS ${CHANGED_TABLE} (id INTEGER PRIMARY KEY);
        CREATE TEMP TABLE IF NOT EXISTS ${STAMP_TABLE} (stamp INTEGER NOT NULL, recording INTEGER NOT NULL);
        INSERT INTO temp.${STAMP_TABLE} (stamp, recording)
          SELECT 0, 0 WHERE NOT EXISTS (SELECT 1 FROM temp.${STAMP_TABLE});
        CREATE TEMP TRIGGER IF NOT EXISTS ${TRIGGERS[0]} AFTER INSERT ON main.memories WHEN ${recording} BEGIN
          INSERT OR IGNORE INTO ${CHANGED_TABLE} (id) VALUES (NEW.id);
        END;
        CREATE TEMP TRIGGER IF NOT EXISTS ${TRIGGERS[1]} AFTER DELETE ON main.memories WHEN ${recording} BEGIN
          INSERT OR IGNORE INTO ${CHANGED_TABLE} (id) VALUES (OLD.id);
        END;
        CREATE TEMP TRIGGER IF NOT EXISTS ${TRIGGERS[2]}
        AFTER UPDATE OF id, owner, archived_at, faded_at, tokens ON main.memories
        WHEN (OLD.id IS NOT NEW.id OR OLD.owner IS NOT NEW.owner OR OLD.archived_at IS NOT NEW.archived_at
          OR OLD.faded_at IS NOT NEW.faded_at OR OLD.tokens IS NOT NEW.tokens) AND ${recording}
        BEGIN
          INSERT OR IGNORE INTO ${CHANGED_TABLE} (id) VALUES (OLD.id);
          INSERT OR IGNORE INTO ${CHANGED_TABLE} (id) VALUES (NEW.id);
        END;`);
      tracking = {
        // The memories changed since the last search, up to a bound.
        changed: database.prepare<[number], number>(`SELECT id FROM temp.${CHANGED_TABLE} LIMIT ?`).pluck(),
        forget: database.prepare(`DELETE FROM temp.${CHANGED_TABLE}`),
        // The triggers there: a schema change of this connection can drop them (a rebuild of `memories`).
        triggers: database
          .prepare<[], number>(
            `SELECT count(*) FROM temp.sqlite_master WHERE type = 'trigger' AND name IN (${TRIGGERS.map((name) => `'${name}'`).join(', ')})`,
          )
          .pluck(),
        // One memory's entry as the owner index holds it (its condition: searchable), or its absence.
        entry: database
          .prepare<[number], EntryRow>(
            `SELECT owner, (archived_at IS NULL OR faded_at IS NOT NULL) AS searchable, faded_at IS NOT NULL AS faded,
              tokens FROM memories WHERE id = ?`,
          )
          .raw(),
        stamp: database.prepare<[], number>(`SELECT stamp FROM temp.${STAMP_TABLE}`).pluck(),
        setStamp: database.prepare<[number]>(`UPDATE temp.${STAMP_TABLE} SET stamp = ?`),
        record: database.prepare(`UPDATE temp.${STAMP_TABLE} SET recording = 1 WHERE recording = 0`),
      };
    }
    return tracking;
  }

  /**
   * The audience snapshot, valid now: called in a read transaction (its reads and the searches' are of one
   * state of the file), never in a write transaction. Null: search by the SQL join. The marks are read
   * before the owner index, in the same transaction, so a snapshot is never taken for newer than it is.
   */
  function audienceNow(changes: Tracking): AudienceSnapshot | null {
    if (snapshotAfter < 0) return null;
    const sql = audienceSql();
    let now = { changes: sql.changes.get() ?? 0, version: sql.version.get() ?? 0 };
    // This connection's own writes only (another's commit moves `data_version`): a snapshot held is brought up to
    // date with the memories they changed (ADR 25, 2026-12-03, session 13), or dropped when they are too many;
    // without one they do not start the quiet searches' count again (the snapshot read later holds them).
    if (marks !== null && marks.version === now.version && marks.changes !== now.changes) {
      // The triggers gone (this connection dropped or rebuilt `memories`): its writes since were not recorded. The
      // snapshot is dropped and the count starts again; the triggers are made again before the next search's read
      // transaction, so that no snapshot is read while this connection's writes would go unrecorded (attack13b).
      if (changes.triggers.get() !== TRIGGERS.length) {
        tracking = null;
        marks = null;
        audience = null;
        quietSearches = 0;
        return null;
      }
      if (audience !== null && !patch(audience, changes)) {
        quietSearches = 0;
        after = served < SNAPSHOT_PAYS_AFTER ? Math.min(after * 2, snapshotAfter * 32) : snapshotAfter;
        audience = null;
      }
      changes.forget.run();
      now = { changes: sql.changes.get() ?? 0, version: now.version };
      marks = now;
    }
    // Another connection's commit (ADR 27): a snapshot held is brought up to date with the memories the record says
    // changed since it was (this connection's committed writes among them), in this ranking's own read transaction.
    if (marks !== null && marks.version !== now.version && ownRead && audience !== null && audienceChanges !== null) {
      const found = recallChanges.since(audienceChanges, PATCH_MAX);
      if (found !== null && patchIds(audience, found.ids, changes)) {
        changes.forget.run();
        audienceChanges = found.latest;
        now = { changes: sql.changes.get() ?? 0, version: now.version };
        marks = now;
      }
    }
    if (marks === null || marks.changes !== now.changes || marks.version !== now.version) {
      // Without a snapshot, another connection's commit that changed no memory (a recall's touch) does not start the
      // quiet searches' count again.
      const latest = ownRead ? recallChanges.latest() : null;
      const quiet = audience === null && marks?.changes === now.changes && latest !== null && latest === quietChanges;
      marks = now;
      quietChanges = latest;
      if (!quiet) {
        quietSearches = 0;
        if (audience) after = served < SNAPSHOT_PAYS_AFTER ? Math.min(after * 2, snapshotAfter * 32) : snapshotAfter;
        audience = null;
      }
    }
    if (audience) {
      served++;
      return audience;
    }
    quietSearches++;
    if (quietSearches <= after) return null;
    // What was recorded before this state of the file is in the snapshot read now; from here on every change is.
    changes.record.run();
    changes.forget.run();
    marks = { changes: sql.changes.get() ?? 0, version: now.version };
    audienceChanges = ownRead ? recallChanges.latest() : null;
    audience = readAudienceOrNull(sql.entries);
    served = 1;
    // Not held (ids too sparse): count again, so that it is not tried at every search.
    if (!audience) quietSearches = 0;
    return audience;
  }

  /** Which entries of the snapshot a search may see: its owners' (read now if not yet), active and (with `includeFaded`) faded. */
  function audienceOf(snapshot: AudienceSnapshot, owners: readonly string[], includeFaded: boolean): Uint8Array {
    for (const owner of owners) if (!snapshot.owners.has(owner)) readOwner(snapshot, owner, audienceSql().owner);
    const allowed = new Uint8Array(snapshot.owners.size * 2);
    for (const owner of owners) {
      const number = snapshot.owners.get(owner) as number;
      allowed[number * 2] = 1;
      if (includeFaded) allowed[number * 2 + 1] = 1;
    }
    return allowed;
  }

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
    held: { snapshot: AudienceSnapshot; allowed: Uint8Array } | null,
  ): void {
    const stems = term.includes('\u0000') ? [] : words.stems(term);
    if (stems.length === 1 && held) {
      addVisible(audienceSql().docs.all(stems[0] as string), held.snapshot, held.allowed, add);
      return;
    }
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

  /**
   * Runs `ranked` with the audience snapshot when one may be used. Outside any transaction, the search runs in a
   * read transaction of its own (the marks, the snapshot and every word's occurrences of one state of the file).
   * Inside a caller's transaction (extraction's batch, ADR 19) the snapshot is brought up to date with the
   * transaction's own writes as with any of this connection's, and may be read there (ADR 25, 2026-12-03,
   * session 14): the search stamps the transaction ({@link STAMP_TABLE}), and a later search that finds another
   * stamp (the writes rolled back, with the record of them the search read) drops the snapshot. Before this
   * connection made its temporary tables (a first search in a transaction: a rollback would take them away),
   * by the SQL join.
   */
  function withAudience<T>(ranked: (snapshot: AudienceSnapshot | null) => T): T {
    if (snapshotAfter < 0) return ranked(null);
    if (database.inTransaction) {
      const changes = instances ? tracking : null;
      if (changes === null) return ranked(null);
      try {
        checkStamp(changes, false);
        const result = ranked(audienceNow(changes));
        stamp(changes);
        return result;
      } catch (error) {
        forgetAudience();
        throw error;
      }
    }
    const changes = instancesReady() ? trackingReady() : null;
    if (changes === null) return ranked(null);
    return readInTransaction(database, () => {
      checkStamp(changes, true);
      ownRead = true;
      try {
        return ranked(audienceNow(changes));
      } finally {
        ownRead = false;
      }
    });
  }

  /** Drops the snapshot and its marks: the next search counts its quiet searches from the start. */
  function forgetAudience(): void {
    audience = null;
    marks = null;
    quietSearches = 0;
  }

  /**
   * Drops the snapshot when the stamp this ranking wrote last in a caller's transaction is not the table's (a
   * rollback took it back); outside any transaction, a stamp found there was committed and is checked no more.
   */
  function checkStamp(changes: Tracking, outside: boolean): void {
    if (stamped === null) return;
    if (changes.stamp.get() !== stamped) forgetAudience();
    if (outside) stamped = null;
  }

  /** Stamps the caller's transaction with a new number, or drops the snapshot when the transaction ended. */
  function stamp(changes: Tracking): void {
    if (!database.inTransaction) {
      // Ended inside the search (an error that rolls the whole transaction back): what it read is gone.
      forgetAudience();
      stamped = null;
      return;
    }
    stamps++;
    // The stamp is no write of a memory: marks that held the file as it was before it still do.
    const sql = audienceSql();
    const before = sql.changes.get() ?? 0;
    changes.setStamp.run(stamps);
    if (marks !== null && marks.changes === before) marks.changes = sql.changes.get() ?? 0;
    stamped = stamps;
  }

  // The temporary tables made now, outside any transaction, so that a connection whose searches all run in its
  // own transactions (extraction's batches) may hold the snapshot too (ADR 25, 2026-12-03, session 14).
  // (A file opened at an older schema, without the owner index's columns, by a test of the migrations: at the first
  // search, as before.)
  const ownerIndexColumns = database
    .prepare<[], number>("SELECT count(*) FROM pragma_table_info('memories') WHERE name IN ('faded_at', 'tokens')")
    .pluck();
  if (snapshotAfter >= 0 && !database.inTransaction && ownerIndexColumns.get() === 2) {
    instancesReady();
    trackingReady();
  }

  return {
    unchangedBy(write) {
      if (marks === null) return write();
      const sql = audienceSql();
      const before = sql.changes.get() ?? 0;
      const result = write();
      if (marks.changes === before) marks.changes = sql.changes.get() ?? 0;
      return result;
    },

    lastSearchHeld: () => lastHeld,

    search(search) {
      lastHeld = false;
      if (search.rare.length === 0 || search.owners.length === 0) return [];
      if (search.snapshot === false) return rank(search, null);
      return withAudience((snapshot) => {
        lastHeld = snapshot !== null;
        return rank(search, snapshot);
      });
    },
  };

  function rank(
    { rare, common: commonTerms, owners, limit, includeFaded, visible: counted, seekById = true }: VisibleSearch,
    snapshot: AudienceSnapshot | null,
  ): Array<{ id: number; score: number }> {
    const held = snapshot && { snapshot, allowed: audienceOf(snapshot, owners, includeFaded) };
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
      matchesOf(
        term,
        query,
        owners,
        includeFaded,
        seekById,
        average,
        (id, length, times) => {
          const entry = found.get(id);
          if (entry) entry.score += weight * saturated(times, length, averageLength);
          else found.set(id, { length, score: weight * saturated(times, length, averageLength) });
        },
        held,
      );
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
  }
}

/** The owner index's entries as one text, and its bounds: count, lowest id, highest id, longest and shortest length. */
type EntriesRow = [
  count: number,
  lowest: number | null,
  highest: number | null,
  longest: number | null,
  shortest: number | null,
  hex: string | null,
];

/**
 * {@link readAudience}, or null when the read fails: an owner index too large for one string (SQLite's or
 * V8's longest, from about 44 million searchable memories) is searched by the join.
 */
function readAudienceOrNull(entries: Database.Statement<[], EntriesRow>): AudienceSnapshot | null {
  try {
    return readAudience(entries);
  } catch {
    return null;
  }
}

/**
 * Reads the owner index whole into a snapshot by id, its owner keys not yet; null when an id or a length
 * does not fit the packed entries ({@link SNAPSHOT_IDS}, lengths from 0 to 2^21 - 1) or the ids are too sparse to be held
 * by offset (over four entries a memory past the first million).
 */
function readAudience(entries: Database.Statement<[], EntriesRow>): AudienceSnapshot | null {
  const [count, lowest, highest, longest, shortest, hex] = entries.get() ?? [0, null, null, null, null, null];
  if (count === 0 || lowest === null || highest === null || hex === null) {
    return { lowest: 0, states: new Int32Array(0), lengths: new Uint32Array(0), count: 0, owners: new Map() };
  }
  // A negative length (a damaged row) would borrow from its id: the entry would decode as the memory below it.
  if (lowest < 0 || highest >= SNAPSHOT_IDS || (longest ?? 0) >= 2 ** 21 || (shortest ?? 0) < 0) return null;
  const size = highest - lowest + 1;
  if (size > 4 * count + 2 ** 20 || hex.length !== count * 12) return null;
  const states = new Int32Array(size).fill(-1);
  const lengths = new Uint32Array(size);
  const packed = Buffer.from(hex, 'hex');
  for (let at = 0; at < packed.length; at += 6) {
    const value = packed.readUIntBE(at, 6);
    const id = Math.floor(value / 2 ** 22);
    const rest = value - id * 2 ** 22;
    states[id - lowest] = -2 - (rest & 1);
    lengths[id - lowest] = rest >>> 1;
  }
  return { lowest, states, lengths, count, owners: new Map() };
}

/** One memory's entry: its owner key, whether the owner index holds it, whether it faded, its length. */
type EntryRow = [owner: string, searchable: number, faded: number, tokens: number];

/** The statements of the record of the memories this connection's writes changed. */
interface Tracking {
  changed: Database.Statement<[number], number>;
  forget: Database.Statement<[]>;
  triggers: Database.Statement<[], number>;
  entry: Database.Statement<[number], EntryRow>;
  /** The stamp of the last search in a caller's transaction ({@link STAMP_TABLE}). */
  stamp: Database.Statement<[], number>;
  setStamp: Database.Statement<[number]>;
  /** Starts the record (before a snapshot's read, in its transaction). */
  record: Database.Statement<[]>;
}

/** The temporary table of the memories this connection's writes changed (`trackingReady`). */
const CHANGED_TABLE = 'mneme_audience_changes';
/**
 * The temporary table of one row that a search in a caller's transaction stamps with a number no other search
 * of the process wrote (`stamps`), in that transaction: a rollback (of the transaction, or to a savepoint before
 * the search) takes the stamp back with the writes and the record the search read, so that a stamp other than
 * the last one written says the snapshot holds what the file no longer does (ADR 25, 2026-12-03, session 14).
 */
const STAMP_TABLE = 'mneme_audience_stamp';
/** The last stamp written by any ranking of the process: each new one is greater, never written twice. */
let stamps = 0;
/** The temporary triggers that fill it: on insert, delete, and update of what the owner index holds. */
const TRIGGERS = ['mneme_audience_added', 'mneme_audience_removed', 'mneme_audience_changed'] as const;

/** Changed memories a search brings the snapshot up to date with; more, and it is read again. */
const PATCH_MAX = 4_096;

/**
 * Brings the snapshot up to date with the memories this connection's writes changed since the last search (ADR 25,
 * 2026-12-03, session 13): each one's entry read again, the arrays grown for a new id past the highest; false (the
 * snapshot to be dropped) for more than {@link PATCH_MAX} of them, or an entry it cannot hold (an id below its
 * lowest or past {@link SNAPSHOT_IDS}, a length that does not fit, or an id so far past the highest that the ids
 * would be sparser than `readAudience` holds: one memory under id 2^26 - 1 would grow the arrays to 512 MiB,
 * attack13b). Called in the search's read transaction.
 */
function patch(snapshot: AudienceSnapshot, sql: Tracking): boolean {
  const ids = sql.changed.all(PATCH_MAX + 1);
  return ids.length <= PATCH_MAX && patchIds(snapshot, ids, sql);
}

/** Brings the entries of these memories up to date from their rows; false: drop the snapshot (it may be half done). */
function patchIds(snapshot: AudienceSnapshot, ids: readonly number[], sql: Tracking): boolean {
  for (const id of ids) {
    const row = sql.entry.get(id);
    const searchable = row !== undefined && row[1] === 1;
    const offset = id - snapshot.lowest;
    const held = offset >= 0 && offset < snapshot.states.length && snapshot.states[offset] !== -1;
    if (!searchable) {
      if (held) {
        snapshot.states[offset] = -1;
        snapshot.count--;
      }
      continue;
    }
    const [owner, , faded, tokens] = row;
    if (offset < 0 || id >= SNAPSHOT_IDS || !(tokens >= 0 && tokens < 2 ** 21)) return false;
    if (!held) snapshot.count++;
    if (offset >= snapshot.states.length) {
      if (offset + 1 > 4 * snapshot.count + 2 ** 20) return false;
      grow(snapshot, offset + 1);
    }
    const number = snapshot.owners.get(owner);
    snapshot.states[offset] = number === undefined ? -2 - faded : number * 2 + faded;
    snapshot.lengths[offset] = tokens;
  }
  return true;
}

/** Grows the snapshot's arrays to hold at least `size` entries (half as many again, for the next new ids). */
function grow(snapshot: AudienceSnapshot, size: number): void {
  const capacity = Math.max(size, Math.ceil(snapshot.states.length * 1.5), 1_024);
  const states = new Int32Array(capacity).fill(-1);
  states.set(snapshot.states);
  const lengths = new Uint32Array(capacity);
  lengths.set(snapshot.lengths);
  snapshot.states = states;
  snapshot.lengths = lengths;
}

/**
 * Reads an owner key's memories into the snapshot, under the next number: called only while the snapshot
 * is valid (the file unchanged since it was read), so they are of its state.
 */
function readOwner(
  snapshot: AudienceSnapshot,
  owner: string,
  statement: Database.Statement<[string, number, number], string | null>,
): void {
  const { lowest, states } = snapshot;
  const number = snapshot.owners.size;
  snapshot.owners.set(owner, number);
  const ids = statement.get(owner, lowest, lowest + states.length - 1);
  if (!ids) return;
  const bytes = Buffer.from(ids, 'hex');
  for (let at = 0; at < bytes.length; at += 4) {
    const offset = bytes.readUInt32BE(at) - lowest;
    const state = states[offset] as number;
    if (state <= -2) states[offset] = number * 2 + (-2 - state);
  }
}

/**
 * Gives `add` each memory of a word's occurrence rows (memory ids) that the snapshot says the search may
 * see, once, with its length and the word's frequency in it: the memories, order and frequencies of the
 * word statement's join (ADR 25, 2026-12-02, session 10).
 */
function addVisible(
  docs: readonly number[],
  snapshot: AudienceSnapshot,
  allowed: Uint8Array,
  add: (id: number, length: number, times: number) => void,
): void {
  const { lowest, states, lengths } = snapshot;
  const visible = (id: number) => {
    const state = states[id - lowest];
    return state !== undefined && state >= 0 && allowed[state] === 1;
  };
  if (!inPackedOrder(docs)) {
    const times = new Map<number, number>();
    for (const id of docs) if (visible(id)) times.set(id, (times.get(id) ?? 0) + 1);
    for (const [id, count] of times) add(id, lengths[id - lowest] as number, count);
    return;
  }
  let index = 0;
  while (index < docs.length) {
    const id = docs[index] as number;
    let times = 1;
    while (docs[index + times] === id) times++;
    if (visible(id)) add(id, lengths[id - lowest] as number, times);
    index += times;
  }
}

/** Lengths a packed word row holds (2^21), and ids (2^32): an id times 2^21 plus a length stays below 2^53. */
const PACKED_LENGTHS = 2 ** 21;
const PACKED_IDS = 2 ** 32;

/** Whether packed word rows (or ids) come by memory id (ascending): a packed row orders as its id does. */
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
