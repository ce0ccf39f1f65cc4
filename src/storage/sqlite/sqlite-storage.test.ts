import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { ErrorCode } from '../../core/errors.js';
import { nameKey } from '../../core/name-key.js';
import { globalMemory } from '../global-memory.fixture.js';
import { describeStorageContract, expectKnownIdsKeyed } from '../memory-store.contract.js';
import { openSqliteDatabase, writeSqlite } from './sqlite-database.js';
import { migrateSqlite, sqliteMigrations } from './sqlite-migrations.js';
import { createSqliteStorage } from './sqlite-storage.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-sqlite-'));
let files = 0;
const newFile = () => join(folder, `store-${files++}.db`);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describeStorageContract('SQLite :memory:', async () => createSqliteStorage({ path: ':memory:' }));
describeStorageContract('SQLite file', async () => createSqliteStorage({ path: newFile() }));

const at = Date.parse('2024-06-15T12:00:00.000Z');

/** A unit vector along `values`. */
function unit(values: number[]): Float32Array {
  const norm = Math.hypot(...values);
  return Float32Array.from(values, (value) => value / norm);
}

/**
 * Stores memories with vectors in a file of schema 10 or older as mneme wrote them then: a float32
 * vec0 table `memory_vectors` with the owner as a metadata column, recorded in `vector_index`.
 */
function legacyVectorStore(database: Database.Database, model: string, dimensions: number) {
  database.exec(`CREATE VIRTUAL TABLE memory_vectors USING vec0(
    memory_id INTEGER PRIMARY KEY, embedding float[${dimensions}] distance_metric=cosine, owner TEXT
  )`);
  database.prepare('INSERT INTO vector_index (id, model, dimensions) VALUES (1, ?, ?)').run(model, dimensions);
  const memory = database.prepare<Record<string, unknown>, { id: number }>(
    `INSERT INTO memories (content, category, sector, scope, owner, user_id, source, channel_id, importance, valid_from,
      created_at, updated_at, embedding_model)
    VALUES (@content, 'fact', 'semantic', @scope, @owner, @userId, @source, @channelId, 0.5, @at, @at, @at, @model)
    RETURNING id`,
  );
  const vector = database.prepare('INSERT INTO memory_vectors (memory_id, embedding, owner) VALUES (?, ?, ?)');
  return (
    content: string,
    source: 'extraction' | 'manual',
    channelId: string | null,
    embedding: Float32Array,
    owner = 'global',
  ): number => {
    const userId = owner.startsWith('user:') ? owner.slice(5) : null;
    const scope = userId ? 'personal' : 'global';
    const id = memory.get({ content, scope, owner, userId, source, channelId, at, model })?.id ?? 0;
    vector.run(BigInt(id), Buffer.from(embedding.buffer, embedding.byteOffset, embedding.byteLength), owner);
    return id;
  };
}

/**
 * Runs `script` on a connection `other` to the file at `path` in another thread, with `workerData`
 * (`path`, `released`, and `data`'s fields); the script posts a message once it holds what the test
 * waits for, and waits on `workerData.released`, which `release()` signals.
 */
