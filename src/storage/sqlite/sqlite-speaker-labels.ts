import type Database from 'better-sqlite3';
import { nameKey } from '../../core/name-key.js';
import { MAINTENANCE_ACTOR } from '../../core/reserved-ids.js';
import { ASCII_FOLDED, beyondAscii, labelledText, labelOf, leftNamesIn, plainName } from '../../core/speaker-label.js';
import { VECTORS_CLEARED } from '../vector-backfill-store.js';
import { type MemoryRow, snapshotOf } from './sqlite-memory-rows.js';

/**
 * The labels of speakers whose name another user can now be taken for (ADR 44), written inside the caller's
 * transaction: the one that makes a user known or names them.
 */
export interface SqliteSpeakerLabels {
  /** Labels the memories of every other named user whose name reads as one of `keys` (a user just known or named). */
  labelNamesakes(userId: string, keys: Iterable<string>, at: number): void;
  /**
   * Labels the memories that call user `userId` by `name` (their name, or one they left): only those whose text can
   * hold the name are read (the text index finds its words, or the text holds it as spelled). A name `left` is not
   * labelled in a memory another of whose speakers goes by it now: the mention is theirs (attack 31d).
   */
  label(userId: string, name: string, at: number, left?: boolean): void;
  /**
   * Memory `row` just written, with its speakers labelled where another user can now be taken for their name: its
   * text was made before its write's transaction, and a namesake who arrived in between found no memory to label.
   */
  labelWritten(row: MemoryRow, at: number): MemoryRow;
  /**
   * Labels the memories of every named user another user can be taken for: those written before ADR 44 (migration
   * 32) or imported from a file that held them unlabelled.
   */
  labelEveryNamesake(at: number): void;
}

