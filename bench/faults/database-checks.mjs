// What the fault suite counts in a database file once no mneme process has it open: integrity,
// acknowledged writes still there, duplicate memories, messages never extracted, and raw bytes.
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';

/** Opens the file as mneme does (sqlite-vec loaded, so its tables can be checked); the caller closes it. */
export function openDatabase(path) {
  const database = new Database(path);
  sqliteVec.load(database);
  database.pragma('busy_timeout = 10000');
  return database;
}

/** Runs `work` with the file open and closes it whatever happens. */
export function withDatabase(path, work) {
  const database = openDatabase(path);
  try {
    return work(database);
  } finally {
    database.close();
  }
}

/**
 * `PRAGMA integrity_check` and the FTS5 `integrity-check` of both full-text indexes (the index
 * against its content table). Returns the problems found, [] when the file is sound.
 */
export function integrityProblems(database) {
  const problems = database
    .pragma('integrity_check')
    .map((row) => row.integrity_check)
    .filter((text) => text !== 'ok');
  for (const table of ['messages_fts', 'memories_fts']) {
    try {
      database.prepare(`INSERT INTO ${table}(${table}) VALUES ('integrity-check')`).run();
    } catch (error) {
      problems.push(`${table}: ${error.message}`);
    }
  }
  return problems;
}

/**
 * Acknowledged writes that are not in the file: messages (by id, with the same content) and memories
 * (by id). `acknowledged` holds `{ kind: 'message' | 'memory', id, content }`.
 */
export function lostWrites(database, acknowledged) {
  const message = database.prepare('SELECT content FROM messages WHERE id = ?');
  const memory = database.prepare('SELECT id FROM memories WHERE id = ?');
  return acknowledged.filter((write) => {
    if (write.kind === 'message') return message.get(write.id)?.content !== write.content;
    return memory.get(write.id) === undefined;
  });
}

/**
 * Duplicate memories: rows written straight from messages (facts and exchange chunks; not merges or
 * insights, which list `source_ids`) with the same owner, content and source messages, archived ones
 * included (a later merge must not hide a duplicate). Returns how many rows are extra, and examples.
 */
export function duplicateMemories(database) {
  const groups = database
    .prepare(
      `SELECT owner, content, source_message_ids AS sources, category, COUNT(*) AS copies FROM memories
       WHERE source_message_ids != '[]' AND source_ids = '[]'
       GROUP BY owner, content, source_message_ids HAVING COUNT(*) > 1`,
    )
    .all();
  return {
    extra: groups.reduce((sum, group) => sum + group.copies - 1, 0),
    exchangeChunks: groups
      .filter((group) => group.category === 'exchange')
      .reduce((sum, group) => sum + group.copies - 1, 0),
    examples: groups.slice(0, 3).map((group) => `${group.copies}x ${group.owner} ${group.sources}: ${group.content}`),
  };
}

/**
 * Messages never extracted: past their channel's extraction watermark, or user messages that should
 * have an exchange memory (not a command; longer than 20 characters or answered) and have none.
 */
export function unextractedMessages(database) {
  const pastWatermark = database
    .prepare(
      `SELECT m.id FROM messages m LEFT JOIN maintenance_state s ON s.channel_id = m.channel_id AND s.task = 'extraction'
       WHERE m.id > COALESCE(s.watermark, 0)`,
    )
    .all()
    .map((row) => row.id);
  const withoutExchange = database
    .prepare(
      `WITH cited AS (SELECT DISTINCT CAST(s.value AS INTEGER) AS id FROM memories x, json_each(x.source_message_ids) s
                      WHERE x.category = 'exchange')
       SELECT m.id FROM messages m WHERE m.role = 'user' AND substr(ltrim(m.content), 1, 1) != '/'
         AND (length(trim(m.content)) > 20 OR EXISTS (SELECT 1 FROM messages r WHERE r.reply_to = m.id))
         AND m.id NOT IN (SELECT id FROM cited)`,
    )
    .all()
    .map((row) => row.id);
  const ids = new Set([...pastWatermark, ...withoutExchange]);
  return { count: ids.size, pastWatermark: pastWatermark.length, withoutExchange: withoutExchange.length };
}

/** Messages not yet extracted by the worker (past their channel's watermark), read while a server runs. */
export function pendingMessages(database) {
  return database
    .prepare(
      `SELECT COUNT(*) AS count FROM messages m LEFT JOIN maintenance_state s
         ON s.channel_id = m.channel_id AND s.task = 'extraction' WHERE m.id > COALESCE(s.watermark, 0)`,
    )
    .get().count;
}

/**
 * What a refused request must not change: the message log, manual memories, users, topics, projects,
 * channels, members and API keys (background extraction and maintenance rows are left out, since
 * they change on their own).
 */
export function userDataFingerprint(database) {
  return database
    .prepare(
      `SELECT (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) FROM messages) AS messages,
        (SELECT COUNT(*) || ':' || COALESCE(SUM(length(content)), 0) || ':' || COALESCE(SUM(importance), 0)
           || ':' || COUNT(archived_at) || ':' || COALESCE(SUM(pinned), 0) FROM memories WHERE source = 'manual') AS manual,
        (SELECT COUNT(*) || ':' || COALESCE(group_concat(display_name), '') FROM users) AS users,
        (SELECT COUNT(*) FROM topics) AS topics, (SELECT COUNT(*) FROM projects) AS projects,
        (SELECT COUNT(*) FROM channels) AS channels, (SELECT COUNT(*) FROM members) AS members,
        (SELECT COUNT(*) || ':' || COUNT(revoked_at) FROM api_keys) AS keys`,
    )
    .get();
}

/** The database file and its -wal and -shm companions that exist now. */
export function databaseFiles(path) {
  return [path, `${path}-wal`, `${path}-shm`].filter((file) => existsSync(file));
}

/**
 * Scans the raw bytes of each file for each word, case-insensitively. A word also counts when only its
 * last 7 letters are found: FTS5 stores a term after the prefix it shares with the term before it.
 */
export function byteHits(files, words) {
  const hits = { total: 0, wordsFound: new Set(), perFile: {} };
  for (const file of files) {
    const text = readFileSync(file).toString('latin1').toLowerCase();
    let inFile = 0;
    for (const word of words) {
      const needle = word.toLowerCase().slice(-7);
      for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
        inFile++;
        hits.wordsFound.add(word);
      }
    }
    hits.perFile[file.slice(file.lastIndexOf('/') + 1)] = inFile;
    hits.total += inFile;
  }
  return { total: hits.total, wordsFound: hits.wordsFound.size, perFile: hits.perFile };
}
