import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../core/errors.js';
import { nameKey } from '../../core/name-key.js';
import { globalMemory } from '../global-memory.fixture.js';
import { expectKnownIdsKeyed } from '../memory-store.contract.js';
import {
  createPgPoolDatabase,
  KEEPALIVE_IDLE_SECONDS,
  type PostgresDatabase,
  withPgErrors,
} from './postgres-database.js';
import { messageSearchSql } from './postgres-message-store.js';
import { latestPostgresSchemaVersion, migratePostgres, postgresMigrations } from './postgres-migrations.js';
import { createPgliteDatabase } from './postgres-pglite-database.js';
import { hasPostgresBinaries, startTestPostgresServer, type TestPostgresServer } from './postgres-server.fixture.js';
import { createPostgresStorage } from './postgres-storage.js';
import { freshPostgresStorage } from './postgres-test-database.fixture.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');
const context = { at, actor: 'tester' };

describe('PostgreSQL storage on PGlite', () => {
  let database: PostgresDatabase;
  beforeAll(async () => {
    database = await createPgliteDatabase('pglite:memory:');
  });
  afterAll(async () => {
    await database.close();
  });
  const open = freshPostgresStorage(() => database);

  it('records its schema version and finds pgvector', async () => {
    const storage = await open();
    const { rows } = await database.query<{ version: number }>('SELECT MAX(version) AS version FROM schema_migrations');
    expect(rows[0]?.version).toBe(latestPostgresSchemaVersion);
    expect(storage.vectorSearch).toMatchObject({ available: true, reason: null });
    await storage.close();
  });

  it('refuses a database written by a newer mneme, and leaves it untouched', async () => {
    const storage = await open();
    await storage.memories.insert([globalMemory('kept as it was')], context);
    await storage.close();
    await database.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)");
    await expect(createPostgresStorage({ database, ownsDatabase: false })).rejects.toMatchObject({
      code: ErrorCode.StoreIncompatible,
      message: expect.stringContaining('schema version 99'),
    });
    const { rows } = await database.query<{ content: string }>('SELECT content FROM memories');
    expect(rows).toEqual([{ content: 'kept as it was' }]);
  });

  it('never reads user text as tsquery syntax: operators, quotes and backslashes are plain words', async () => {
    const storage = await open();
    const [plain, quoted] = await storage.memories.insert(
      [globalMemory('the kestrel nests on the mill'), globalMemory("it's a back\\slash and a colon:star")],
      context,
    );
    const search = (terms: string[]) =>
      storage.memories.searchText({ terms, owners: null, limit: 10 }).then((hits) => hits.map((hit) => hit.id));
    for (const terms of [
      ['!', '&', '|', '(', ')', '<->', ':*'],
      ["'", '\\', '"'],
      ['the', 'and', 'a'],
    ]) {
      expect(await search(terms)).toEqual([]);
    }
    expect(await search(['kestrel&mill', '!nothing'])).toEqual([plain?.id]);
    expect(await search(['back\\slash'])).toEqual([quoted?.id]);
    expect(await search(['colon:*'])).toEqual([quoted?.id]);
    // Words are OR-ed: one matching word is enough, and more matching words rank higher.
    expect(await search(['kestrel', 'slash', 'nests'])).toEqual([plain?.id, quoted?.id]);
    // Term counts read the words the same way: syntax and stop words count nothing.
    const counted = await storage.memories.termCounts(['!', 'the', 'kestrel&mill', 'back\\slash', 'nest', 'nest'], {
      owners: null,
    });
    expect(counted.counts).toEqual([0, 0, 1, 1, 1, 1]);
    expect(await storage.messages.searchText('room', ["'OR'", '&&'], 5)).toEqual([]);
    await storage.close();
  });

  it('upgrades a database of schema 1: its messages stay, without external ids, and new ones may carry one', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 1)).toBe(1);
    await database.query(
      `INSERT INTO messages (channel_id, sender_id, role, content, created_at) VALUES ('room', 'ann', 'user', 'hi', $1)`,
      [at],
    );
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      const [old] = await storage.messages.listAfter('room', 0, 10);
      expect(old).toMatchObject({ content: 'hi', externalId: null });
      const say = { channelId: 'room', senderId: 'ann', role: 'user' as const, topicId: null, createdAt: at };
      const [first] = await storage.messages.append([{ ...say, content: 'again', externalId: 'evt-1' }]);
      const [second] = await storage.messages.append([{ ...say, content: 'again', externalId: 'evt-1' }]);
      expect(second).toEqual({ ...first, duplicate: true });
      const { rows } = await database.query<{ version: number }>(
        'SELECT MAX(version) AS version FROM schema_migrations',
      );
      expect(rows[0]?.version).toBe(latestPostgresSchemaVersion);
    } finally {
      await storage.close();
    }
  });

  it('gives the users of a schema 8 database the key their display name reads as (step 9)', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 8)).toBe(8);
    await database.query(
      `INSERT INTO users (id, display_name, created_at, updated_at) VALUES ('robert', 'Bob', $1, $1), ('zed', NULL, $1, $1)`,
      [at],
    );
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      expect(await storage.directory.hasNamesake('eve', nameKey('B0B'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Zed'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Ann'))).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('gives every sender, member and key user of a schema 9 database a row and the key of their id (step 10)', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 9)).toBe(9);
    await database.query(
      `INSERT INTO messages (channel_id, sender_id, role, content, created_at)
        VALUES ('c', 'BobSmith', 'user', 'hi', $1), ('c', 'assistant', 'assistant', 'hello', $1)`,
      [at],
    );
    await database.query(
      "INSERT INTO members (kind, space_id, user_id, added_at) VALUES ('channel', 'c', 'carol.w', $1)",
      [at],
    );
    await database.query(
      "INSERT INTO api_keys (prefix, hash, label, user_id, created_at) VALUES ('p', 'h', 'k', 'Kim.Lee', $1)",
      [at],
    );
    await database.query(
      `INSERT INTO users (id, display_name, name_key, created_at, updated_at) VALUES ('robert', 'Rob', 'stale', $1, $1)`,
      [at],
    );
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      await expectKnownIdsKeyed(storage);
    } finally {
      await storage.close();
    }
  });

  it('labels the memories of a schema 11 database that call a user by a name another user came to share (step 12)', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 11)).toBe(11);
    await database.query(
      `INSERT INTO users (id, display_name, name_key, id_key, created_at, updated_at)
        VALUES ('eve', 'Bob', $2, 'eve', $1, $1), ('bob', NULL, 'bob', 'bob', $1, $1), ('ann', 'Ann', 'ann', 'ann', $1, $1)`,
      [at, nameKey('Bob')],
    );
    await database.query(
      `INSERT INTO memories (content, category, sector, scope, owner, user_id, source, importance, created_at,
        updated_at, valid_from) VALUES ('Bob prefers tea', 'preference', 'semantic', 'personal', 'user:eve', 'eve',
        'extraction', 0.5, $1, $1, $1), ('Ann prefers coffee', 'preference', 'semantic', 'personal', 'user:ann', 'ann',
        'extraction', 0.5, $1, $1, $1)`,
      [at],
    );
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      const memories = await storage.memories.get([1, 2]);
      expect(memories.map((memory) => memory.content)).toEqual(['Bob (eve) prefers tea', 'Ann prefers coffee']);
      expect((await storage.memories.history(1)).at(-1)).toMatchObject({ action: 'update', actor: 'maintenance' });
    } finally {
      await storage.close();
    }
  });

  it('gives the user of a memory of a schema 10 database a row, and computes the keys a copy left out (step 11)', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 10)).toBe(10);
    await database.query(
      `INSERT INTO memories (content, category, sector, scope, owner, user_id, source, importance, created_at,
        updated_at, valid_from) VALUES ('Bob.Smith is allergic to peanuts', 'general', 'semantic', 'personal',
        'user:Bob.Smith', 'Bob.Smith', 'manual', 0.5, $1, $1, $1)`,
      [at],
    );
    // What a mneme copy of steps 9 and 10 wrote: a user without either key (attack29c).
    await database.query(
      `INSERT INTO users (id, display_name, created_at, updated_at) VALUES ('robert', 'Rob', $1, $1)`,
      [at],
    );
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      expect(await storage.directory.hasNamesake('eve', nameKey('bobsmith'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('R0B'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Robert'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Ann'))).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('counts per owner the words of the memories a schema 3 database held, as its index stems them (step 4)', async () => {
    await database.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    expect(await migratePostgres(database, 3)).toBe(3);
    for (const [content, searchContext, owner] of [
      ['Ann edits kestrels', 'Bob: who edits?', 'ann'],
      ['Ann keeps a kestrel', null, 'ann'],
      ['Bob edited the kestrel', null, 'bob'],
    ]) {
      await database.query(
        `INSERT INTO memories (content, search_context, category, sector, scope, owner, user_id, source, importance,
           valid_from, created_at, updated_at)
         VALUES ($1, $2, 'fact', 'semantic', 'personal', 'user:' || $3::text, $3, 'manual', 0.5, $4, $4, $4)`,
        [content, searchContext, owner, at],
      );
    }
    const storage = await createPostgresStorage({ database, ownsDatabase: false });
    try {
      const counted = async (owners: string[]) =>
        storage.memories.termCounts(['kestrel', 'editing', 'bob'], { owners });
      expect(await counted(['user:ann'])).toEqual({ memories: 2, counts: [2, 1, 1] });
      expect(await counted(['user:bob'])).toEqual({ memories: 1, counts: [1, 1, 1] });
      expect(await counted(['user:ann', 'user:bob'])).toEqual({ memories: 3, counts: [3, 2, 2] });
      await storage.memories.purgeUser('bob');
      expect(await counted(['user:bob'])).toEqual({ memories: 0, counts: [0, 0, 0] });
    } finally {
      await storage.close();
    }
  });

  it('analyzes its tables as they fill, as autovacuum does on a server, not after every write', async () => {
    const own = await createPgliteDatabase('pglite:memory:');
    const storage = await createPostgresStorage({ database: own });
    const analyzed = async () =>
      (await own.query<{ rows: number }>("SELECT reltuples AS rows FROM pg_class WHERE relname = 'memories'")).rows[0]
        ?.rows;
    expect(await analyzed()).toBe(-1);
    // Each insert writes a memory and its first version: 25 inserts pass the threshold of 50 rows.
    for (let index = 0; index < 25; index++) {
      await storage.memories.insert([globalMemory(`memory number ${index}`)], context);
    }
    expect(await analyzed()).toBe(25);
    await storage.memories.insert([globalMemory('one more')], context);
    expect(await analyzed()).toBe(25);
    await storage.close();
  });

  it('finds a rare word among many messages through the GIN index, not by reading the channel', {
    timeout: 120_000,
  }, async () => {
    const own = await createPgliteDatabase('pglite:memory:');
    const storage = await createPostgresStorage({ database: own });
    try {
      const say = { channelId: 'room', senderId: 'ann', role: 'user' as const, topicId: null, createdAt: at };
      await storage.messages.append(
        Array.from({ length: 2000 }, (_, index) => ({ ...say, content: `the usual chatter number ${index}` })),
      );
      const [rare] = await storage.messages.append([{ ...say, content: 'a kestrel on the mill' }]);
      const { duplicate: _, ...stored } = rare ?? { duplicate: false };
      expect(await storage.messages.searchText('room', ['Kestrel', 'owl'], 5)).toEqual([stored]);
      const { rows } = await own.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${messageSearchSql}`, [
        "'kestrel' | 'owl'",
        'room',
        5,
      ]);
      expect(rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('messages_fts');
    } finally {
      await storage.close();
    }
  });

  it('shares a PGlite folder opened twice in one process until the last of them closes', async () => {
    await inPgliteFolder(async (folder) => {
      const first = await createPostgresStorage({ database: await createPgliteDatabase(`pglite:${folder}`) });
      const second = await createPostgresStorage({ database: await createPgliteDatabase(`pglite:${folder}/`) });
      await first.memories.insert([globalMemory('written by the first')], context);
      expect(await second.memories.searchText({ terms: ['first'], owners: null, limit: 5 })).toHaveLength(1);
      const release = await first.tryLock('maintenance');
      expect(release).not.toBeNull();
      expect(await second.tryLock('maintenance')).toBeNull();
      await release?.release();
      await first.close();
      await second.memories.insert([globalMemory('written by the second')], context);
      expect(await second.memories.searchText({ terms: ['written'], owners: null, limit: 5 })).toHaveLength(2);
      await second.close();
      const third = await createPostgresStorage({ database: await createPgliteDatabase(`pglite:${folder}`) });
      expect(await third.memories.searchText({ terms: ['second'], owners: null, limit: 5 })).toHaveLength(1);
      await third.close();
    });
  });

  it('keeps memories across a close and a reopen of a PGlite folder', async () => {
    await inPgliteFolder(async (folder) => {
      const first = await createPostgresStorage({ database: await createPgliteDatabase(`pglite:${folder}`) });
      await first.memories.insert([globalMemory('survives a reopen')], context);
      await first.close();
      const second = await createPostgresStorage({ database: await createPgliteDatabase(`pglite:${folder}`) });
      const hits = await second.memories.searchText({ terms: ['reopen'], owners: null, limit: 5 });
      expect(hits).toHaveLength(1);
      await second.close();
    });
  });
});

/** Runs `work` with a new temporary folder, removed after it. */
async function inPgliteFolder(work: (folder: string) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-pglite-'));
  try {
    await work(folder);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/**
 * A TCP server on loopback that accepts connections and, while `silent`, never answers them (as a hung server
 * or a black-holing proxy); otherwise it passes each connection on to `upstream` (a port of 127.0.0.1).
 * `silence()` also cuts the connections passed on so far, as a server going away does.
 */
async function startLoopbackServer(upstream?: number) {
  const sockets = new Set<Socket>();
  let silent = upstream === undefined;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    if (silent || upstream === undefined) return;
    const onward = connect(upstream, '127.0.0.1');
    sockets.add(onward);
    onward.on('error', () => socket.destroy());
    onward.on('close', () => sockets.delete(onward));
    socket.pipe(onward).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: (database: string) => `postgres://mneme@127.0.0.1:${port}/${database}`,
    silence() {
      silent = true;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a PostgreSQL pool whose server never answers', () => {
  it('says the server cannot be reached once it gave no answer to connecting, instead of waiting forever', async () => {
    const silent = await startLoopbackServer();
    const database = createPgPoolDatabase(silent.url('hung'), { connectTimeoutMs: 100 });
    try {
      const refused = await withPgErrors('reading', () => database.query('SELECT 1')).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: ErrorCode.StoreFailed });
      expect((refused as Error).message).toBe(
        'reading: cannot reach the PostgreSQL server (no answer within 100 ms of connecting); check the URL and that the server runs',
      );
      // A transaction and a named lock, which take a connection of their own, are refused alike.
      await expect(withPgErrors('writing', () => database.transaction(async () => 1))).rejects.toMatchObject({
        code: ErrorCode.StoreFailed,
        message: expect.stringContaining('no answer within 100 ms of connecting'),
      });
      await expect(withPgErrors('locking', () => database.tryLock('task'))).rejects.toMatchObject({
        code: ErrorCode.StoreFailed,
      });
    } finally {
      await database.close();
      await silent.close();
    }
  });
});

describe.skipIf(!hasPostgresBinaries)('PostgreSQL storage on a real server (postgresql-15, no pgvector)', () => {
  let server: TestPostgresServer;
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('works lexical-only without pgvector, and says why and how to add it', async () => {
    const storage = await createPostgresStorage({ database: createPgPoolDatabase(await server.database('lexical')) });
    try {
      expect(storage.vectorSearch.available).toBe(false);
      expect(storage.vectorSearch.reason).toMatch(/pgvector/);
      expect(storage.vectorSearch.reason).toMatch(/install/);
    } finally {
      await storage.close();
    }
  });

  it('asks the server to probe every connection of a pool after 30 s of silence, keeping the server settings it was given', async () => {
    // A process cut off by the network while it holds the write lock gives it back when the server ends its
    // session: after 30 s and 3 probes 10 s apart, not after the kernel's two hours of silence.
    const database = createPgPoolDatabase(await server.database('probed'), {
      serverOptions: '-c statement_timeout=4321',
    });
    const settings = async (queryable: Pick<typeof database, 'query'>) => {
      const { rows } = await queryable.query<{ name: string; setting: string }>(
        `SELECT name, setting FROM pg_settings
         WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'statement_timeout')
         ORDER BY name`,
      );
      return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    };
    const expected = {
      statement_timeout: '4321',
      tcp_keepalives_count: '3',
      tcp_keepalives_idle: String(KEEPALIVE_IDLE_SECONDS),
      tcp_keepalives_interval: '10',
    };
    try {
      expect(await settings(database)).toEqual(expected);
      // The connection of a transaction (where the write lock is taken) is one of the pool's.
      expect(await database.transaction((transaction) => settings(transaction))).toEqual(expected);
    } finally {
      await database.close();
    }
  });

  it('waits for the WAL on every connection where the server turned synchronous_commit off, and keeps a setting other than off', async () => {
    // The test server runs with synchronous_commit off (startTestPostgresServer), as servers tuned for speed do: a
    // commit answered before its WAL is written, and lost with the server. Before, mneme's sessions kept it.
    const setting = async (queryable: Pick<PostgresDatabase, 'query'>) =>
      (await queryable.query<{ value: string }>("SELECT current_setting('synchronous_commit') AS value")).rows[0]
        ?.value;
    const admin = createPgPoolDatabase(server.url);
    try {
      expect(await setting(admin)).toBe('on');
      for (const value of ['local', 'remote_write', 'remote_apply']) {
        const name = `durable_${value}`;
        const url = await server.database(name);
        await admin.exec(`ALTER DATABASE ${name} SET synchronous_commit = ${value}`);
        const database = createPgPoolDatabase(url, { max: 4 });
        try {
          // Four at once: each takes a connection of its own, each new to the pool.
          const seen = await Promise.all(
            Array.from({ length: 4 }, () => database.transaction(async (transaction) => setting(transaction))),
          );
          expect(seen).toEqual([value, value, value, value]);
        } finally {
          await database.close();
        }
      }
      const off = createPgPoolDatabase(await server.database('durable_off'), { max: 4 });
      try {
        const seen = await Promise.all(
          Array.from({ length: 4 }, () => off.transaction(async (transaction) => setting(transaction))),
        );
        expect(seen).toEqual(['on', 'on', 'on', 'on']);
        // What the session would have without mneme: the server's off.
        expect(
          (
            await off.query<{ value: string }>(
              "SELECT reset_val AS value FROM pg_settings WHERE name = 'synchronous_commit'",
            )
          ).rows[0]?.value,
        ).toBe('off');
      } finally {
        await off.close();
      }
    } finally {
      await admin.close();
    }
  });

  it('migrates a new database once when several processes open it at the same moment', async () => {
    const url = await server.database('together');
    const storages = await Promise.all(
      Array.from({ length: 4 }, () => createPostgresStorage({ database: createPgPoolDatabase(url, { max: 2 }) })),
    );
    try {
      const [first] = storages;
      const reader = createPgPoolDatabase(url);
      const { rows } = await reader.query<{ version: number }>('SELECT version FROM schema_migrations');
      await reader.close();
      expect(rows.map((row) => row.version).sort((a, b) => a - b)).toEqual(
        postgresMigrations.map((step) => step.version),
      );
      await first?.memories.insert([globalMemory('written once migrated')], context);
    } finally {
      await Promise.all(storages.map((storage) => storage.close()));
    }
  });

  it('gives a named lock to one process at a time, and to the next once released or once its holder is gone', async () => {
    const url = await server.database('locks');
    const first = await createPostgresStorage({ database: createPgPoolDatabase(url) });
    const second = await createPostgresStorage({ database: createPgPoolDatabase(url) });
    try {
      const release = await first.tryLock('maintenance:decay');
      expect(release).not.toBeNull();
      expect(await second.tryLock('maintenance:decay')).toBeNull();
      const other = await second.tryLock('maintenance:link');
      expect(other).not.toBeNull();
      await release?.release();
      const taken = await second.tryLock('maintenance:decay');
      expect(taken).not.toBeNull();
      await second.close();
      // The holder's sessions ended with it: the lock is free again.
      expect(await first.tryLock('maintenance:decay')).not.toBeNull();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('takes and releases a lock on the same pooled connection again and again without leaving a listener on it', async () => {
    // One connection in the pool: every lock takes the same one. A serving process takes a lock for each
    // maintenance task of every cycle; a listener left on the connection each time grew without end.
    const database = createPgPoolDatabase(await server.database('relocks'), { max: 1 });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      for (let round = 0; round < 15; round++) {
        const held = await database.tryLock('maintenance:decay');
        expect(held).not.toBeNull();
        expect(await held?.confirm()).toBe(true);
        await held?.release();
      }
      // Node warns (on the next tick) once an emitter holds more than 10 listeners of one event.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      await database.close();
    }
  });

  it('runs a maintenance task on one process at a time: another process holding it makes maintain skip it', async () => {
    const { createMneme } = await import('../../config/create-mneme.js');
    const url = await server.database('maintain');
    const holder = await createPostgresStorage({ database: createPgPoolDatabase(url) });
    const mneme = await createMneme({ path: url });
    try {
      await holder.tryLock('maintenance:decay');
      const report = await mneme.maintain({ tasks: ['decay', 'link'] });
      expect(report.decay?.skipped).toBe('already running in another process on this database');
      expect(report.link?.skipped).not.toBe('already running in another process on this database');
    } finally {
      await mneme.close();
      await holder.close();
    }
  });

  it('tells a protocol violation from an unreachable server, and a terminated session from a failure', async () => {
    const database = createPgPoolDatabase(await server.database('errors'));
    try {
      // A statement whose parameters do not match its placeholders: the server answers 08P01.
      const violation = await withPgErrors('reading', () => database.query('SELECT $1::int AS n', [1, 2])).catch(
        (error: unknown) => error,
      );
      expect(violation).toMatchObject({ code: ErrorCode.StoreFailed, cause: { code: '08P01' } });
      expect((violation as Error).message).toMatch(/protocol violation/);
      expect((violation as Error).message).not.toMatch(/cannot reach/);
      // The server ending a session (as when it shuts down or restarts): 57P01, worth a retry.
      const sleeping = database.query('SELECT pg_sleep(30)');
      const terminated = withPgErrors('reading', () => sleeping).catch((error: unknown) => error);
      const killer = createPgPoolDatabase(await server.database('errors'), { max: 1 });
      for (let tries = 0; tries < 200; tries++) {
        const { rows } = await killer.query<{ ended: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
           WHERE query = 'SELECT pg_sleep(30)' AND pid <> pg_backend_pid()`,
        );
        if (rows.some((row) => row.ended)) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      await killer.close();
      expect(await terminated).toMatchObject({ code: ErrorCode.StoreBusy, cause: { code: '57P01' } });
      // The pool opens a new connection: the next statement works.
      expect((await database.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      await database.close();
    }
  });

  it('survives the server ending the session of a transaction: the write fails as busy, the process lives on', async () => {
    const url = await server.database('terminated-transaction');
    const database = createPgPoolDatabase(url, { max: 2 });
    const killer = createPgPoolDatabase(url, { max: 1 });
    // A connection lent to a transaction has no listener of the pool: its 'error' event, when the
    // server ends the session (a restart, pg_terminate_backend), was unhandled and ended the process.
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const failed = withPgErrors('writing', () =>
        database.transaction(async (transaction) => {
          await transaction.query('SELECT pg_sleep(30) AS in_transaction');
        }),
      ).catch((error: unknown) => error);
      let ended = false;
      for (let tries = 0; tries < 200 && !ended; tries++) {
        const { rows } = await killer.query<{ ended: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
           WHERE query = 'SELECT pg_sleep(30) AS in_transaction' AND pid <> pg_backend_pid()`,
        );
        ended = rows.some((row) => row.ended);
        if (!ended) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(ended).toBe(true);
      expect(await failed).toMatchObject({ code: ErrorCode.StoreBusy });
      // The socket's end comes after the error the statement got: give it time to arrive.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(uncaught).toEqual([]);
      // The broken connection left the pool: the next transactions work.
      for (let round = 0; round < 3; round++) {
        expect(await database.transaction((transaction) => transaction.query<{ n: number }>('SELECT 1 AS n'))).toEqual({
          rows: [{ n: 1 }],
          changed: 1,
        });
      }
    } finally {
      process.off('uncaughtException', onUncaught);
      await killer.close();
      await database.close();
    }
  });

  it('refuses messages holding a NUL character before writing anything: no sender name, no topic, no message', async () => {
    const { createMneme } = await import('../../config/create-mneme.js');
    const url = await server.database('nul-ingest');
    const mneme = await createMneme({ path: url });
    const database = createPgPoolDatabase(url, { max: 1 });
    const storage = await createPostgresStorage({ database: createPgPoolDatabase(url, { max: 1 }) });
    try {
      // The engine's schemas refuse a NUL at every face (ADR 43); the store refuses one that reaches it below them, its
      // transaction taking back the names and topics written with the messages.
      await expect(
        storage.messages.append(
          [
            { channelId: 'room', senderId: 'dan', role: 'user', content: 'fine', topicId: 'dan-topic', createdAt: 1 },
            { channelId: 'room', senderId: 'dan', role: 'user', content: 'a \u0000', topicId: null, createdAt: 2 },
          ],
          { names: [{ id: 'dan', displayName: 'Dan' }], topics: ['dan-topic'], at: 1 },
        ),
      ).rejects.toMatchObject({ code: ErrorCode.InvalidInput, message: expect.stringContaining('NUL character') });
      // One at a time: a refusal that settles while the test awaits another would be an unhandled rejection.
      const refusals = [
        () =>
          mneme.ingestMany([
            { channelId: 'room', sender: 'ann', senderName: 'Ann Renamed', topicId: 'trip', content: 'fine' },
            { channelId: 'room', sender: 'ann', content: 'a \u0000 in the second' },
          ]),
        () =>
          mneme.ingestExchange({
            channelId: 'room',
            userId: 'bob',
            userName: 'Bob Named',
            topicId: 'party',
            userMessage: 'hello',
            assistantReply: 'the reply has a \u0000',
          }),
        () =>
          mneme.ingest({ channelId: 'room', sender: 'cy', senderName: 'Cy', topicId: 'cy-topic', content: 'x\u0000' }),
      ];
      for (const refused of refusals) {
        await expect(refused()).rejects.toMatchObject({
          code: ErrorCode.InvalidInput,
          message: expect.stringContaining('NUL character'),
        });
      }
      const rows = async (sql: string) => (await database.query(sql)).rows;
      expect({
        users: await rows('SELECT id, display_name FROM users'),
        topics: await rows('SELECT id FROM topics'),
        messages: await rows('SELECT id FROM messages'),
        members: await rows('SELECT user_id FROM members'),
      }).toEqual({ users: [], topics: [], messages: [], members: [] });
    } finally {
      await storage.close();
      await database.close();
      await mneme.close();
    }
  });

  it('says the server cannot be reached when nothing listens at the URL', async () => {
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const database = createPgPoolDatabase(`postgres://mneme@127.0.0.1:${port}/nowhere`);
    try {
      const refused = await withPgErrors('reading', () => database.query('SELECT 1')).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: ErrorCode.StoreFailed });
      expect((refused as Error).message).toMatch(/cannot reach the PostgreSQL server/);
    } finally {
      await database.close();
    }
  });

  it('says the server cannot be reached when what listens at the URL closes the connection at once (not PostgreSQL)', async () => {
    const { createServer } = await import('node:net');
    const closing = createServer((socket) => socket.destroy());
    const port = await new Promise<number>((resolve) => {
      closing.listen(0, '127.0.0.1', () => {
        const address = closing.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      });
    });
    const database = createPgPoolDatabase(`postgres://mneme@127.0.0.1:${port}/nowhere`);
    try {
      const refused = await withPgErrors('reading', () => database.query('SELECT 1')).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: ErrorCode.StoreFailed });
      expect((refused as Error).message).toMatch(
        /^reading: cannot reach the PostgreSQL server \(Connection terminated unexpectedly\); check the URL and that the server runs$/,
      );
    } finally {
      await database.close();
      await new Promise((resolve) => closing.close(resolve));
    }
  });

  it('answers busy, to be retried, when a server it reached stops answering new connections', async () => {
    const url = await server.database('gone-quiet');
    const port = Number(new URL(url).port);
    const proxy = await startLoopbackServer(port);
    const database = createPgPoolDatabase(proxy.url('gone-quiet'), { connectTimeoutMs: 100 });
    try {
      expect((await database.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      proxy.silence();
      // The pooled connection was cut (its statement, or the pool, finds out); the next one gets no answer.
      const errors: unknown[] = [];
      for (let tries = 0; tries < 5; tries++) {
        const error = await withPgErrors('reading', () => database.query('SELECT 1')).catch(
          (caught: unknown) => caught,
        );
        errors.push(error);
        if (/no answer within/.test((error as Error).message)) break;
      }
      for (const error of errors) expect(error).toMatchObject({ code: ErrorCode.StoreBusy });
      expect((errors.at(-1) as Error).message).toBe(
        'reading: the PostgreSQL server cannot be reached now, though it could before: it may be restarting (no answer within 100 ms of connecting); try again shortly',
      );
    } finally {
      await database.close();
      await proxy.close();
    }
  });

  it('answers busy when every connection of the pool stays in use, and serves again once one is free', async () => {
    const database = createPgPoolDatabase(await server.database('pool-full'), { max: 1, connectTimeoutMs: 100 });
    try {
      // A named lock keeps its connection checked out: the pool's only one.
      const lock = await database.tryLock('task');
      const refused = await withPgErrors('reading', () => database.query('SELECT 1')).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: ErrorCode.StoreBusy });
      expect((refused as Error).message).toBe(
        'reading: the 1 connection of the pool to the PostgreSQL server stayed in use for 100 ms: the database is busy; try again shortly',
      );
      await lock?.release();
      expect((await database.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      await database.close();
    }
  });

  it('sets no statement timeout of its own, and answers busy when one set in the URL cancels a statement', async () => {
    const url = await server.database('statement-timeout');
    const unlimited = createPgPoolDatabase(url);
    const limited = createPgPoolDatabase(`${url}?statement_timeout=50`);
    try {
      expect((await unlimited.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t")).rows).toEqual([
        { t: '0' },
      ]);
      const cancelled = await withPgErrors('reading', () => limited.query('SELECT pg_sleep(5)')).catch(
        (error: unknown) => error,
      );
      expect(cancelled).toMatchObject({ code: ErrorCode.StoreBusy, cause: { code: '57014' } });
    } finally {
      await unlimited.close();
      await limited.close();
    }
  });

  it('makes message ids visible in the order they were taken, whatever the interleaving of appends', async () => {
    const url = await server.database('ordered');
    const storage = await createPostgresStorage({ database: createPgPoolDatabase(url, { max: 8 }) });
    try {
      const seen: number[] = [];
      let watermark = 0;
      const message = (index: number) => ({
        channelId: 'room',
        senderId: 'ann',
        role: 'user' as const,
        content: `message ${index}`,
        topicId: null,
        createdAt: at,
      });
      const reader = (async () => {
        for (let round = 0; round < 60; round++) {
          const page = await storage.messages.listAfter('room', watermark, 1000);
          for (const read of page) seen.push(read.id);
          watermark = page.at(-1)?.id ?? watermark;
        }
      })();
      await Promise.all(Array.from({ length: 40 }, (_, index) => storage.messages.append([message(index)])));
      await reader;
      for (const read of await storage.messages.listAfter('room', watermark, 1000)) seen.push(read.id);
      // A watermark reader that never skips: every id seen once, in order.
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(40);
    } finally {
      await storage.close();
    }
  });
});