async function inOtherThread(path: string, script: string, data: Record<string, unknown> = {}) {
  const released = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    const other = new (require('better-sqlite3'))(workerData.path);
    ${script}
    other.close();`,
    { eval: true, workerData: { ...data, path, released } },
  );
  const exited = once(worker, 'exit');
  await once(worker, 'message');
  return {
    async release() {
      Atomics.store(released, 0, 1);
      Atomics.notify(released, 0);
      await exited;
    },
  };
}

/**
 * Takes the write lock of the file at `path` on a connection of another thread, which lets go when
 * `release` is called or, on its own, after `holdMs` (shorter than the default busy timeout, so a
 * write that waits the default gets the lock and succeeds).
 */
function holdWriteLock(path: string, holdMs: number) {
  return inOtherThread(
    path,
    `other.exec('BEGIN IMMEDIATE');
    parentPort.postMessage('locked');
    Atomics.wait(workerData.released, 0, 0, workerData.holdMs);
    other.exec('ROLLBACK');`,
    { holdMs },
  );
}

describe('SQLite storage', () => {
  it('creates the whole schema in an empty database', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    const tables = database
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => row.name);
    for (const table of [
      'schema_migrations',
      'messages',
      'messages_fts',
      'memories',
      'memories_fts',
      'memory_links',
      'memory_versions',
      'maintenance_state',
      'users',
      'topics',
      'projects',
      'vector_index',
      'api_keys',
      'vector_list_state',
      'vector_list_training',
      'vector_lists',
    ]) {
      expect(tables).toContain(table);
    }
    const versions = database
      .prepare<[], { version: number }>('SELECT version FROM schema_migrations ORDER BY version')
      .all();
    expect(versions.map((row) => row.version)).toEqual(sqliteMigrations.map((migration) => migration.version));
    database.close();
  });

  it('gives the users of a schema 28 file the key their display name reads as (migration 29)', async () => {
    const path = newFile();
    const old = new Database(path);
    sqliteVec.load(old);
    expect(migrateSqlite(old, 28)).toBe(28);
    old
      .prepare('INSERT INTO users (id, display_name, created_at, updated_at) VALUES (?, ?, ?, ?), (?, NULL, ?, ?)')
      .run('robert', 'Bob', at, at, 'zed', at, at);
    old.close();
    const storage = createSqliteStorage({ path });
    try {
      expect(await storage.directory.hasNamesake('eve', nameKey('B0B'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Zed'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Ann'))).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('gives every sender, member and key user of a schema 29 file a row and the key of their id (migration 30)', async () => {
    const path = newFile();
    const old = new Database(path);
    sqliteVec.load(old);
    expect(migrateSqlite(old, 29)).toBe(29);
    old
      .prepare(
        `INSERT INTO messages (id, channel_id, sender_id, role, content, created_at)
        VALUES (1, 'c', 'BobSmith', 'user', 'hi', ?), (2, 'c', 'assistant', 'assistant', 'hello', ?)`,
      )
      .run(at, at);
    old
      .prepare("INSERT INTO members (kind, space_id, user_id, added_at) VALUES ('channel', 'c', 'carol.w', ?)")
      .run(at);
    old
      .prepare("INSERT INTO api_keys (prefix, hash, label, user_id, created_at) VALUES ('p', 'h', 'k', 'Kim.Lee', ?)")
      .run(at);
    old
      .prepare('INSERT INTO users (id, display_name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)')
      .run('robert', 'Rob', 'stale', at, at);
    old.close();
    const storage = createSqliteStorage({ path });
    try {
      await expectKnownIdsKeyed(storage);
    } finally {
      await storage.close();
    }
  });

  it('finds the memories superseded by one through an index, not a scan of every memory (migration 23)', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    // A merge hands on each original's supersession, an archive clears those pointing at it (the statements of
    // sqlite-memory-writes.ts), and deleting a memory sets them to NULL (the foreign key).
    for (const sql of [
      'UPDATE memories SET superseded_by = ? WHERE superseded_by = ? AND archived_at IS NULL RETURNING id',
      'UPDATE memories SET superseded_by = NULL WHERE superseded_by = ?',
      'SELECT id FROM memories WHERE superseded_by = ?',
    ]) {
      const plan = database
        .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...Array.from({ length: sql.split('?').length - 1 }, () => 1))
        .map((row) => row.detail)
        .join('; ');
      expect(plan).toContain('memories_by_superseded');
    }
    database.close();
  });

  it('opens a file in WAL mode with foreign keys on and durable commits, and never sleeps on a lock once open', () => {
    const database = openSqliteDatabase({ path: newFile() });
    expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(database.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(database.pragma('synchronous', { simple: true })).toBe(2);
    expect(database.pragma('busy_timeout', { simple: true })).toBe(0);
    database.close();
  });

  it('fails a write at once with STORE_BUSY under busyTimeoutMs 0, and waits for the lock under a longer one', async () => {
    const path = newFile();
    const memory = globalMemory('written while another connection writes');
    const impatient = createSqliteStorage({ path, busyTimeoutMs: 0 });
    const patient = createSqliteStorage({ path, busyTimeoutMs: 60_000 });
    const lock = await holdWriteLock(path, 2_000);
    try {
      await expect(impatient.memories.insert([memory], { at, actor: null })).rejects.toMatchObject({
        code: ErrorCode.StoreBusy,
      });
    } finally {
      await lock.release();
    }
    const briefLock = await holdWriteLock(path, 50);
    expect(await patient.memories.insert([memory], { at, actor: null })).toHaveLength(1);
    await briefLock.release();
    await impatient.close();
    await patient.close();
  });

  it('commits a deferred write without an fsync of its own, and is durable again after it, also when it fails', () => {
    const database = openSqliteDatabase({ path: newFile() });
    const synchronous = () => database.pragma('synchronous', { simple: true });
    const during: unknown[] = [];
    writeSqlite(database, 'a deferred write', () => during.push(synchronous()), { deferred: true });
    writeSqlite(database, 'a durable write', () => during.push(synchronous()));
    expect(during).toEqual([1, 2]);
    expect(() =>
      writeSqlite(
        database,
        'a failing deferred write',
        () => {
          throw new Error('boom');
        },
        { deferred: true },
      ),
    ).toThrowError(/a failing deferred write: boom/);
    expect(synchronous()).toBe(2);
    database.close();
  });

  it('makes a write inside a write a savepoint of it: its failure, caught, undoes its own rows only', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    database.exec('CREATE TABLE notes (text TEXT)');
    const add = database.prepare<[string]>('INSERT INTO notes (text) VALUES (?)');
    writeSqlite(database, 'an outer write', () => {
      add.run('outer');
      expect(() =>
        writeSqlite(database, 'an inner write', () => {
          add.run('inner');
          throw new Error('boom');
        }),
      ).toThrowError(/an inner write: boom/);
      writeSqlite(database, 'another inner write', () => add.run('kept'));
    });
    expect(() =>
      writeSqlite(database, 'a failing write', () => {
        add.run('undone');
        throw new Error('boom');
      }),
    ).toThrowError(/a failing write: boom/);
    expect(database.inTransaction).toBe(false);
    expect(database.prepare('SELECT text FROM notes ORDER BY rowid').pluck().all()).toEqual(['outer', 'kept']);
    database.close();
  });

  it('opens a file that another process finished migrating while it waited, though that process keeps writing', async () => {
    const path = newFile();
    const latest = sqliteMigrations.at(-1);
    if (!latest) throw new Error('no migrations');
    openSqliteDatabase({ path, migrateTo: latest.version - 1 }).close();
    // Another connection holds the write lock, applies the last step, commits and at once takes the
    // lock again for longer than the default busy timeout, as an importer writing batches back to back.
    const other = await inOtherThread(
      path,
      `other.exec('BEGIN IMMEDIATE');
      parentPort.postMessage('locked');
      Atomics.wait(workerData.released, 0, 0, 300);
      other.exec(workerData.sql);
      other.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)').run(workerData.version, workerData.name);
      other.exec('COMMIT');
      other.exec('BEGIN IMMEDIATE');
      Atomics.wait(workerData.released, 0, 0, 8000);
      other.exec('ROLLBACK');`,
      { sql: latest.sql, version: latest.version, name: latest.name },
    );
    try {
      const opened = openSqliteDatabase({ path });
      const version = opened.prepare('SELECT MAX(version) AS version FROM schema_migrations').get();
      opened.close();
      expect(version).toEqual({ version: latest.version });
    } finally {
      await other.release();
    }
  });

  it('migrates a database of the previous schema version and keeps its data', async () => {
    const path = newFile();
    // The step before the latest (numbers may skip one that another branch takes).
    const previous = sqliteMigrations.at(-2)?.version ?? 0;
    const old = openSqliteDatabase({ path, migrateTo: previous });
    old
      .prepare(`INSERT INTO memories (content, category, sector, scope, owner, source, importance, valid_from, created_at, updated_at)
        VALUES ('written by the previous version', 'fact', 'semantic', 'global', 'global', 'manual', 0.5, ?, ?, ?)`)
      .run(at, at, at);
    expect(old.prepare('SELECT MAX(version) AS version FROM schema_migrations').get()).toEqual({
      version: previous,
    });
    old.close();

    const storage = createSqliteStorage({ path });
    const page = await storage.memories.list({ archived: 'exclude', limit: 10, offset: 0, owners: null });
    expect(page.memories.map((memory) => memory.content)).toEqual(['written by the previous version']);
    const hits = await storage.memories.searchText({ terms: ['previous'], owners: ['global'], limit: 5 });
    expect(hits).toHaveLength(1);
    await storage.memories.update(page.memories[0]?.id ?? 0, { importance: 0.9 }, { at, actor: null });
    expect((await storage.memories.history(page.memories[0]?.id ?? 0)).map((version) => version.action)).toEqual([
      'update',
    ]);
    await storage.close();
  });

  it('counts per owner the words of the memories a schema 15 file held, as the full-text index stems them (migration 16)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 15 });
    const insert = old.prepare<[string, string | null, string, string]>(`INSERT INTO memories (content, search_context,
        category, sector, scope, owner, user_id, source, importance, valid_from, created_at, updated_at)
      VALUES (?, ?, 'fact', 'semantic', 'personal', ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
    insert.run('Ann edits kestrels', 'Bob: who edits?', 'user:ann', 'ann');
    insert.run('Ann keeps a café kestrel', null, 'user:ann', 'ann');
    insert.run('Bob edited the kestrel', null, 'user:bob', 'bob');
    old.close();

    const storage = createSqliteStorage({ path });
    try {
      const counted = async (owners: string[]) =>
        storage.memories.termCounts(['kestrel', 'editing', 'bob', 'cafe'], { owners });
      expect(await counted(['user:ann'])).toEqual({ memories: 2, counts: [2, 1, 1, 1] });
      expect(await counted(['user:bob'])).toEqual({ memories: 1, counts: [1, 1, 1, 0] });
      expect(await counted(['user:ann', 'user:bob'])).toEqual({ memories: 3, counts: [3, 2, 2, 1] });
      // Kept by the triggers from then on.
      const [added] = await storage.memories.insert(
        [{ ...globalMemory('Bob edits'), scope: 'personal', owner: 'user:bob', userId: 'bob' }],
        { at, actor: null },
      );
      expect(await counted(['user:bob'])).toEqual({ memories: 2, counts: [1, 2, 2, 0] });
      await storage.memories.purgeUser('bob');
      expect(await counted(['user:bob'])).toEqual({ memories: 0, counts: [0, 0, 0, 0] });
      expect(added).toBeDefined();
    } finally {
      await storage.close();
    }
  });

  it('keeps the word counts of a schema 18 file, clustered by owner number from then on (migration 19)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 18 });
    const insert = old.prepare<[string, string | null, string, string | null, string]>(`INSERT INTO memories
        (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
         created_at, updated_at)
      VALUES (?, ?, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
    insert.run('Ann edits kestrels', 'Bob: who edits?', 'personal', 'ann', 'user:ann');
    insert.run('Ann keeps a café kestrel', null, 'personal', 'ann', 'user:ann');
    insert.run('Bob edited the kestrel', null, 'personal', 'bob', 'user:bob');
    insert.run('the kestrel of the room', null, 'room', null, 'room:r');
    old.prepare("DELETE FROM memories WHERE content = 'Ann keeps a café kestrel'").run();
    old.close();

    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      const counted = async (owners: string[]) =>
        storage.memories.termCounts(['kestrel', 'editing', 'bob', 'cafe', 'room'], { owners });
      expect(await counted(['user:ann'])).toEqual({ memories: 1, counts: [1, 1, 1, 0, 0] });
      expect(await counted(['user:bob'])).toEqual({ memories: 1, counts: [1, 1, 1, 0, 0] });
      expect(await counted(['user:ann', 'user:bob', 'room:r'])).toEqual({ memories: 3, counts: [3, 2, 2, 0, 1] });
      // One row per owner key and stem, keyed by the owner key's number first.
      const key = raw
        .prepare<[], { name: string; type: string; pk: number }>(
          "SELECT name, type, pk FROM pragma_table_info('memory_words')",
        )
        .all()
        .filter((column) => column.pk > 0)
        .sort((a, b) => a.pk - b.pk);
      expect(key).toEqual([
        { name: 'owner', type: 'INTEGER', pk: 1 },
        { name: 'stem', type: 'TEXT', pk: 2 },
      ]);
      // A purged owner key's number may be taken again: the new owner key counts only its own words.
      const numbers = () => raw.prepare('SELECT owner, id FROM memory_word_owners ORDER BY id').all();
      expect(numbers()).toEqual([
        { owner: 'room:r', id: 1 },
        { owner: 'user:ann', id: 2 },
        { owner: 'user:bob', id: 3 },
      ]);
      await storage.memories.purgeUser('bob');
      await storage.memories.insert(
        [{ ...globalMemory('Cat edits herons'), scope: 'personal', owner: 'user:cat', userId: 'cat' }],
        { at, actor: null },
      );
      expect(numbers()).toContainEqual({ owner: 'user:cat', id: 3 });
      expect(await counted(['user:cat'])).toEqual({ memories: 1, counts: [0, 1, 0, 0, 0] });
      expect(await counted(['user:bob'])).toEqual({ memories: 0, counts: [0, 0, 0, 0, 0] });
      expect(
        raw
          .prepare('SELECT count(*) AS stale FROM memory_words WHERE owner NOT IN (SELECT id FROM memory_word_owners)')
          .get(),
      ).toEqual({ stale: 0 });
    } finally {
      raw.close();
      await storage.close();
    }
  });

  it("fills each memory's length in tokens from the full-text index of a schema 19 file, in the owner index (migration 20)", async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 19 });
    const insert = old.prepare<[string, string | null, number | null, number | null]>(`INSERT INTO memories
        (content, search_context, category, sector, scope, owner, source, importance, valid_from, created_at,
         updated_at, archived_at, faded_at)
      VALUES (?, ?, 'fact', 'semantic', 'global', 'global', 'manual', 0.5, ${at}, ${at}, ${at}, ?, ?)`);
    insert.run('Ann edits kestrels', 'Bob: who edits?', null, null);
    insert.run('the kestrel of the room, the kestrel of the dune', null, null, null);
    insert.run('forgotten, with a context', 'the question it answered', at, null);
    insert.run('faded kestrels', null, at, at);
    insert.run('', null, null, null);
    old.close();

    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      expect(raw.prepare('SELECT content, tokens FROM memories ORDER BY id').all()).toEqual([
        { content: 'Ann edits kestrels', tokens: 6 },
        { content: 'the kestrel of the room, the kestrel of the dune', tokens: 10 },
        { content: 'forgotten, with a context', tokens: 8 },
        { content: 'faded kestrels', tokens: 2 },
        { content: '', tokens: 0 },
      ]);
      expect(lengthsRecounted(raw)).toEqual(lengthsStored(raw));
      expect(
        raw.prepare("SELECT name FROM pragma_index_info('memories_searchable_owner') ORDER BY seqno").pluck().all(),
      ).toEqual(['id', 'owner', 'faded_at', 'tokens']);
      // Searched by the same statistics as before the step.
      const hits = await storage.memories.searchText({ terms: ['kestrel'], owners: ['global'], limit: 5 });
      expect(hits.map((hit) => hit.id)).toEqual([2, 1]);
    } finally {
      raw.close();
      await storage.close();
    }
  });

  it("keeps each memory's length in tokens through inserts, edits, forgets, fades, restores and purges", async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path });
    const raw = new Database(path);
    try {
      const personal = (content: string, userId: string, searchContext: string | null = null) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId, searchContext });
      const stored = await storage.memories.insert(
        [
          personal('Ann edits kestrels', 'ann', 'Bob: who edits the kestrels of the dune?'),
          personal('Ann keeps a café kestrel', 'ann'),
          personal('Bob edited the kestrel', 'bob'),
          globalMemory('the kestrel of the room'),
          globalMemory('kestrels hover, kestrels hunt', { searchContext: 'what do kestrels do?' }),
        ],
        { at, actor: null },
      );
      const [edited, forgotten, purged, faded, other] = stored.map((memory) => memory.id);
      const check = () => {
        const stored = lengthsStored(raw);
        expect(stored).toEqual(lengthsRecounted(raw));
        // The owner index holds each searchable memory's length too.
        const indexed = raw
          .prepare<[], [number, number]>(
            `SELECT id, tokens FROM memories INDEXED BY memories_searchable_owner
              WHERE archived_at IS NULL OR faded_at IS NOT NULL ORDER BY id`,
          )
          .raw()
          .all();
        for (const [id, tokens] of indexed) expect(tokens).toBe(stored.get(id));
        return stored;
      };
      expect(check().get(edited ?? 0)).toBe(11);

      await storage.memories.update(
        edited ?? 0,
        { content: 'Ann edits kestrels and herons every day' },
        {
          at,
          actor: null,
        },
      );
      expect(check().get(edited ?? 0)).toBe(15);
      raw.prepare('UPDATE memories SET search_context = NULL WHERE id = ?').run(edited);
      expect(check().get(edited ?? 0)).toBe(7);
      raw
        .prepare("UPDATE memories SET search_context = 'a longer context than it had', owner = 'room:r' WHERE id = ?")
        .run(other);
      expect(check().get(other ?? 0)).toBe(10);
      await storage.memories.archive([forgotten ?? 0], { at, actor: null });
      await storage.memories.archive([faded ?? 0], { at, actor: null }, { fade: true });
      check();
      await storage.memories.restore(forgotten ?? 0, null, { at, actor: null });
      await storage.memories.restore(faded ?? 0, null, { at, actor: null });
      expect(check().get(forgotten ?? 0)).toBe(5);
      await storage.memories.purgeUser('bob');
      expect(check().has(purged ?? 0)).toBe(false);
      raw.prepare('DELETE FROM memories WHERE id = ?').run(other);
      expect([...check().keys()]).toEqual([edited, forgotten, faded]);
    } finally {
      raw.close();
      await storage.close();
    }
  });

  it("ranks a search of some owners by their memories' statistics: of every owner, exactly as FTS5's bm25() ranks", async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    try {
      const personal = (content: string, userId: string) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId });
      const stored = await storage.memories.insert(
        [
          personal('the kestrel kestrel kestrel hovers over the long grass of the dune', 'ann'),
          personal('a kestrel', 'ann'),
          personal('kestrels and herons and more herons', 'bob'),
          { ...personal('yes, twice', 'bob'), searchContext: 'Ann: did you see the heron and the kestrel?' },
          globalMemory('the heron fishes; a heron waits; herons everywhere at the lake shore today'),
          globalMemory('gulls only'),
          globalMemory('an archived kestrel'),
        ],
        { at, actor: null },
      );
      await storage.memories.archive([stored.at(-1)?.id ?? 0], { at, actor: null });
      const every = ['global', 'user:ann', 'user:bob'];
      for (const terms of [['kestrel'], ['heron', 'kestrel'], ['herons', 'dune', 'twice'], ['gull', 'missing']]) {
        const byIndex = await storage.memories.searchText({ terms, owners: null, limit: 10 });
        const visible = await storage.memories.searchText({ terms, owners: every, limit: 10 });
        expect(visible.map((hit) => hit.id).sort()).toEqual(byIndex.map((hit) => hit.id).sort());
        const scores = new Map(byIndex.map((hit) => [hit.id, hit.score]));
        for (const hit of visible) expect(hit.score).toBeCloseTo(scores.get(hit.id) ?? Number.NaN, 9);
      }
    } finally {
      await storage.close();
    }
  });

  it("counts a viewer's words again after a write of this connection or of another one", async () => {
    const path = newFile();
    const first = createSqliteStorage({ path });
    const second = createSqliteStorage({ path });
    try {
      const kestrel = (content: string) => [globalMemory(content)];
      const counted = async () =>
        (await first.memories.termCounts(['kestrel', 'heron'], { owners: ['global'] })).counts;
      await first.memories.insert(kestrel('a kestrel'), { at, actor: null });
      expect(await counted()).toEqual([1, 0]);
      expect(await counted()).toEqual([1, 0]);
      await second.memories.insert(kestrel('a kestrel and a heron'), { at, actor: null });
      expect(await counted()).toEqual([2, 1]);
      await first.memories.insert(kestrel('another kestrel'), { at, actor: null });
      expect(await counted()).toEqual([3, 1]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('ranks long memories (document sizes of several bytes), repeated words and faded memories exactly as bm25() does', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    try {
      const personal = (content: string, userId: string) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId });
      // Columns of 127, 128, 300 and 20,000 tokens: sizes of one, two and three bytes.
      const filler = (count: number) => Array.from({ length: count }, (_, index) => `w${index % 97}`).join(' ');
      const stored = await storage.memories.insert(
        [
          personal(`kestrel ${filler(126)}`, 'ann'),
          personal(`kestrel kestrel ${filler(126)}`, 'ann'),
          { ...personal('heron kestrel', 'bob'), searchContext: `kestrel heron ${filler(298)}` },
          globalMemory(`${filler(19_998)} heron heron`),
          globalMemory('kestrel heron kestrel heron kestrel'),
          globalMemory('a faded kestrel and a faded heron'),
          // Memories without the words, so that their weights are not the floor of 1e-6.
          ...Array.from({ length: 12 }, (_, index) => globalMemory(`gulls only, ${index} of them`)),
        ],
        { at, actor: null },
      );
      await storage.memories.archive([stored[5]?.id ?? 0], { at, actor: null }, { fade: true });
      const every = ['global', 'user:ann', 'user:bob'];
      for (const includeFaded of [false, true]) {
        for (const terms of [['kestrel'], ['heron'], ['kestrel', 'heron'], ['kestrel', 'w5', 'faded']]) {
          const byIndex = await storage.memories.searchText({ terms, owners: null, limit: 10, includeFaded });
          const visible = await storage.memories.searchText({ terms, owners: every, limit: 10, includeFaded });
          expect(visible.map((hit) => hit.id)).toEqual(byIndex.map((hit) => hit.id));
          expect(visible.length).toBeGreaterThan(0);
          visible.forEach((hit, index) => {
            expect(hit.score).toBeCloseTo(byIndex[index]?.score ?? Number.NaN, 9);
          });
        }
      }
      expect(await storage.memories.searchText({ terms: ['kestrel'], owners: [], limit: 10 })).toEqual([]);
    } finally {
      await storage.close();
    }
  });

  it('ranks words the tokenizer stems, folds or splits (a phrase for FTS5) exactly as bm25() does', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    try {
      const personal = (content: string, userId: string) =>
        globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId });
      const long = 'k'.repeat(70);
      await storage.memories.insert(
        [
          personal('an e-mail about the café, another e-mail, and an email', 'ann'),
          personal('the cafe was naïve; Café CAFÉ café', 'ann'),
          { ...personal('mail me', 'bob'), searchContext: 'e-mail the café owner about running' },
          globalMemory(`runs ran running runner ${long} ${long}`),
          globalMemory('Über alles: the e mail of the co-op'),
          ...Array.from({ length: 12 }, (_, index) => globalMemory(`gulls only, ${index} of them`)),
        ],
        { at, actor: null },
      );
      const every = ['global', 'user:ann', 'user:bob'];
      const searches = [['e-mail'], ['café'], ['CAFÉ', 'naive'], ['running'], [long], ['über', 'co-op', 'mail']];
      for (const terms of searches) {
        const byIndex = await storage.memories.searchText({ terms, owners: null, limit: 10 });
        const visible = await storage.memories.searchText({ terms, owners: every, limit: 10 });
        expect(visible.map((hit) => hit.id)).toEqual(byIndex.map((hit) => hit.id));
        expect(visible.length).toBeGreaterThan(0);
        visible.forEach((hit, index) => {
          expect(hit.score).toBeCloseTo(byIndex[index]?.score ?? Number.NaN, 9);
        });
      }
    } finally {
      await storage.close();
    }
  });

  it('moves maintenance watermarks of a schema 5 file to the task names episodes and consolidate (migration 6)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 5 });
    const state = old.prepare('INSERT INTO maintenance_state (channel_id, task, watermark) VALUES (?, ?, ?)');
    state.run('room', 'episode', 41);
    state.run('', 'consolidation', 17);
    state.run('', 'link', 9);
    old.close();

    const storage = createSqliteStorage({ path });
    const watermarks = async (task: string) =>
      (await storage.maintenanceState.list(task)).map((row) => [row.channelId, row.watermark]);
    expect(await watermarks('episodes')).toEqual([['room', 41]]);
    expect(await watermarks('consolidate')).toEqual([['', 17]]);
    expect(await watermarks('link')).toEqual([['', 9]]);
    expect(await watermarks('episode')).toEqual([]);
    expect(await watermarks('consolidation')).toEqual([]);
    await storage.close();
  });

  it('makes the senders of a schema 6 file members of their channels, topics and projects, and remembers its keys (migration 7)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 6 });
    old.prepare("INSERT INTO projects (id, created_at) VALUES ('apollo', 1)").run();
    old.prepare("INSERT INTO topics (id, project_id, created_at) VALUES ('t1', 'apollo', 1)").run();
    const message = old.prepare(
      'INSERT INTO messages (channel_id, sender_id, role, content, topic_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    message.run('room', 'ann', 'user', 'hello', 't1', 5);
    message.run('room', 'bob', 'user', 'hi', null, 6);
    message.run('dm-cy', 'cy', 'user', 'psst', null, 7);
    old
      .prepare("INSERT INTO api_keys (prefix, hash, label, created_at, revoked_at) VALUES ('p', 'h', 'old', 1, 2)")
      .run();
    old.close();

    const storage = createSqliteStorage({ path });
    expect(await storage.memberships.members('channel', 'room')).toEqual(['ann', 'bob']);
    expect(await storage.memberships.members('channel', 'dm-cy')).toEqual(['cy']);
    expect(await storage.memberships.members('topic', 't1')).toEqual(['ann']);
    expect(await storage.memberships.members('project', 'apollo')).toEqual(['ann']);
    expect(await storage.memberships.getChannel('room')).toEqual({
      id: 'room',
      visibility: 'private',
      members: ['ann', 'bob'],
    });
    expect(await storage.apiKeys.everCreated()).toBe(true);
    await storage.close();

    const fresh = createSqliteStorage({ path: ':memory:' });
    expect(await fresh.apiKeys.everCreated()).toBe(false);
    await fresh.close();
  });

  it('narrows facts a schema 7 file extracted as global from a channel to that room, vectors included (migration 8)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 7 });
    const store = legacyVectorStore(old, 'm', 8);
    const east = unit([1, 0, 0, 0, 0, 0, 0, 0]);
    store('The production password is hunter2', 'extraction', 'dm-bob', east);
    store('The office opens at 8', 'manual', null, east);
    store('Standup is at 10', 'manual', 'team', east);
    old.close();

    const storage = createSqliteStorage({ path });
    const { memories } = await storage.memories.list({ archived: 'exclude', limit: 10, offset: 0, owners: null });
    expect(memories.map((memory) => [memory.content, memory.scope]).sort()).toEqual([
      ['Standup is at 10', 'global'],
      ['The office opens at 8', 'global'],
      ['The production password is hunter2', 'room'],
    ]);
    const globalHits = await storage.memories.searchVector({ vector: east, model: 'm', owners: ['global'], limit: 10 });
    expect(globalHits).toHaveLength(2);
    const roomHits = await storage.memories.searchVector({
      vector: east,
      model: 'm',
      owners: ['room:dm-bob'],
      limit: 10,
    });
    expect(roomHits).toHaveLength(1);
    await storage.close();
  });

  it('moves the vectors of a schema 9 file into the bit index and the float32 slices, exactly (migration 12)', async () => {
    const path = newFile();
    const old = openSqliteDatabase({ path, migrateTo: 9 });
    const store = legacyVectorStore(old, 'm', 400);
    const vectors = Array.from({ length: 6 }, (_, index) =>
      unit(Array.from({ length: 400 }, (_, dimension) => Math.sin((index + 1) * (dimension + 1)))),
    );
    const ids = vectors.map((vector, index) =>
      store(`memory ${index}`, 'manual', index % 2 ? 'team' : null, vector, index % 3 ? 'global' : 'user:ann'),
    );
    old.close();

    const storage = createSqliteStorage({ path });
    expect(await storage.vectorIndex()).toEqual({ model: 'm', dimensions: 400 });
    const read = await storage.maintenance.vectors(ids, 'm');
    expect(ids.map((id) => [...(read.get(id) ?? [])])).toEqual(vectors.map((vector) => [...vector]));
    const hits = await storage.memories.searchVector({
      vector: vectors[4] ?? new Float32Array(400),
      model: 'm',
      owners: ['global'],
      limit: 10,
    });
    expect(hits.map((hit) => hit.id).sort()).toEqual([ids[1], ids[2], ids[4], ids[5]].sort());
    expect(hits[0]).toEqual({ id: ids[4], score: expect.closeTo(1, 6) });
    const annHits = await storage.memories.searchVector({
      vector: vectors[3] ?? new Float32Array(400),
      model: 'm',
      owners: ['user:ann'],
      limit: 10,
    });
    expect(annHits.map((hit) => hit.id)).toEqual([ids[3], ids[0]]);
    await storage.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'memory_vectors'").all()).toEqual([]);
    expect(raw.prepare('SELECT owner, vectors FROM vector_owners ORDER BY owner').all()).toEqual([
      { owner: 'global', vectors: 4 },
      { owner: 'user:ann', vectors: 2 },
    ]);
    raw.close();
  });

  it('numbers the exchange chunks of a schema 8 file by message, a duplicate too, and knows what each memory cites (migration 9)', async () => {
    const path = newFile();
    const old = createSqliteStorage({ path, migrateTo: 8 });
    const room = { scope: 'room', owner: 'room:room', channelId: 'room' } as const;
    const turn = (content: string, sourceMessageIds: number[]) =>
      globalMemory(content, {
        ...room,
        category: 'exchange',
        sector: 'episodic',
        source: 'exchange',
        sourceMessageIds,
      });
    const [first, second, duplicate, single, fact] = await old.memories.insert(
      [
        turn('Oz: a long turn, first chunk', [5, 6]),
        turn('Oz: a long turn, second chunk', [5, 6]),
        turn('Oz: a long turn, first chunk', [5, 6]),
        turn('Oz: a turn nobody answered', [7]),
        globalMemory('The team meets on Mondays', { ...room, source: 'extraction', sourceMessageIds: [5, 9] }),
        globalMemory('A note without messages', room),
      ],
      { at, actor: null },
    );
    await old.close();

    const storage = createSqliteStorage({ path });
    const raw = openSqliteDatabase({ path });
    const chunks = raw
      .prepare('SELECT id, chunk_message_id AS messageId, chunk_index AS chunkIndex FROM memories ORDER BY id')
      .all();
    raw.close();
    expect(chunks).toEqual([
      { id: first?.id, messageId: 5, chunkIndex: 0 },
      { id: second?.id, messageId: 5, chunkIndex: 1 },
      { id: duplicate?.id, messageId: 5, chunkIndex: 2 },
      { id: single?.id, messageId: 7, chunkIndex: 0 },
      { id: fact?.id, messageId: null, chunkIndex: null },
      { id: expect.any(Number), messageId: null, chunkIndex: null },
    ]);
    const citing = await storage.extraction.citing(5, ['room:room']);
    expect(citing.map((memory) => memory.id)).toEqual([first?.id, second?.id, duplicate?.id, fact?.id]);

    const lease = { channelId: 'room', task: 'extraction', owner: 'upgraded', ttlMs: 60_000 };
    await storage.extraction.claim(lease);
    const exchange = {
      context: { at, actor: 'exchange' },
      messageId: 7,
      chunks: [turn('Oz: a turn nobody answered', [7])],
    };
    expect((await storage.extraction.apply(lease, { from: 0, to: 8, at, exchange }))?.chunks).toEqual([]);
    await storage.close();
  });

  it('refuses a database written by a newer mneme, and leaves it untouched', () => {
    const path = newFile();
    openSqliteDatabase({ path }).close();
    const raw = new Database(path);
    raw.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)").run();
    raw.close();
    expect(() => createSqliteStorage({ path })).toThrowError(
      expect.objectContaining({
        code: ErrorCode.StoreIncompatible,
        message: expect.stringContaining('upgrade mneme'),
      }),
    );
    const check = new Database(path);
    expect(check.prepare('SELECT MAX(version) AS version FROM schema_migrations').get()).toEqual({ version: 99 });
    check.close();
  });

  it('refuses a file that is not a database with a clear error', () => {
    const path = join(folder, 'not-a-database.db');
    writeFileSync(path, 'this is plain text, not SQLite '.repeat(100));
    expect(() => createSqliteStorage({ path })).toThrowError(
      expect.objectContaining({
        code: ErrorCode.StoreFailed,
        message: expect.stringContaining('not a mneme database'),
      }),
    );
  });

  it('keeps memories across a close and a reopen of the file', async () => {
    const path = newFile();
    const first = createSqliteStorage({ path });
    await first.configureVectors({ model: 'm', dimensions: 2 });
    await first.memories.insert(
      [globalMemory('durable', { embedding: { model: 'm', vector: new Float32Array([1, 0]) } })],
      { at, actor: null },
    );
    await first.close();
    const second = createSqliteStorage({ path });
    expect(await second.vectorIndex()).toEqual({ model: 'm', dimensions: 2 });
    const hits = await second.memories.searchVector({
      vector: new Float32Array([1, 0]),
      model: 'm',
      owners: ['global'],
      limit: 1,
    });
    expect(hits).toHaveLength(1);
    await second.close();
  });

  it('leaves no row that names a purged user, nor anything built from what they said, in any table', async () => {
    const path = newFile();
    const storage = createSqliteStorage({ path });
    await storage.configureVectors({ model: 'm', dimensions: 2 });
    await storage.directory.putUser({ id: 'ann-4711', displayName: 'Ann' }, at);
    await storage.apiKeys.insert({ prefix: 'abc123abc123', hash: 'h', label: 'ann laptop', userId: 'ann-4711' }, at);
    await storage.memberships.putChannel({ id: 'c', visibility: 'private', members: ['ann-4711', 'bob'] }, at);
    await storage.memberships.addMembers('topic', 't', ['ann-4711'], at);
    const base = {
      category: 'fact',
      sector: 'semantic' as const,
      channelId: null,
      projectId: null,
      topicId: null,
      source: 'manual' as const,
      importance: 0.5,
      pinned: false,
      sourceMessageIds: [],
      sourceIds: [],
      embedding: { model: 'm', vector: new Float32Array([0, 1]) },
    };
    const [annMemory, other] = await storage.memories.insert(
      [
        { ...base, content: 'Ann likes sailing', scope: 'personal', owner: 'user:ann-4711', userId: 'ann-4711' },
        { ...base, content: 'Bob likes rowing', scope: 'personal', owner: 'user:bob', userId: 'bob' },
      ],
      { at, actor: 'ann-4711' },
    );
    const raw = new Database(path);
    const message = raw
      .prepare(
        "INSERT INTO messages (channel_id, sender_id, role, content, created_at) VALUES ('c', 'ann-4711', 'user', 'hi', ?)",
      )
      .run(at);
    raw
      .prepare(
        "INSERT INTO messages (channel_id, sender_id, role, content, reply_to, created_at) VALUES ('c', 'assistant', 'assistant', 'hello Ann', ?, ?)",
      )
      .run(message.lastInsertRowid, at);
    raw
      .prepare("INSERT INTO memory_links (source_id, target_id, type, created_at) VALUES (?, ?, 'semantic', ?)")
      .run(other?.id, annMemory?.id, at);
    raw.close();
    const annMessage = Number(message.lastInsertRowid);
    const [episode, bobTurn] = await storage.memories.insert(
      [
        {
          ...base,
          content: 'Ann greeted the room and asked about sailing',
          category: 'episode',
          scope: 'room',
          owner: 'room:c',
          userId: null,
          channelId: 'c',
          sourceMessageIds: [annMessage],
        },
        {
          ...base,
          content: 'Bob: rowing, mostly',
          category: 'exchange',
          scope: 'room',
          owner: 'room:c',
          userId: 'bob',
          channelId: 'c',
          searchContext: 'Ann: which boats do you like, sailor?',
          searchContextMessageId: annMessage,
        },
      ],
      { at, actor: null },
    );

    const report = await storage.memories.purgeUser('ann-4711');
    expect(report).toMatchObject({ memories: 2, vectors: 2, messages: 2, links: 1, versions: 2, apiKeys: 1 });
    expect(await storage.memberships.members('channel', 'c')).toEqual(['bob']);
    expect(await storage.apiKeys.findActive('abc123abc123')).toBeNull();
    expect(await storage.apiKeys.everCreated()).toBe(true);
    expect(await storage.memories.get([episode?.id ?? 0, bobTurn?.id ?? 0])).toEqual([
      expect.objectContaining({ content: 'Bob: rowing, mostly' }),
    ]);
    expect(await storage.memories.searchText({ terms: ['sailor'], owners: null, limit: 5 })).toEqual([]);
    await storage.close();

    const check = new Database(path);
    sqliteVec.load(check);
    const tables = check
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' AND name != 'memory_vector_bits'",
      )
      .all()
      .map((row) => row.name);
    for (const table of tables) {
      const columns = check
        .prepare<[], { name: string }>(`PRAGMA table_info(${table})`)
        .all()
        .map((column) => column.name);
      const mentions = columns.flatMap((column) =>
        check.prepare(`SELECT * FROM "${table}" WHERE CAST("${column}" AS TEXT) LIKE '%ann-4711%'`).all(),
      );
      expect(mentions, `rows of ${table} naming the purged user`).toEqual([]);
    }
    expect(check.prepare("SELECT search_context FROM memories WHERE content = 'Bob: rowing, mostly'").get()).toEqual({
      search_context: null,
    });
    const fts = check.prepare("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'sailing'").all();
    expect(fts).toEqual([]);
    const messageFts = check.prepare("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'hello OR hi'").all();
    expect(messageFts).toEqual([]);
    // Bob's turn was embedded with Ann's question before it (its search context): its vector went with her words.
    expect(check.prepare('SELECT memory_id FROM memory_vector_bits ORDER BY memory_id').all()).toEqual([
      { memory_id: other?.id },
    ]);
    check.close();
  });
});

describe('createMneme busyTimeoutMs', () => {
  it('passes busyTimeoutMs down to the database: 0 fails a write at once with STORE_BUSY', async () => {
    const path = newFile();
    const mneme = await createMneme({ path, busyTimeoutMs: 0 });
    const lock = await holdWriteLock(path, 2_000);
    try {
      await expect(mneme.remember({ content: 'written while another connection writes' })).rejects.toMatchObject({
        code: ErrorCode.StoreBusy,
      });
    } finally {
      await lock.release();
      await mneme.close();
    }
  });

  it.each([-1, 1.5, Number.NaN, '100'])('refuses busyTimeoutMs %s with CONFIG_INVALID', async (busyTimeoutMs) => {
    await expect(createMneme({ path: ':memory:', busyTimeoutMs: busyTimeoutMs as number })).rejects.toMatchObject({
      code: ErrorCode.ConfigInvalid,
      message: expect.stringContaining('busyTimeoutMs'),
    });
  });
});

/** Each memory's length as stored (`memories.tokens`), by id. */
function lengthsStored(database: Database.Database): Map<number, number> {
  return new Map(database.prepare<[], [number, number]>('SELECT id, tokens FROM memories ORDER BY id').raw().all());
}

/** Each memory's length counted again from the full-text index: its occurrences of every term. */
function lengthsRecounted(database: Database.Database): Map<number, number> {
  database.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.recount USING fts5vocab(main, 'memories_fts', 'instance')");
  const counted = new Map(
    database.prepare<[], [number, number]>('SELECT doc, count(*) FROM temp.recount GROUP BY doc').raw().all(),
  );
  return new Map(
    database
      .prepare<[], number>('SELECT id FROM memories ORDER BY id')
      .pluck()
      .all()
      .map((id) => [id, counted.get(id) ?? 0]),
  );
}
