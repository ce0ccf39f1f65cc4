import Database from 'better-sqlite3';
import { porterStem } from '../../core/recall/porter-stem.js';

/** A memory's words as the full-text index sees them: its distinct stems, and its length in tokens. */
export interface MemoryWords {
  stems: readonly string[];
  tokens: number;
}

/**
 * The word counts of a memory the store inserts (ADR 25, migration 22), written by the insert instead
 * of by the `memory_words_insert` trigger: the trigger tokenized the row into a scratch full-text table
 * of the file (written, read three times, emptied: pages of the file each insert) and wrote the row a
 * second time for its length. An insert that gives the row its length (`tokens` above 0) is skipped by
 * the trigger and counted here, in the same transaction; every other write keeps its trigger.
 */
export interface SqliteMemoryWordCounts {
  /** The stems and length of a memory's text (`content` and `search_context`, as the index reads them). */
  wordsOf(content: string, searchContext: string | null): MemoryWords;
  /** Counts a memory of `owner` in: the owner key's memories and tokens, and each stem's memories. */
  countIn(owner: string, words: MemoryWords): void;
}

/** Text the index splits into runs of ASCII letters and digits only: a character outside those is a separator. */
const notAscii = /[^\p{ASCII}]/u;
const asciiWord = /[A-Za-z0-9]+/g;
/** Owner keys whose row number an insert remembers. */
const REMEMBERED_OWNERS = 10_000;
/** Tokens longer than this are left unstemmed by the index's porter tokenizer: read by the index's own tokenizer. */
const MAX_STEMMED = 64;

export function createSqliteMemoryWordCounts(database: Database.Database): SqliteMemoryWordCounts {
  let tokenizer: {
    put: Database.Statement<[string, string | null]>;
    terms: Database.Statement<[], [string, number]>;
    clear: Database.Statement;
  } | null = null;
  let statements: {
    owner: Database.Statement<[string, number], number>;
    bump: Database.Statement<[number, number, string]>;
    word: Database.Statement<[number, string]>;
  } | null = null;
  /**
   * The number of each owner key's row as this connection last wrote it: the next insert of the owner
   * updates that row by its number (one seek) instead of the upsert on the owner key (its unique index,
   * then the row), and upserts only when no row of that number holds the owner any more (deleted at
   * zero memories, a rolled-back transaction, another connection).
   */
  const ownerIds = new Map<string, number>();

  /**
   * Any text, by the index's tokenizer on a connection of its own (an in-memory database: nothing of
   * the store is written), the two columns of the index: the stems are the index's by construction.
   */
  function indexWords(content: string, searchContext: string | null): MemoryWords {
    if (tokenizer === null) {
      const scratch = new Database(':memory:');
      scratch.exec(`CREATE VIRTUAL TABLE words USING fts5(
          content, search_context, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'row');`);
      tokenizer = {
        put: scratch.prepare('INSERT INTO words (rowid, content, search_context) VALUES (1, ?, ?)'),
        terms: scratch.prepare<[], [string, number]>('SELECT term, cnt FROM word_terms').raw(),
        clear: scratch.prepare("INSERT INTO words (words) VALUES ('delete-all')"),
      };
    }
    tokenizer.put.run(content, searchContext);
    try {
      const rows = tokenizer.terms.all();
      return { stems: rows.map(([term]) => term), tokens: rows.reduce((sum, [, count]) => sum + count, 0) };
    } finally {
      tokenizer.clear.run();
    }
  }

  /**
   * Plain ASCII text split as `unicode61` splits it (runs of letters and digits, lower-cased; nothing
   * else is part of a word) and stemmed by `porterStem`, the index's stemmer for such words
   * (`sqlite-porter-stem.test.ts`); null when a word is too long to be stemmed or holds "yy", or the text
   * is not ASCII.
   */
  function asciiWords(texts: readonly string[]): MemoryWords | null {
    const stems = new Set<string>();
    let tokens = 0;
    for (const text of texts) {
      if (notAscii.test(text)) return null;
      for (const [word] of text.matchAll(asciiWord)) {
        // "yy" is where `porterStem` and the index still part ("yyed"): such a word goes to the index's tokenizer.
        if (word.length > MAX_STEMMED || /yy/i.test(word)) return null;
        stems.add(porterStem(word.toLowerCase()));
        tokens++;
      }
    }
    return { stems: [...stems], tokens };
  }

  function prepared() {
    statements ??= {
      owner: database
        .prepare<[string, number], number>(
          `INSERT INTO memory_word_owners (owner, memories, tokens) VALUES (?, 1, ?)
          ON CONFLICT (owner) DO UPDATE SET memories = memories + 1, tokens = tokens + excluded.tokens
          RETURNING id`,
        )
        .pluck(),
      bump: database.prepare<[number, number, string]>(
        'UPDATE memory_word_owners SET memories = memories + 1, tokens = tokens + ? WHERE id = ? AND owner = ?',
      ),
      // One stem a run: the same rows as one upsert over `json_each` of the stems, at half its CPU (the
      // table-valued function and the upsert's SELECT cost more than a call into SQLite a stem; ADR 19,
      // session 10).
      word: database.prepare<[number, string]>(
        `INSERT INTO memory_words (owner, stem, memories) VALUES (?, ?, 1)
        ON CONFLICT (owner, stem) DO UPDATE SET memories = memories + 1`,
      ),
    };
    return statements;
  }

  return {
    wordsOf(content, searchContext) {
      const texts = searchContext === null ? [content] : [content, searchContext];
      return asciiWords(texts) ?? indexWords(content, searchContext);
    },
    countIn(owner, words) {
      const { owner: counted, bump, word } = prepared();
      const known = ownerIds.get(owner);
      let number = known !== undefined && bump.run(words.tokens, known, owner).changes === 1 ? known : undefined;
      if (number === undefined) {
        number = counted.get(owner, words.tokens);
        if (number === undefined) throw new Error(`the word counts of owner key ${owner} were not written`);
        ownerIds.delete(owner);
        ownerIds.set(owner, number);
        if (ownerIds.size > REMEMBERED_OWNERS) ownerIds.delete(ownerIds.keys().next().value ?? '');
      }
      for (const stem of words.stems) word.run(number, stem);
    },
  };
}
