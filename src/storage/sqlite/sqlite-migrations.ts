import type Database from 'better-sqlite3';
import { nameKey } from '../../core/name-key.js';
import { isReservedId } from '../../core/reserved-ids.js';
import { checkRecordedSteps, type SchemaStep } from '../schema-steps.js';
import { PROGRESS_WAIT_TIMEOUTS } from './sqlite-progress-wait.js';
import { createSqliteSpeakerLabels } from './sqlite-speaker-labels.js';

/** The `service_state` row migration 21's triggers move on whenever a word block's memories change. */
export const WORD_BLOCKS_GENERATION = 'consolidation_word_blocks_generation';

/** One step of the schema. Steps are append-only: a released step is never edited (its name neither: a database is checked against the names, ADR 34), a new one is added. */
interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
  /** What SQL alone cannot say (a table that may not exist), run after `sql` in the same transaction. */
  after?: (database: Database.Database) => void;
}

export const sqliteMigrations: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'message log and memories',
    sql: `
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        display_name TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT,
        managed INTEGER NOT NULL DEFAULT 0 CHECK (managed IN (0, 1)),
        created_at INTEGER NOT NULL
      );
      CREATE TABLE topics (
        id TEXT PRIMARY KEY,
        project_id TEXT REFERENCES projects(id) ON DELETE SET NULL,
        title TEXT,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        channel_id TEXT NOT NULL,
        sender_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
        content TEXT NOT NULL,
        topic_id TEXT,
        reply_to INTEGER REFERENCES messages(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX messages_by_channel ON messages(channel_id, id);
      CREATE INDEX messages_by_sender ON messages(sender_id);
      CREATE INDEX messages_by_reply ON messages(reply_to) WHERE reply_to IS NOT NULL;
      CREATE INDEX messages_by_topic ON messages(topic_id, id) WHERE topic_id IS NOT NULL;
      CREATE TRIGGER messages_append_only BEFORE UPDATE ON messages
        BEGIN SELECT RAISE(ABORT, 'messages are append-only'); END;
      CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
        BEGIN INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
      CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
        BEGIN INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content); END;

      CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        content TEXT NOT NULL,
        category TEXT NOT NULL,
        sector TEXT NOT NULL CHECK (sector IN ('semantic', 'episodic')),
        scope TEXT NOT NULL CHECK (scope IN ('personal', 'room', 'project', 'session', 'global')),
        owner TEXT NOT NULL,
        user_id TEXT,
        channel_id TEXT,
        project_id TEXT,
        topic_id TEXT REFERENCES topics(id),
        source TEXT NOT NULL,
        importance REAL NOT NULL CHECK (importance BETWEEN 0 AND 1),
        strength REAL NOT NULL DEFAULT 1,
        salience REAL NOT NULL DEFAULT 1,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed INTEGER,
        pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
        source_message_ids TEXT NOT NULL DEFAULT '[]',
        source_ids TEXT NOT NULL DEFAULT '[]',
        valid_from INTEGER NOT NULL,
        superseded_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
        archived_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        embedding_model TEXT
      );
      CREATE INDEX memories_by_owner ON memories(owner, archived_at);
      CREATE INDEX memories_by_user ON memories(user_id) WHERE user_id IS NOT NULL;
      CREATE INDEX memories_by_created ON memories(created_at);
      CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, content = 'memories', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
        BEGIN INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content); END;
      CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
        BEGIN INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content); END;
      CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories
        BEGIN
          INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
          INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
        END;
    `,
  },
  {
    version: 2,
    name: 'links, versions, maintenance state and the vector index',
    sql: `
      CREATE TABLE memory_links (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        target_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        type TEXT NOT NULL CHECK (type IN ('co_extracted', 'consolidated', 'semantic', 'supersedes')),
        strength REAL NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        UNIQUE (source_id, target_id, type)
      );
      CREATE INDEX memory_links_by_target ON memory_links(target_id);

      CREATE TABLE memory_versions (
        id INTEGER PRIMARY KEY,
        memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('create', 'update', 'archive', 'restore', 'merge')),
        actor TEXT,
        reason TEXT,
        changes TEXT NOT NULL,
        snapshot TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (memory_id, version)
      );
      CREATE INDEX memory_versions_by_actor ON memory_versions(actor) WHERE actor IS NOT NULL;

      CREATE TABLE maintenance_state (
        channel_id TEXT NOT NULL,
        task TEXT NOT NULL,
        watermark INTEGER,
        last_run_at INTEGER,
        details TEXT,
        PRIMARY KEY (channel_id, task)
      );

      CREATE TABLE vector_index (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        model TEXT NOT NULL,
        dimensions INTEGER NOT NULL CHECK (dimensions > 0)
      );
    `,
  },
  {
    version: 3,
    name: 'importance-steps decay bookkeeping',
    sql: `
      -- The time up to which importance-steps downgrades are applied, so none is applied twice.
      ALTER TABLE memories ADD COLUMN decayed_at INTEGER;
    `,
  },
  {
    version: 4,
    name: 'API keys of the HTTP service',
    sql: `
      CREATE TABLE api_keys (
        id INTEGER PRIMARY KEY,
        prefix TEXT NOT NULL UNIQUE,
        hash TEXT NOT NULL,
        label TEXT NOT NULL,
        user_id TEXT,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
      );
    `,
  },
  {
    version: 5,
    name: 'search-only context of a memory in the full-text index',
    sql: `
      -- Text a memory is found by but that is not part of it: the message a conversation turn answers
      -- (and that message's id, so purging its sender also clears it here).
      ALTER TABLE memories ADD COLUMN search_context TEXT;
      ALTER TABLE memories ADD COLUMN search_context_message_id INTEGER;
      DROP TRIGGER memories_fts_insert;
      DROP TRIGGER memories_fts_delete;
      DROP TRIGGER memories_fts_update;
      DROP TABLE memories_fts;
      CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, search_context, content = 'memories', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
        BEGIN
          INSERT INTO memories_fts(rowid, content, search_context) VALUES (new.id, new.content, new.search_context);
        END;
      CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
        BEGIN
          INSERT INTO memories_fts(memories_fts, rowid, content, search_context)
            VALUES ('delete', old.id, old.content, old.search_context);
        END;
      CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, search_context ON memories
        BEGIN
          INSERT INTO memories_fts(memories_fts, rowid, content, search_context)
            VALUES ('delete', old.id, old.content, old.search_context);
          INSERT INTO memories_fts(rowid, content, search_context) VALUES (new.id, new.content, new.search_context);
        END;
      INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
      CREATE INDEX memories_by_search_context_message ON memories(search_context_message_id)
        WHERE search_context_message_id IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: 'maintenance watermarks under their task names',
    sql: `
      UPDATE maintenance_state SET task = 'episodes' WHERE task = 'episode';
      UPDATE maintenance_state SET task = 'consolidate' WHERE task = 'consolidation';
    `,
  },
  {
    version: 7,
    name: 'channels and the members of channels, topics and projects',
    sql: `
      CREATE TABLE channels (
        id TEXT PRIMARY KEY,
        visibility TEXT NOT NULL CHECK (visibility IN ('direct', 'private', 'public')),
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE members (
        kind TEXT NOT NULL CHECK (kind IN ('channel', 'topic', 'project')),
        space_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (kind, space_id, user_id)
      ) WITHOUT ROWID;
      CREATE INDEX members_by_user ON members(user_id);
      -- Facts about the service that outlive the rows they came from: once an API key was created, the
      -- HTTP service never runs open again, even after every key is revoked or purged.
      CREATE TABLE service_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      INSERT INTO service_state (name, value)
        SELECT 'first_api_key_at', MIN(created_at) FROM api_keys HAVING COUNT(*) > 0;
      -- Everything logged so far came through trusted ingest: its senders are members of what they wrote in.
      INSERT INTO members (kind, space_id, user_id, added_at)
        SELECT 'channel', channel_id, sender_id, MIN(created_at) FROM messages GROUP BY channel_id, sender_id;
      INSERT INTO members (kind, space_id, user_id, added_at)
        SELECT 'topic', topic_id, sender_id, MIN(created_at) FROM messages
        WHERE topic_id IS NOT NULL GROUP BY topic_id, sender_id;
      INSERT OR IGNORE INTO members (kind, space_id, user_id, added_at)
        SELECT 'project', t.project_id, m.sender_id, MIN(m.created_at) FROM messages m JOIN topics t ON t.id = m.topic_id
        WHERE t.project_id IS NOT NULL GROUP BY t.project_id, m.sender_id;
    `,
  },
  {
    version: 8,
    name: 'facts extracted as global from a channel narrowed to its room (ADR 5)',
    sql: `
      -- No channel was public before channels existed, so no extracted fact may be wider than its room.
      UPDATE memories SET scope = 'room', owner = 'room:' || channel_id
        WHERE scope = 'global' AND source = 'extraction' AND channel_id IS NOT NULL;
    `,
    after(database) {
      const hasVectors = database
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_vectors'")
        .get();
      if (!hasVectors) return;
      database.exec(`UPDATE memory_vectors SET owner = (SELECT owner FROM memories WHERE id = memory_id)
        WHERE owner = 'global' AND memory_id IN (SELECT id FROM memories WHERE owner != 'global')`);
    },
  },
  {
    version: 9,
    name: 'exactly-once extraction: leases, chunk identity, the messages each memory cites',
    sql: `
      -- Who may move an extraction watermark (a maintenance_state row), until when (epoch milliseconds).
      CREATE TABLE extraction_leases (
        channel_id TEXT NOT NULL,
        task TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (channel_id, task)
      ) WITHOUT ROWID;

      -- An exchange chunk is chunk chunk_index of user message chunk_message_id, stored once.
      ALTER TABLE memories ADD COLUMN chunk_message_id INTEGER;
      ALTER TABLE memories ADD COLUMN chunk_index INTEGER;
      WITH chunks AS (
        SELECT id, json_extract(source_message_ids, '$[0]') AS message_id,
          ROW_NUMBER() OVER (PARTITION BY json_extract(source_message_ids, '$[0]') ORDER BY id) - 1 AS position
        FROM memories
        WHERE source = 'exchange' AND json_type(source_message_ids, '$[0]') = 'integer'
      )
      UPDATE memories SET chunk_message_id = chunks.message_id, chunk_index = chunks.position
        FROM chunks WHERE memories.id = chunks.id;
      CREATE UNIQUE INDEX memories_by_chunk ON memories(chunk_message_id, chunk_index)
        WHERE chunk_message_id IS NOT NULL;

      -- Which memories cite which message, kept by triggers: what a message's extraction already wrote.
      CREATE TABLE memory_source_messages (
        message_id INTEGER NOT NULL,
        memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        PRIMARY KEY (message_id, memory_id)
      ) WITHOUT ROWID;
      CREATE INDEX memory_source_messages_by_memory ON memory_source_messages(memory_id);
      INSERT OR IGNORE INTO memory_source_messages (message_id, memory_id)
        SELECT source.value, memories.id FROM memories, json_each(memories.source_message_ids) AS source
        WHERE source.type = 'integer';
      CREATE TRIGGER memory_source_messages_insert AFTER INSERT ON memories
        BEGIN
          INSERT OR IGNORE INTO memory_source_messages (message_id, memory_id)
            SELECT value, new.id FROM json_each(new.source_message_ids) WHERE type = 'integer';
        END;
      CREATE TRIGGER memory_source_messages_update AFTER UPDATE OF source_message_ids ON memories
        BEGIN
          DELETE FROM memory_source_messages WHERE memory_id = old.id;
          INSERT OR IGNORE INTO memory_source_messages (message_id, memory_id)
            SELECT value, new.id FROM json_each(new.source_message_ids) WHERE type = 'integer';
        END;
    `,
  },
  {
    version: 10,
    name: 'the policy a database runs under: its preset and settings, every version kept',
    sql: `
      -- The newest version is the policy; a database from before presets gets its first version when
      -- it is next opened (the options it is opened with, else the mneme preset).
      CREATE TABLE policy_versions (
        version INTEGER PRIMARY KEY,
        preset TEXT NOT NULL,
        overrides TEXT NOT NULL CHECK (json_valid(overrides)),
        change TEXT NOT NULL,
        actor TEXT,
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: 'memories that faded: archived by decay, still found by recall (ADR 9)',
    sql: `
      -- Decay puts a memory to rest instead of losing it: archived (out of lists and contexts unless
      -- asked for), its vector and full-text row kept, found again by a recall that asks for it.
      ALTER TABLE memories ADD COLUMN faded_at INTEGER;
      -- Memories decay archived before this step faded too; their vectors were removed, and the
      -- background re-embed gives them one again.
      UPDATE memories SET faded_at = archived_at
        WHERE archived_at IS NOT NULL
          AND (SELECT reason FROM memory_versions v WHERE v.memory_id = memories.id ORDER BY version DESC LIMIT 1)
            LIKE 'decay:%';
    `,
  },
  {
    version: 12,
    name: 'a binary-quantised vector index over owner buckets, with float32 slices to rank by (ADR 10)',
    sql: `
      -- The owner keys that have vectors, under a number the bit index filters on, and how many each has.
      CREATE TABLE vector_owners (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL UNIQUE,
        vectors INTEGER NOT NULL
      );
      -- Each vector in float32 slices of 192 numbers (768 bytes, five to a page), key = memory id * 64 + slice,
      -- each with the squared norm of the whole vector.
      CREATE TABLE memory_vector_slices (
        key INTEGER PRIMARY KEY,
        vector BLOB NOT NULL,
        norm2 REAL NOT NULL
      );
    `,
    after(database) {
      // The vectors of the float32 vec0 table `memory_vectors` move to the new index as this version
      // writes it: sign bits in `memory_vector_bits` (bucket 0 for global, 1 + owner id % 31 for the
      // others, 128 rows a chunk), slices of 192 floats (more per slice above 12,288 dimensions).
      const legacy = database
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_vectors'")
        .get();
      const index = database
        .prepare<[], { dimensions: number }>('SELECT dimensions FROM vector_index WHERE id = 1')
        .get();
      if (!index) {
        if (legacy) database.exec('DROP TABLE memory_vectors');
        return;
      }
      const { dimensions } = index;
      database.exec(`CREATE VIRTUAL TABLE memory_vector_bits USING vec0(
          memory_id INTEGER PRIMARY KEY, bucket INTEGER PARTITION KEY, bits bit[${Math.ceil(dimensions / 8) * 8}],
          owner_id INTEGER, chunk_size=128
        );
        CREATE INDEX memory_vector_bits_chunks_by_bucket ON memory_vector_bits_chunks (partition00);`);
      if (!legacy) return;
      if (dimensions % 8 !== 0) {
        // vec_quantize_binary wants whole bytes: these vectors are embedded again (mneme reembed).
        database.exec(`DROP TABLE memory_vectors;
          UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL;`);
        return;
      }
      // Read chunk by chunk from vec0's own tables (its row-by-row reads walk a 3 MB chunk each time).
      const chunks = database
        .prepare<[], { chunk_id: number; validity: Buffer; rowids: Buffer }>(
          'SELECT chunk_id, validity, rowids FROM memory_vectors_chunks ORDER BY chunk_id',
        )
        .all();
      const chunkVectors = database
        .prepare<[number], Buffer>('SELECT vectors FROM memory_vectors_vector_chunks00 WHERE rowid = ?')
        .pluck();
      const ownerOf = database.prepare<[number], string>('SELECT owner FROM memories WHERE id = ?').pluck();
      const countUp = database
        .prepare<[string], number>(
          `INSERT INTO vector_owners (owner, vectors) VALUES (?, 1)
          ON CONFLICT (owner) DO UPDATE SET vectors = vectors + 1 RETURNING id`,
        )
        .pluck();
      const insertBits = database.prepare(
        'INSERT INTO memory_vector_bits (memory_id, bucket, bits, owner_id) VALUES (?, ?, vec_bit(?), ?)',
      );
      const insertSlice = database.prepare('INSERT INTO memory_vector_slices (key, vector, norm2) VALUES (?, ?, ?)');
      const floats = Math.max(192, Math.ceil(dimensions / 64));
      for (const chunk of chunks) {
        const bytes = chunkVectors.get(chunk.chunk_id);
        if (!bytes) continue;
        const all = new Float32Array(Uint8Array.from(bytes).buffer);
        const rowids = new BigInt64Array(Uint8Array.from(chunk.rowids).buffer);
        for (let slot = 0; slot < rowids.length; slot++) {
          if ((((chunk.validity[slot >> 3] ?? 0) >> (slot & 7)) & 1) === 0) continue;
          const id = Number(rowids[slot]);
          const owner = ownerOf.get(id);
          if (owner === undefined) continue;
          const vector = all.subarray(slot * dimensions, (slot + 1) * dimensions);
          const ownerId = countUp.get(owner) ?? 0;
          const code = Buffer.alloc(dimensions / 8);
          for (let index = 0; index < dimensions; index++) {
            if ((vector[index] ?? 0) > 0) code[index >> 3] = (code[index >> 3] ?? 0) | (1 << (index & 7));
          }
          const bucket = owner === 'global' ? 0 : 1 + (ownerId % 31);
          insertBits.run(BigInt(id), BigInt(bucket), code, BigInt(ownerId));
          let norm2 = 0;
          for (const value of vector) norm2 += value * value;
          for (let slice = 0; slice * floats < dimensions; slice++) {
            const part = vector.slice(slice * floats, Math.min(dimensions, (slice + 1) * floats));
            insertSlice.run(id * 64 + slice, Buffer.from(part.buffer), norm2);
          }
        }
      }
      database.exec('DROP TABLE memory_vectors');
    },
  },
  {
    version: 13,
    name: 'full-text matches filtered by scope without reading memory rows',
    sql: `
      -- Covers the join of a full-text search: each match's owner, for the memories recall may find
      -- (active ones and those that faded, told apart by faded_at; ADR 9).
      CREATE INDEX memories_searchable_owner ON memories(id, owner, faded_at)
        WHERE archived_at IS NULL OR faded_at IS NOT NULL;
    `,
  },
  {
    version: 14,
    name: 'ingest that can be retried: external message ids, file progress, idempotency keys',
    sql: `
      -- A chat platform's event id, unique per channel: a message stored again under it is a duplicate (ADR 14).
      ALTER TABLE messages ADD COLUMN external_id TEXT;
      CREATE UNIQUE INDEX messages_by_external_id ON messages(channel_id, external_id) WHERE external_id IS NOT NULL;
      -- How far \`mneme ingest\` got in a file: written in the transaction of the lines it covers.
      CREATE TABLE ingest_files (
        path TEXT PRIMARY KEY,
        line INTEGER NOT NULL,
        prefix_sha256 TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
      -- HTTP Idempotency-Key: pending while the first request runs (until locked_until), then its response.
      CREATE TABLE idempotency_keys (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        request_sha256 TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        locked_until INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (principal, key)
      ) WITHOUT ROWID;
      CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys(expires_at);
    `,
  },
  {
    version: 15,
    name: 'inverted lists of the vector index for neighbour searches in large stores',
    sql: `
      -- ADR 20. The lists' progress: a training under way (its steps), whether put() maintains the lists
      -- (memory_vector_list_bits exists, created at the switch to a new training), and how far the
      -- assignment of the existing vectors got (memory id; NULL once every vector is in its list).
      CREATE TABLE vector_list_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL,
        lists INTEGER NOT NULL,
        training_steps INTEGER,
        maintained INTEGER NOT NULL,
        watermark INTEGER,
        trained_vectors INTEGER NOT NULL
      );
      -- The centroids being trained (mini-batch k-means: weight = vectors drawn into each so far).
      CREATE TABLE vector_list_training (list INTEGER PRIMARY KEY, centroid BLOB NOT NULL, weight REAL NOT NULL);
      -- The lists in use: unit centroid (float32) and the lowest and highest angle band of a member
      -- ever put (only ever widened, so they stay bounds after deletes).
      CREATE TABLE vector_lists (
        list INTEGER PRIMARY KEY,
        centroid BLOB NOT NULL,
        low_band INTEGER,
        high_band INTEGER
      );
    `,
  },
  {
    version: 16,
    name: 'word counts per owner key, for statistics over what a viewer may see',
    sql: `
      -- ADR 25. How many memories of each owner key hold each stem, as the full-text index stems it
      -- (archived ones too, like the index), and per owner key its memories and their tokens. Written by
      -- triggers in the transaction of the memory they count, so every write path keeps them.
      CREATE TABLE memory_words (
        stem TEXT NOT NULL,
        owner TEXT NOT NULL,
        memories INTEGER NOT NULL,
        PRIMARY KEY (stem, owner)
      ) WITHOUT ROWID;
      CREATE TABLE memory_word_owners (
        owner TEXT PRIMARY KEY,
        memories INTEGER NOT NULL,
        tokens INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- Tokenizes one memory at a time with the full-text index's own tokenizer; empty between writes.
      CREATE VIRTUAL TABLE memory_words_scratch USING fts5(
        content, search_context, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE VIRTUAL TABLE memory_words_scratch_terms USING fts5vocab(memory_words_scratch, 'row');
      CREATE TRIGGER memory_words_insert AFTER INSERT ON memories
        BEGIN
          ${countIn('new')}
        END;
      CREATE TRIGGER memory_words_delete AFTER DELETE ON memories
        BEGIN
          ${countOut('old')}
        END;
      CREATE TRIGGER memory_words_update AFTER UPDATE OF content, search_context, owner ON memories
        WHEN old.content IS NOT new.content OR old.search_context IS NOT new.search_context OR old.owner IS NOT new.owner
        BEGIN
          ${countOut('old')}
          ${countIn('new')}
        END;
    `,
    after: (database) => {
      // The memories written before this step, from the full-text index (which holds every one of them).
      database.exec(`
        CREATE VIRTUAL TABLE temp.memory_words_backfill USING fts5vocab(main, memories_fts, 'instance');
        INSERT INTO memory_words (stem, owner, memories)
          SELECT term, owner, count(*) FROM (
            SELECT DISTINCT v.term AS term, v.doc AS doc, m.owner AS owner
            FROM temp.memory_words_backfill v JOIN memories m ON m.id = v.doc
          ) GROUP BY term, owner;
        INSERT INTO memory_word_owners (owner, memories, tokens)
          SELECT owner, count(*), 0 FROM memories GROUP BY owner;
        UPDATE memory_word_owners SET tokens = counted.tokens FROM (
          SELECT m.owner AS owner, count(*) AS tokens
          FROM temp.memory_words_backfill v JOIN memories m ON m.id = v.doc GROUP BY m.owner
        ) AS counted WHERE counted.owner = memory_word_owners.owner;
        DROP TABLE temp.memory_words_backfill;
      `);
    },
  },
  {
    version: 17,
    name: 'the overflow partition of the inverted lists',
    sql: `
      -- ADR 20 (2026-12-01, later). A vector whose angle band to its nearest centroid is above
      -- overflow_band goes to the overflow partition of memory_vector_list_bits (part -1), which every
      -- search reads, instead of its list; NULL for lists trained before this step (trained again).
      -- overflow_vectors counts the rows written there since the switch, overflow_share is the share
      -- of the training's sample above the band (their difference is a reason to train again).
      ALTER TABLE vector_list_state ADD COLUMN overflow_band INTEGER;
      ALTER TABLE vector_list_state ADD COLUMN overflow_vectors INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE vector_list_state ADD COLUMN overflow_share REAL;
    `,
  },
  {
    version: 18,
    name: 'external message ids unique per sender',
    sql: `
      -- ADR 14, 2026-12-01: an external id names one sender's message in a channel. Unique per channel
      -- alone, a member could post first under the id a bridge would later relay for another user,
      -- whose message was then answered as a duplicate and never stored.
      DROP INDEX messages_by_external_id;
      CREATE UNIQUE INDEX messages_by_external_id ON messages(channel_id, sender_id, external_id)
        WHERE external_id IS NOT NULL;
    `,
  },
  {
    version: 19,
    name: 'word counts clustered by owner key',
    sql: `
      -- ADR 25, 2026-12-01 (session 4). A memory's word counts were one row per distinct stem, keyed
      -- (stem, owner): each in a page of its own, so a write dirtied as many pages as its memory has
      -- words (most of a remember's cost: writing them to the log). Keyed (owner number, stem), an
      -- owner key's counts sit together in fewer, smaller rows, and a write dirties fewer pages. The
      -- owner key's number is its row in memory_word_owners (taken back only once its counts are gone).
      DROP TRIGGER memory_words_insert;
      DROP TRIGGER memory_words_delete;
      DROP TRIGGER memory_words_update;
      CREATE TABLE memory_word_owners_19 (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL UNIQUE,
        memories INTEGER NOT NULL,
        tokens INTEGER NOT NULL
      );
      INSERT INTO memory_word_owners_19 (owner, memories, tokens)
        SELECT owner, memories, tokens FROM memory_word_owners ORDER BY owner;
      CREATE TABLE memory_words_19 (
        owner INTEGER NOT NULL,
        stem TEXT NOT NULL,
        memories INTEGER NOT NULL,
        PRIMARY KEY (owner, stem)
      ) WITHOUT ROWID;
      INSERT INTO memory_words_19 (owner, stem, memories)
        SELECT o.id, w.stem, w.memories FROM memory_words w JOIN memory_word_owners_19 o ON o.owner = w.owner
        ORDER BY o.id, w.stem;
      DROP TABLE memory_words;
      DROP TABLE memory_word_owners;
      ALTER TABLE memory_words_19 RENAME TO memory_words;
      ALTER TABLE memory_word_owners_19 RENAME TO memory_word_owners;
      CREATE TRIGGER memory_words_insert AFTER INSERT ON memories
        BEGIN
          ${countInByNumber('new')}
        END;
      CREATE TRIGGER memory_words_delete AFTER DELETE ON memories
        BEGIN
          ${countOutByNumber('old')}
        END;
      CREATE TRIGGER memory_words_update AFTER UPDATE OF content, search_context, owner ON memories
        WHEN old.content IS NOT new.content OR old.search_context IS NOT new.search_context OR old.owner IS NOT new.owner
        BEGIN
          ${countOutByNumber('old')}
          ${countInByNumber('new')}
        END;
    `,
  },
  {
    version: 20,
    name: 'a memory length in the owner index of the full-text search',
    sql: `
      -- ADR 25, 2026-12-02 (session 7). A memory's length in tokens (what the full-text index's document
      -- sizes sum to), kept by the word-count triggers that already tokenize it, and carried by the owner
      -- index of the full-text search: a search reads each match's length with its owner instead of
      -- joining the index's document sizes. Filled from those sizes below; the index is made after that.
      ALTER TABLE memories ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
      DROP INDEX memories_searchable_owner;
      DROP TRIGGER memory_words_insert;
      DROP TRIGGER memory_words_update;
      CREATE TRIGGER memory_words_insert AFTER INSERT ON memories
        BEGIN
          ${countInByNumber('new', true)}
        END;
      CREATE TRIGGER memory_words_update AFTER UPDATE OF content, search_context, owner ON memories
        WHEN old.content IS NOT new.content OR old.search_context IS NOT new.search_context OR old.owner IS NOT new.owner
        BEGIN
          ${countOutByNumber('old')}
          ${countInByNumber('new', true)}
        END;
    `,
    after: (database) => {
      // Each memory's length from the document sizes record of the full-text index (which holds every
      // memory): one varint a column, summed.
      database.function('mneme_document_length', { deterministic: true }, (record: unknown) =>
        record instanceof Uint8Array ? varintSum(record) : 0,
      );
      database.exec(`
        UPDATE memories SET tokens = sizes.tokens
          FROM (SELECT id, mneme_document_length(sz) AS tokens FROM memories_fts_docsize) AS sizes
          WHERE memories.id = sizes.id AND sizes.tokens <> 0;
        -- Covers the join of a full-text search: each match's owner and length, for the memories recall
        -- may find (active ones and those that faded, told apart by faded_at; ADR 9; migration 13).
        CREATE INDEX memories_searchable_owner ON memories(id, owner, faded_at, tokens)
          WHERE archived_at IS NULL OR faded_at IS NOT NULL;
      `);
    },
  },
  {
    version: 21,
    name: 'consolidation word blocks',
    sql: `
      -- ADR 19, 2026-12-02 (session 7). Consolidation's near-duplicate index read and split every
      -- memory's text each run; it now reads each block of 1,000 ids as stored word ids, and splits
      -- only the texts of the blocks not stored (new, changed). The first run after this writes them.
      CREATE TABLE consolidation_words (id INTEGER PRIMARY KEY AUTOINCREMENT, word TEXT NOT NULL UNIQUE);
      CREATE TABLE consolidation_word_blocks (
        first_id INTEGER PRIMARY KEY,
        last_id INTEGER NOT NULL,
        owners TEXT NOT NULL,
        words BLOB NOT NULL
      );
      CREATE INDEX consolidation_word_blocks_by_last ON consolidation_word_blocks(last_id);
      INSERT INTO service_state (name, value) VALUES ('${WORD_BLOCKS_GENERATION}', 0) ON CONFLICT (name) DO NOTHING;
      -- A block holds its memories' words as they were: one that changes text or owner, is restored,
      -- deleted, or inserted below the newest id deletes it, and moves the generation on (a block read
      -- before is then not written).
      CREATE TRIGGER consolidation_word_blocks_update AFTER UPDATE OF content, owner, archived_at ON memories
        WHEN old.content IS NOT new.content OR old.owner IS NOT new.owner
          OR (old.archived_at IS NOT NULL AND new.archived_at IS NULL)
        BEGIN
          ${dropWordBlock('old')}
        END;
      CREATE TRIGGER consolidation_word_blocks_delete AFTER DELETE ON memories
        BEGIN
          ${dropWordBlock('old')}
        END;
      CREATE TRIGGER consolidation_word_blocks_insert AFTER INSERT ON memories
        WHEN new.id < (SELECT MAX(id) FROM memories)
        BEGIN
          ${dropWordBlock('new')}
        END;
    `,
  },
  {
    version: 22,
    name: 'word counts of an insert that gives its length written by the insert',
    sql: `
      -- ADR 25, 2026-12-02 (session 8). The store's insert tokenizes a memory itself (the index's
      -- tokenizer, or the same split and stemmer in code for plain ASCII text), writes its length with
      -- the row and counts its words in the same transaction (sqlite-memory-word-counts.ts): no
      -- scratch index written and emptied in the file, no second write of the row. The trigger counts
      -- every other insert, which gives no length (tokens 0, the column's default), as before.
      DROP TRIGGER memory_words_insert;
      CREATE TRIGGER memory_words_insert AFTER INSERT ON memories WHEN new.tokens = 0
        BEGIN
          ${countInByNumber('new', true)}
        END;
    `,
  },
  {
    version: 23,
    name: 'memories by superseded_by',
    sql: `
      -- ADR 19, 2026-12-02 (session 8). A merge hands each original's supersession on to the merged memory
      -- and an archive clears the supersessions pointing at the memory: each read every memory (a scan of the
      -- table, about 30 ms at 100,000 memories, four a cluster of two). Few rows are superseded: a partial
      -- index, as PostgreSQL's schema has had since its first step.
      CREATE INDEX memories_by_superseded ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
    `,
  },
  {
    version: 24,
    name: 'the signs of each listed vector off its list centroid',
    sql: `
      -- ADR 10, 2026-12-02 (session 11). Beside a vector's row in the inverted lists (memory_vector_list_bits), the
      -- sign bits of its residual off its list's centroid (v - <v, c> c) and their product with its unit residual
      -- (a float32 after the bits), written with the list row by the lists' training \`generation\`; recall
      -- estimates a candidate's cosine from them and re-ranks fewer candidates exactly. Vectors in the overflow
      -- partition have none. A row of another generation, or a listed vector without a row, is estimated as
      -- before (and recall re-ranks as many as before); maintenance's index steps fill the missing rows.
      CREATE TABLE memory_vector_residuals (
        memory_id INTEGER PRIMARY KEY,
        generation INTEGER NOT NULL,
        code BLOB NOT NULL
      );
      -- Every write path that removes or replaces a vector deletes its slices (a process of the previous release
      -- too, which knows nothing of this table): its residual row goes with them, so a row is never of another
      -- vector of the same memory.
      CREATE TRIGGER memory_vector_residuals_gone AFTER DELETE ON memory_vector_slices WHEN old.key % 64 = 0
        BEGIN
          DELETE FROM memory_vector_residuals WHERE memory_id = old.key / 64;
        END;
    `,
  },
  {
    version: 25,
    name: 'the memories each commit changed for the recall caches of other connections',
    sql: `
      -- ADR 27, 2026-12-03 (session 18). Recall holds the inverted lists' codes and the full-text owner index in
      -- memory; another connection's commit dropped both, a recall's touch of access statistics too, so a process
      -- beside another that recalls or ingests searched through SQL (at 1,000,000 memories, a second a recall).
      -- Each write that changes what they hold records the memory here, in its own transaction: these triggers for
      -- a memory's id, owner, state and length, the vector lists' code for a vector's list row (memory_id NULL: any
      -- may have changed). A connection reads the entries after the last it saw and brings its copies up to date.
      -- Entries are numbered in commit order without gaps (the writers take turns; a rolled back number is given
      -- again); the newest 4,096 to 8,192 are kept, and a connection that finds its last one gone reads all again.
      CREATE TABLE recall_changes (seq INTEGER PRIMARY KEY, memory_id INTEGER);
      CREATE TRIGGER recall_changes_kept AFTER INSERT ON recall_changes WHEN new.seq % 4096 = 0
        BEGIN
          DELETE FROM recall_changes WHERE seq <= new.seq - 4096;
        END;
      CREATE TRIGGER recall_changes_memory_insert AFTER INSERT ON memories
        BEGIN
          INSERT INTO recall_changes (memory_id) VALUES (new.id);
        END;
      CREATE TRIGGER recall_changes_memory_delete AFTER DELETE ON memories
        BEGIN
          INSERT INTO recall_changes (memory_id) VALUES (old.id);
        END;
      CREATE TRIGGER recall_changes_memory_update AFTER UPDATE OF id, owner, archived_at, faded_at, tokens ON memories
        WHEN old.id IS NOT new.id OR old.owner IS NOT new.owner OR old.archived_at IS NOT new.archived_at
          OR old.faded_at IS NOT new.faded_at OR old.tokens IS NOT new.tokens
        BEGIN
          INSERT INTO recall_changes (memory_id) VALUES (old.id);
          INSERT INTO recall_changes (memory_id) SELECT new.id WHERE new.id IS NOT old.id;
        END;
    `,
  },
  {
    version: 26,
    name: 'an audience check of every channel memories cite, due at once',
    sql: `
      -- ADR 5, 2026-12-03 (session 18). A mneme before 2026-12-03 wrote an audience change (a channel made private,
      -- a member removed, a topic or project gaining members) and moved no memory: a global fact of a channel made
      -- private long ago is still global here. One audience mark per channel that a memory cites (the format
      -- changeAudience writes: task 'audience', the change in details), watermark NULL: due at once. createMneme
      -- checks them when it opens the database, maintain otherwise (recheckAudiences), each mark deleted once
      -- checked. A channel's check reads every memory citing its messages, and those built on them (insights,
      -- merges), and checks each against every channel it cites: its topic's or project's members too.
      INSERT INTO maintenance_state (channel_id, task, watermark, last_run_at, details)
        SELECT 'audience:upgrade:' || cited.channel_id, 'audience', NULL, NULL,
            json_object('change', json_object('channelId', cited.channel_id))
          FROM (SELECT DISTINCT msg.channel_id AS channel_id
              FROM memory_source_messages s JOIN messages msg ON msg.id = s.message_id) AS cited
          WHERE true
        ON CONFLICT (channel_id, task) DO NOTHING;
      -- Each check (and every audience change) reads which memories are built on which (citedChannels): a scan of
      -- the table, once a channel (at 8,000 memories, a fifth of a check that moves nothing). Few memories are built
      -- on others (insights, merges): a partial index.
      CREATE INDEX memories_built_on ON memories(id, source_ids) WHERE source_ids <> '[]';
    `,
  },
  {
    version: 27,
    name: 'the channel of each message a memory cites, and memories built on others by owner',
    sql: `
      -- ADR 5, 2026-12-03 (session 19). A sender's first message in a private channel is an audience change of its
      -- room: the room's memories that cite another channel's message or are built on memories are checked
      -- (citedChannels of the room). Finding them read each memory of the room's row and each message it cites
      -- (about a millisecond for a room of 500 memories: a quarter of one ingest() a message in the bench's first
      -- thousand). The cited message's channel is kept beside the citation (a message never changes channel), in
      -- an index by memory; NULL when the message was not there when the memory was written (such a citation is
      -- checked, as one of another channel). Memories built on others are indexed by owner.
      ALTER TABLE memory_source_messages ADD COLUMN channel_id TEXT;
      UPDATE memory_source_messages SET channel_id = (SELECT channel_id FROM messages WHERE id = message_id);
      DROP INDEX memory_source_messages_by_memory;
      CREATE INDEX memory_source_messages_by_memory ON memory_source_messages(memory_id, channel_id);
      DROP TRIGGER memory_source_messages_insert;
      DROP TRIGGER memory_source_messages_update;
      CREATE TRIGGER memory_source_messages_insert AFTER INSERT ON memories
        BEGIN
          ${citeMessages('new')}
        END;
      CREATE TRIGGER memory_source_messages_update AFTER UPDATE OF source_message_ids ON memories
        BEGIN
          DELETE FROM memory_source_messages WHERE memory_id = old.id;
          ${citeMessages('new')}
        END;
      DROP INDEX memories_built_on;
      CREATE INDEX memories_built_on ON memories(owner, id, source_ids) WHERE source_ids <> '[]';
    `,
  },
  {
    version: 28,
    name: 'the write transactions an idempotent request committed',
    sql: `
      -- ADR 14, 2026-12-04 (session 25). Work that creates (a memory, messages) counts each of its write
      -- transactions that changed rows on its Idempotency-Key's row, in that transaction. A claim whose process died
      -- after such a commit, before its response was stored, is not taken over when its lock passes: the retry is
      -- told the work was done, where it did the work a second time.
      ALTER TABLE idempotency_keys ADD COLUMN committed INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 29,
    name: 'the key a display name reads as',
    sql: `
      -- ADR 40, 2026-12-05 (session 28). A display name is shown before what its user says in memories ("Bob: I
      -- approve"); a user whose name reads like another user's is labelled with their id as well. The key folds
      -- what a reader does not see (case, accents, invisible characters, look-alike letters): nameKey, of the
      -- display name, or of the id for a user without one. Filled below for the users written before.
      ALTER TABLE users ADD COLUMN name_key TEXT;
    `,
    after: (database) => {
      const users = database.prepare<[], { id: string; display_name: string | null }>(
        'SELECT id, display_name FROM users',
      );
      const setKey = database.prepare<[string, string]>('UPDATE users SET name_key = ? WHERE id = ?');
      for (const user of users.all()) setKey.run(nameKey(user.display_name ?? user.id), user.id);
      database.exec('CREATE INDEX users_by_name_key ON users(name_key)');
    },
  },
  {
    version: 30,
    name: 'a row and a key for every id a user is known by',
    sql: `
      -- ADR 40, 2026-12-05 (session 29). A display name that reads like another user's id is labelled too; the id
      -- of a sender, member or key user without a users row had no key to be found by. Every such id gets a row
      -- (without a name), written from now on with the message, membership or key that names it; id_key is nameKey
      -- of the id. Both keys are computed below for every user, with the fold of this release.
      ALTER TABLE users ADD COLUMN id_key TEXT;
    `,
    after: (database) => {
      const at = Date.now();
      const known = database
        .prepare<[], string>(
          `SELECT sender_id FROM messages UNION SELECT user_id FROM members
          UNION SELECT user_id FROM api_keys WHERE user_id IS NOT NULL`,
        )
        .pluck();
      const addUser = database.prepare<[string, number, number]>(
        'INSERT OR IGNORE INTO users (id, display_name, created_at, updated_at) VALUES (?, NULL, ?, ?)',
      );
      for (const id of known.all()) if (!isReservedId(id)) addUser.run(id, at, at);
      const users = database.prepare<[], { id: string; display_name: string | null }>(
        'SELECT id, display_name FROM users',
      );
      const setKeys = database.prepare<[string, string, string]>(
        'UPDATE users SET name_key = ?, id_key = ? WHERE id = ?',
      );
      for (const user of users.all()) setKeys.run(nameKey(user.display_name ?? user.id), nameKey(user.id), user.id);
      database.exec('CREATE INDEX users_by_id_key ON users(id_key)');
    },
  },
  {
    version: 31,
    name: 'a row for the user of every memory, and the keys a copy left out',
    sql: '',
    // ADR 40, 2026-12-05 (attack 29c). A user known only by their memories (personal memories remembered for them, a
    // mem0 file's) had no row, so no key to be found by; such a user gets a row (without a name), written from now on
    // with the memory. And `mneme copy` moved users without name_key and id_key, so in a copy made by a build of
    // migrations 29 and 30 no user was anyone's namesake: the keys left null are computed.
    after: (database) => {
      const at = Date.now();
      const known = database
        .prepare<[], string>('SELECT DISTINCT user_id FROM memories WHERE user_id IS NOT NULL')
        .pluck();
      const addUser = database.prepare<[string, number, number]>(
        'INSERT OR IGNORE INTO users (id, display_name, created_at, updated_at) VALUES (?, NULL, ?, ?)',
      );
      for (const id of known.all()) if (!isReservedId(id)) addUser.run(id, at, at);
      const unkeyed = database.prepare<[], { id: string; display_name: string | null }>(
        'SELECT id, display_name FROM users WHERE name_key IS NULL OR id_key IS NULL',
      );
      const setKeys = database.prepare<[string, string, string]>(
        'UPDATE users SET name_key = ?, id_key = ? WHERE id = ?',
      );
      for (const user of unkeyed.all()) setKeys.run(nameKey(user.display_name ?? user.id), nameKey(user.id), user.id);
    },
  },
  {
    version: 32,
    name: 'the labels of speakers whose namesake arrived after their memories',
    sql: '',
    // ADR 44, 2026-12-05 (session 30). A label was computed only when a memory was written: a user named like another
    // who became known later kept their plain name in the memories written before ("Bob: I approve" of Eve's, once a
    // Bob was known). From now on the write that brings the namesake labels them; the memories stored before are
    // labelled here, as a version of each by `maintenance`, their vectors left to `mneme reembed`.
    after: (database) => createSqliteSpeakerLabels(database).labelEveryNamesake(Date.now()),
  },
  {
    version: 33,
    name: 'the last name a user left, and when',
    // ADR 44, 2026-12-05 (session 31). A memory's text is made before its write (extraction may wait seconds for a
    // chat model); a user who renamed themselves meanwhile left the name the text calls them by, and the rename's
    // labels had no memory to find. The insert labels that name in a memory of messages sent before it was left.
    sql: `
      ALTER TABLE users ADD COLUMN left_name TEXT;
      ALTER TABLE users ADD COLUMN left_at INTEGER;
    `,
  },
];

/** Migration 27's trigger statement: a row of `memory_source_messages` per message memory `row` cites, with its channel. */
function citeMessages(row: 'new'): string {
  return `INSERT OR IGNORE INTO memory_source_messages (message_id, memory_id, channel_id)
            SELECT source.value, ${row}.id, (SELECT channel_id FROM messages WHERE id = source.value)
            FROM json_each(${row}.source_message_ids) AS source WHERE source.type = 'integer';`;
}

/** The sum of the SQLite varints of a record (an FTS5 document sizes record: a memory's length). */
function varintSum(record: Uint8Array): number {
  let sum = 0;
  let index = 0;
  while (index < record.length) {
    let value = 0;
    for (let read = 1; ; read++) {
      const byte = record[index++] ?? 0;
      if (read === 9) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    sum += value;
  }
  return sum;
}

/** Migration 21's trigger statements: the word block holding memory \`row\` deleted, the generation moved on. */
function dropWordBlock(row: 'new' | 'old'): string {
  return `DELETE FROM consolidation_word_blocks WHERE last_id >= ${row}.id AND first_id <= ${row}.id;
          UPDATE service_state SET value = value + 1 WHERE name = '${WORD_BLOCKS_GENERATION}';`;
}

/** Migration 16's trigger statements counting the memory `row` (`new` or `old`) into the word counts. */
function countIn(row: 'new' | 'old'): string {
  return `INSERT INTO memory_words_scratch (rowid, content, search_context)
            VALUES (${row}.id, ${row}.content, ${row}.search_context);
          INSERT INTO memory_words (stem, owner, memories)
            SELECT term, ${row}.owner, 1 FROM memory_words_scratch_terms WHERE true
            ON CONFLICT (stem, owner) DO UPDATE SET memories = memories + 1;
          INSERT INTO memory_word_owners (owner, memories, tokens)
            SELECT ${row}.owner, 1, IFNULL(SUM(cnt), 0) FROM memory_words_scratch_terms WHERE true
            ON CONFLICT (owner) DO UPDATE SET memories = memories + 1, tokens = tokens + excluded.tokens;
          INSERT INTO memory_words_scratch (memory_words_scratch) VALUES ('delete-all');`;
}

/** Migration 16's trigger statements taking the memory `row` out of the word counts. */
function countOut(row: 'new' | 'old'): string {
  return `INSERT INTO memory_words_scratch (rowid, content, search_context)
            VALUES (${row}.id, ${row}.content, ${row}.search_context);
          UPDATE memory_words SET memories = memories - 1
            WHERE owner = ${row}.owner AND stem IN (SELECT term FROM memory_words_scratch_terms);
          DELETE FROM memory_words
            WHERE owner = ${row}.owner AND memories <= 0 AND stem IN (SELECT term FROM memory_words_scratch_terms);
          UPDATE memory_word_owners SET memories = memories - 1,
              tokens = tokens - (SELECT IFNULL(SUM(cnt), 0) FROM memory_words_scratch_terms)
            WHERE owner = ${row}.owner;
          DELETE FROM memory_word_owners WHERE owner = ${row}.owner AND memories <= 0;
          INSERT INTO memory_words_scratch (memory_words_scratch) VALUES ('delete-all');`;
}

/**
 * Migration 19's trigger statements counting the memory `row` (`new` or `old`) into the word counts:
 * its owner key first (which numbers it), then one row per distinct stem under that number. With
 * `length` (migration 20), the memory's length in tokens too, in its row.
 */
function countInByNumber(row: 'new' | 'old', length = false): string {
  const lengthOf = length
    ? `UPDATE memories SET tokens = (SELECT IFNULL(SUM(cnt), 0) FROM memory_words_scratch_terms)
            WHERE id = ${row}.id;`
    : '';
  return `INSERT INTO memory_words_scratch (rowid, content, search_context)
            VALUES (${row}.id, ${row}.content, ${row}.search_context);
          INSERT INTO memory_word_owners (owner, memories, tokens)
            SELECT ${row}.owner, 1, IFNULL(SUM(cnt), 0) FROM memory_words_scratch_terms WHERE true
            ON CONFLICT (owner) DO UPDATE SET memories = memories + 1, tokens = tokens + excluded.tokens;
          INSERT INTO memory_words (owner, stem, memories)
            SELECT (SELECT id FROM memory_word_owners WHERE owner = ${row}.owner), term, 1
              FROM memory_words_scratch_terms WHERE true
            ON CONFLICT (owner, stem) DO UPDATE SET memories = memories + 1;
          ${lengthOf}
          INSERT INTO memory_words_scratch (memory_words_scratch) VALUES ('delete-all');`;
}

/** Migration 19's trigger statements taking the memory `row` out of the word counts. */
function countOutByNumber(row: 'new' | 'old'): string {
  return `INSERT INTO memory_words_scratch (rowid, content, search_context)
            VALUES (${row}.id, ${row}.content, ${row}.search_context);
          UPDATE memory_words SET memories = memories - 1
            WHERE owner = (SELECT id FROM memory_word_owners WHERE owner = ${row}.owner)
              AND stem IN (SELECT term FROM memory_words_scratch_terms);
          DELETE FROM memory_words
            WHERE owner = (SELECT id FROM memory_word_owners WHERE owner = ${row}.owner) AND memories <= 0
              AND stem IN (SELECT term FROM memory_words_scratch_terms);
          UPDATE memory_word_owners SET memories = memories - 1,
              tokens = tokens - (SELECT IFNULL(SUM(cnt), 0) FROM memory_words_scratch_terms)
            WHERE owner = ${row}.owner;
          DELETE FROM memory_word_owners WHERE owner = ${row}.owner AND memories <= 0;
          INSERT INTO memory_words_scratch (memory_words_scratch) VALUES ('delete-all');`;
}

export const latestSchemaVersion = sqliteMigrations.at(-1)?.version ?? 0;

/**
 * Brings the database up to `target` (the latest by default), one transaction per step. Each step
 * takes the write lock first (`BEGIN IMMEDIATE`) and only then reads the schema version, so processes
 * opening one new file at once apply every step exactly once: the others wait, then find it done. An
 * up-to-date database is only read. Refuses a database written by a newer mneme instead of guessing
 * at its schema, and one whose steps are not this mneme's (`checkRecordedSteps`).
 */
export function migrateSqlite(database: Database.Database, target = latestSchemaVersion): number {
  const recorded = () =>
    database
      .prepare<[], { present: number }>(
        "SELECT count(*) AS present FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
      )
      .get()?.present === 1;
  const currentVersion = () =>
    checkRecordedSteps(
      database.prepare<[], SchemaStep>('SELECT version, name FROM schema_migrations').all(),
      sqliteMigrations,
    );
  const nextStep = (current: number) =>
    sqliteMigrations.find((migration) => migration.version > current && migration.version <= target);
  const applyNextStep = database.transaction((): number | null => {
    database.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL
    )`);
    const current = currentVersion();
    const next = nextStep(current);
    if (!next) return current;
    database.exec(next.sql);
    next.after?.(database);
    database
      .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
      .run(next.version, next.name, Date.now());
    return null;
  });
  if (recorded()) {
    const current = currentVersion();
    if (!nextStep(current)) return current;
  }
  // Another process may be migrating the same file, then writing to it back to back: SQLite's busy
  // handler would wait for the write lock the whole busy timeout and lose every round, though nothing
  // may be left to migrate. So the lock is tried in short waits, and between them the schema is read
  // again (reads are not blocked in WAL mode), for as long as the connection's busy timeout, counted again from each
  // commit of another connection (the other process migrating step by step, then writing: it is making progress), up
  // to PROGRESS_WAIT_TIMEOUTS busy timeouts in all.
  const patience = Number(database.pragma('busy_timeout', { simple: true })) || 0;
  const started = Date.now();
  let deadline = started + patience;
  const dataVersion = () => {
    try {
      return Number(database.pragma('data_version', { simple: true }));
    } catch {
      return null;
    }
  };
  let seen = dataVersion();
  database.pragma(`busy_timeout = ${Math.min(patience, MIGRATION_LOCK_TRY_MS)}`);
  try {
    for (;;) {
      let reached: number | null;
      try {
        reached = applyNextStep.immediate();
      } catch (error) {
        const now = dataVersion();
        if (now !== null && seen !== null && now !== seen) {
          deadline = Math.min(started + PROGRESS_WAIT_TIMEOUTS * patience, Date.now() + patience);
        }
        seen = now;
        if (!isBusy(error) || Date.now() >= deadline) throw error;
        try {
          if (recorded() && !nextStep(currentVersion())) return currentVersion();
        } catch (readError) {
          // A file still being switched to WAL by its creator can refuse a read too: try again.
          if (!isBusy(readError)) throw readError;
        }
        continue;
      }
      if (reached !== null) return reached;
    }
  } finally {
    database.pragma(`busy_timeout = ${patience}`);
  }
}

/** Milliseconds one attempt at the migration's write lock waits before the schema is read again. */
const MIGRATION_LOCK_TRY_MS = 100;

/** True for SQLITE_BUSY and its extended codes (another connection holds the lock). */
const isBusy = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? '').startsWith('SQLITE_BUSY');
