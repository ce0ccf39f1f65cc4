import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';

/**
 * The naive baseline of `mneme bench`: what a user would write from the sqlite-vec and FTS5
 * documentation, sharing no code with mneme. One table of rows, an FTS5 table (bm25), a float32
 * vec0 table (cosine KNN by brute force over the whole table), the owner as an FTS5 UNINDEXED column
 * and a vec0 metadata column so a viewer sees only what it may, RRF in SQL as in the sqlite-vec
 * hybrid-search post (https://alexgarcia.xyz/blog/2024/sqlite-vec-hybrid-search/), then a lookup of
 * the rows. One transaction per insert, like one `remember` each.
 */
export interface NaiveBaseline {
  /** Stores a row, its FTS5 row and its vector in one transaction; returns its id. */
  insert(document: BaselineDocument): number;
  /** FTS5 bm25, the words OR-ed. */
  lexical(text: string, owners: readonly string[], topK: number): BaselineHit[];
  /** vec0 cosine KNN. */
  vector(vector: Float32Array, owners: readonly string[], topK: number): BaselineHit[];
  /** Both legs (each `pool` deep), fused by Reciprocal Rank Fusion (k = 60) in one SQL statement. */
  hybrid(text: string, vector: Float32Array, owners: readonly string[], topK: number, pool: number): BaselineHit[];
  close(): void;
}

export interface BaselineDocument {
  content: string;
  /** Who may see it: `global`, `user:<id>` or `room:<id>`, the same keys a mneme viewer sees. */
  owner: string;
  vector: Float32Array;
}

export interface BaselineHit {
  id: number;
  content: string;
  owner: string;
  /** Cosine distance, from `vector` only. */
  distance?: number;
}

const RRF_K = 60;

export function createNaiveBaseline(options: { path: string; dimensions: number }): NaiveBaseline {
  const database = new Database(options.path);
  sqliteVec.load(database);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.exec(`
    CREATE TABLE IF NOT EXISTS documents (id INTEGER PRIMARY KEY, content TEXT NOT NULL, owner TEXT NOT NULL);
    CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(content, owner UNINDEXED);
    CREATE VIRTUAL TABLE IF NOT EXISTS documents_vec USING vec0(
      embedding float[${options.dimensions}] distance_metric=cosine,
      owner text
    );
  `);
  const insertRow = database.prepare('INSERT INTO documents (content, owner) VALUES (?, ?)');
  const insertText = database.prepare('INSERT INTO documents_fts (rowid, content, owner) VALUES (?, ?, ?)');
  const insertVector = database.prepare('INSERT INTO documents_vec (rowid, embedding, owner) VALUES (?, ?, ?)');
  const insert = database.transaction((document: BaselineDocument) => {
    const id = Number(insertRow.run(document.content, document.owner).lastInsertRowid);
    insertText.run(id, document.content, document.owner);
    insertVector.run(BigInt(id), bytes(document.vector), document.owner);
    return id;
  });

  const statements = new Map<string, Database.Statement>();
  const prepared = (key: string, sql: () => string) => {
    let statement = statements.get(key);
    if (!statement) {
      statement = database.prepare(sql());
      statements.set(key, statement);
    }
    return statement;
  };
  const marks = (count: number) => Array.from({ length: count }, () => '?').join(', ');

  return {
    insert: (document) => insert(document),

    lexical(text, owners, topK) {
      const match = ftsQuery(text);
      if (match === '') return [];
      const statement = prepared(
        `lexical:${owners.length}`,
        () => `WITH fts_matches AS (
          SELECT rowid AS id, rank FROM documents_fts
          WHERE documents_fts MATCH ? AND owner IN (${marks(owners.length)})
          ORDER BY rank LIMIT ?
        )
        SELECT documents.id, documents.content, documents.owner
        FROM fts_matches JOIN documents ON documents.id = fts_matches.id
        ORDER BY fts_matches.rank`,
      );
      return statement.all(match, ...owners, topK) as BaselineHit[];
    },

    vector(vector, owners, topK) {
      const statement = prepared(
        `vector:${owners.length}`,
        () => `WITH vec_matches AS (
          SELECT rowid AS id, distance FROM documents_vec
          WHERE embedding MATCH ? AND k = ? AND owner IN (${marks(owners.length)})
        )
        SELECT documents.id, documents.content, documents.owner, vec_matches.distance
        FROM vec_matches JOIN documents ON documents.id = vec_matches.id
        ORDER BY vec_matches.distance`,
      );
      return statement.all(bytes(vector), topK, ...owners) as BaselineHit[];
    },

    hybrid(text, vector, owners, topK, pool) {
      const match = ftsQuery(text);
      if (match === '') return this.vector(vector, owners, topK);
      const statement = prepared(
        `hybrid:${owners.length}`,
        () => `WITH vec_matches AS (
          SELECT rowid AS id, row_number() OVER (ORDER BY distance) AS rank_number
          FROM documents_vec
          WHERE embedding MATCH ? AND k = ? AND owner IN (${marks(owners.length)})
        ),
        fts_matches AS (
          SELECT rowid AS id, row_number() OVER (ORDER BY rank) AS rank_number
          FROM documents_fts
          WHERE documents_fts MATCH ? AND owner IN (${marks(owners.length)})
          ORDER BY rank LIMIT ?
        ),
        fused AS (
          SELECT coalesce(fts_matches.id, vec_matches.id) AS id,
            coalesce(1.0 / (${RRF_K} + fts_matches.rank_number), 0.0)
              + coalesce(1.0 / (${RRF_K} + vec_matches.rank_number), 0.0) AS combined_rank
          FROM fts_matches FULL OUTER JOIN vec_matches ON vec_matches.id = fts_matches.id
          ORDER BY combined_rank DESC
          LIMIT ?
        )
        SELECT documents.id, documents.content, documents.owner
        FROM fused JOIN documents ON documents.id = fused.id
        ORDER BY fused.combined_rank DESC`,
      );
      return statement.all(bytes(vector), pool, ...owners, match, ...owners, pool, topK) as BaselineHit[];
    },

    close: () => database.close(),
  };
}

/** The words of `text`, each double-quoted (so no text reaches FTS5 syntax), OR-ed. */
export function ftsQuery(text: string): string {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].map((word) => `"${word}"`).join(' OR ');
}

function bytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}