export function createSqliteSpeakerLabels(database: Database.Database): SqliteSpeakerLabels {
  const prepare = () => ({
    // In the byte order of their ids whichever key they go by (each is a version of a memory naming two: ADR 51).
    namesakes: database.prepare<{ keys: string; userId: string }, { id: string; display_name: string }>(
      `SELECT id, display_name FROM users WHERE name_key IN (SELECT value FROM json_each(@keys)) AND id <> @userId
        AND display_name IS NOT NULL ORDER BY id`,
    ),
    // A memory names its user (a fact's speaker, the sender of an exchange's message), the senders of the messages it
    // cites (an exchange's reply, an episode's window) and the sender of its search context's message.
    naming: database
      .prepare<{ userId: string }, number>(
        `SELECT id FROM memories WHERE user_id = @userId
        UNION SELECT cited.memory_id FROM messages JOIN memory_source_messages AS cited ON cited.message_id = messages.id
          WHERE messages.sender_id = @userId
        UNION SELECT memories.id FROM messages JOIN memories ON memories.search_context_message_id = messages.id
          WHERE messages.sender_id = @userId`,
      )
      .pluck(),
    // The memories `naming` finds whose text can hold `name`, an ASCII one: the text index finds its words (any case,
    // accents folded), or the text holds it as spelled (ASCII case folded, long s and Kelvin sign as "s" and "k"; a
    // sign the index takes for part of a word, "🙂Bob").
    holding: database
      .prepare<
        { userId: string; words: string; name: string; long: string; s: string; kelvin: string; k: string },
        number
      >(
        `WITH named (id) AS (
          SELECT id FROM memories WHERE user_id = @userId
          UNION SELECT cited.memory_id FROM messages
            JOIN memory_source_messages AS cited ON cited.message_id = messages.id WHERE messages.sender_id = @userId
          UNION SELECT memories.id FROM messages JOIN memories ON memories.search_context_message_id = messages.id
            WHERE messages.sender_id = @userId)
        SELECT id FROM named WHERE id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH @words)
        UNION SELECT memories.id FROM named JOIN memories ON memories.id = named.id
          WHERE instr(lower(replace(replace(memories.content, @long, @s), @kelvin, @k)), lower(@name)) > 0
            OR instr(lower(replace(replace(memories.search_context, @long, @s), @kelvin, @k)), lower(@name)) > 0`,
      )
      .pluck(),
    // The words of a name as the text index reads them (its own tokenizer, in the scratch table the word counts use).
    tokenize: database.prepare<[string]>(
      'INSERT INTO memory_words_scratch (rowid, content, search_context) VALUES (0, ?, NULL)',
    ),
    words: database.prepare<[], number>('SELECT count(*) FROM memory_words_scratch_terms').pluck(),
    clear: database.prepare("INSERT INTO memory_words_scratch (memory_words_scratch) VALUES ('delete-all')"),
    read: database.prepare<[number], MemoryRow>('SELECT * FROM memories WHERE id = ?'),
    // The keys each speaker of a memory reads as.
    speakerKeys: database.prepare<
      { userId: string | null; sources: string; contextMessageId: number | null },
      { id: string; name_key: string; id_key: string }
    >(
      `${SPEAKERS}
      SELECT users.id, users.name_key, users.id_key FROM speakers JOIN users ON users.id = speakers.id`,
    ),
    // Whether another speaker of a memory (as `speakers` finds them) reads as a name now.
    heldBy: database.prepare<{
      userId: string | null;
      sources: string;
      contextMessageId: number | null;
      self: string;
      key: string;
    }>(
      `${SPEAKERS}
      SELECT 1 FROM speakers JOIN users ON users.id = speakers.id
      WHERE users.id <> @self AND (users.name_key = @key OR users.id_key = @key) LIMIT 1`,
    ),
    // The named users another user can be taken for (ADR 40's two lookups).
    ambiguous: database.prepare<[], { id: string; display_name: string }>(
      `SELECT users.id, users.display_name FROM users WHERE users.display_name IS NOT NULL
        AND (EXISTS (SELECT 1 FROM users AS other WHERE other.name_key = users.name_key AND other.id <> users.id)
          OR EXISTS (SELECT 1 FROM users AS other WHERE other.id_key = users.name_key AND other.id <> users.id))
      ORDER BY users.id`,
    ),
    // The named users a memory names (as `naming` finds them) that another user can be taken for (ADR 40's lookups).
    speakers: database.prepare<
      { userId: string | null; sources: string; contextMessageId: number | null },
      { id: string; display_name: string }
    >(
      `${SPEAKERS}
      SELECT users.id, users.display_name FROM speakers JOIN users ON users.id = speakers.id
      WHERE users.display_name IS NOT NULL
        AND (EXISTS (SELECT 1 FROM users AS other WHERE other.name_key = users.name_key AND other.id <> users.id)
          OR EXISTS (SELECT 1 FROM users AS other WHERE other.id_key = users.name_key AND other.id <> users.id))
      ORDER BY users.id`,
    ),
    // The FTS row and the word counts follow by trigger; the vector is kept until `reembed` gives the new text one.
    write: database.prepare<{ id: number; content: string; searchContext: string | null; at: number }, MemoryRow>(
      `UPDATE memories SET content = @content, search_context = @searchContext, embedding_model = NULL,
        updated_at = @at WHERE id = @id RETURNING *`,
    ),
    // The vector is the old text's: a background re-embedding that sees the count move gives the new text one.
    cleared: database.prepare<[string]>(
      `INSERT INTO service_state (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1`,
    ),
    version: database.prepare<[number, number, string, string, string, string, number]>(
      `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
      VALUES (?, (SELECT COALESCE(MAX(version), 0) + 1 FROM memory_versions WHERE memory_id = ?), 'update', ?, ?, ?, ?, ?)`,
    ),
  });
  let prepared: ReturnType<typeof prepare> | undefined;
  // The speakers of a memory who left a name at or after a time (migration 33; null on a schema before it).
  let left:
    | Database.Statement<
        { userId: string | null; sources: string; contextMessageId: number | null; since: number },
        { id: string; display_name: string | null; left_name: string; left_at: number }
      >
    | null
    | undefined;
  const leftNames = () => {
    left ??=
      database.prepare("SELECT 1 FROM pragma_table_info('users') WHERE name = 'left_name'").get() === undefined
        ? null
        : database.prepare(
            `${SPEAKERS}
            SELECT users.id, users.display_name, users.left_name, users.left_at
            FROM speakers JOIN users ON users.id = speakers.id
            WHERE users.left_name IS NOT NULL AND users.left_at >= @since ORDER BY users.id`,
          );
    return left;
  };
  const statements = () => {
    prepared ??= prepare();
    return prepared;
  };
  const labels: SqliteSpeakerLabels = {
    labelNamesakes(userId, keys, at) {
      const { namesakes } = statements();
      for (const user of namesakes.all({ keys: JSON.stringify([...new Set(keys)]), userId })) {
        const name = plainName(user.display_name, user.id);
        if (name !== null) labels.label(user.id, name, at);
      }
    },
    label(userId, name, at, left = false) {
      const { naming, holding, tokenize, words, clear, read, heldBy } = statements();
      const key = nameKey(name);
      tokenize.run(name);
      const indexed = words.get() ?? 0;
      clear.run();
      // A name the index holds no word of (signs alone, "!!!") or with a letter outside ASCII (which the label reads
      // in any case as Unicode folds it, "🙂CHLOË" for "Chloë") is looked for in every memory that names the user.
      const [long = '', kelvin = ''] = ASCII_FOLDED.from;
      const ids =
        indexed > 0 && !beyondAscii(name)
          ? holding.all({ userId, words: `"${name.replaceAll('"', '""')}"`, name, long, s: 's', kelvin, k: 'k' })
          : naming.all({ userId });
      for (const id of ids) {
        const row = read.get(id);
        if (!row) continue;
        const speakers = {
          userId: row.user_id,
          sources: row.source_message_ids,
          contextMessageId: row.search_context_message_id,
        };
        if (left && heldBy.get({ ...speakers, self: userId, key }) !== undefined) continue;
        relabel(row, [[userId, name]], at);
      }
    },
    labelEveryNamesake(at) {
      for (const user of statements().ambiguous.all()) {
        const name = plainName(user.display_name, user.id);
        if (name !== null) labels.label(user.id, name, at);
      }
    },
    labelWritten(row, at) {
      const { speakers } = statements();
      const of = {
        userId: row.user_id,
        sources: row.source_message_ids,
        contextMessageId: row.search_context_message_id,
      };
      const named = speakers.all(of).flatMap((user): [string, string][] => {
        const name = plainName(user.display_name, user.id);
        return name === null ? [] : [[user.id, name]];
      });
      // A name a speaker left after the memory's messages were sent: its text may have been made before (ADR 44).
      const leaving = leftNames()?.all({ ...of, since: row.valid_from }) ?? [];
      if (leaving.length > 0) named.push(...leftNamesIn(leaving, row.valid_from, statements().speakerKeys.all(of)));
      return named.length === 0 ? row : relabel(row, named, at);
    },
  };
  /** Writes `row` with each of `named` (a user's id and the name to label) labelled, as a version; the row after. */
  function relabel(row: MemoryRow, named: readonly (readonly [string, string])[], at: number): MemoryRow {
    const { write, version, cleared } = statements();
    const text = labelledText(
      { content: row.content, searchContext: row.search_context, source: row.source, userId: row.user_id },
      named,
    );
    if (text === null) return row;
    const { content, searchContext } = text;
    const after = write.get({ id: row.id, content, searchContext, at });
    if (!after) return row;
    const labelled = named.map(([userId, name]) => labelOf(name, userId)).join(', ');
    const reason = `another user can be taken for the name: labelled ${labelled} (ADR 44)`;
    const changes = content === row.content ? {} : { content: { from: row.content, to: content } };
    const snapshot = JSON.stringify(snapshotOf(after));
    version.run(row.id, row.id, MAINTENANCE_ACTOR, reason, JSON.stringify(changes), snapshot, at);
    cleared.run(VECTORS_CLEARED);
    return after;
  }
  return labels;
}

/** The speakers of a memory (its user, the senders of the messages it cites and of its search context's). */
const SPEAKERS = `WITH speakers (id) AS (
  SELECT @userId WHERE @userId IS NOT NULL
  UNION SELECT sender_id FROM messages WHERE id IN (SELECT value FROM json_each(@sources) WHERE type = 'integer')
  UNION SELECT sender_id FROM messages WHERE id = @contextMessageId)`;
