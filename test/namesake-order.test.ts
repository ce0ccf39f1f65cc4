import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import { createPgPoolDatabase } from '../src/storage/postgres/postgres-database.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { createPostgresStorage } from '../src/storage/postgres/postgres-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';

/*
 * When a user arrives whose name or id reads as the names of users already known, each of those namesakes' memories
 * is labelled, one namesake after another, each a version (ADR 44). In which order was the store's: PostgreSQL
 * sorted the namesakes by the database's collation (`ORDER BY id`: on a database collated by a language, `al` before
 * `Zed`), SQLite took them key by key (the new user's name, then its id) in the order of the index. A memory naming
 * two of them had another history on each store. Both now label them in the byte order of their ids, as SQLite orders
 * every other list of users (ADR 51).
 */

const at = Date.parse('2026-03-02T10:00:00Z');

let server: Promise<TestPostgresServer> | undefined;
afterAll(async () => {
  await (await server)?.stop();
});

/** The contents of the versions of a memory that names Zed (called Ann) and al (called Bob), once a user ann called Bob arrives. */
async function history(storage: Storage): Promise<string[]> {
  const { directory, messages, memories } = storage;
  try {
    await directory.putUser({ id: 'Zed', displayName: 'Ann' }, at);
    await directory.putUser({ id: 'al', displayName: 'Bob' }, at);
    const sent = await messages.append([
      {
        channelId: 'hall',
        senderId: 'Zed',
        role: 'user',
        content: 'I will meet Bob at noon',
        topicId: null,
        createdAt: at,
      },
      { channelId: 'hall', senderId: 'al', role: 'user', content: 'See you then, Ann', topicId: null, createdAt: at },
    ]);
    const [memory] = await memories.insert(
      [globalMemory('Ann will meet Bob at noon', { source: 'extraction', sourceMessageIds: sent.map((m) => m.id) })],
      { at, actor: 'tester' },
    );
    // ann's id reads as Zed's name, ann's name as al's.
    await directory.putUser({ id: 'ann', displayName: 'Bob' }, at + 1);
    return (await memories.history(memory?.id ?? 0)).map((version) => version.snapshot.content);
  } finally {
    await storage.close();
  }
}

/** Zed before al: `Z` (0x5A) before `a` (0x61). */
const BYTE_ORDER = [
  'Ann will meet Bob at noon',
  'Ann (Zed) will meet Bob at noon',
  'Ann (Zed) will meet Bob (al) at noon',
];

describe('the namesakes a new user makes are labelled in the byte order of their ids', () => {
  it('on SQLite', async () => {
    expect(await history(await createSqliteStorage({ path: ':memory:' }))).toEqual(BYTE_ORDER);
  });

  it('on PGlite', async () => {
    expect(
      await history(await createPostgresStorage({ database: await createPgliteDatabase('pglite:memory:') })),
    ).toEqual(BYTE_ORDER);
  }, 60_000);

  it.skipIf(!hasPostgresBinaries)(
    'on a PostgreSQL 15 server database collated by ICU en-US',
    async () => {
      server ??= startTestPostgresServer();
      const options = ['--template=template0', '--locale=C', '--locale-provider=icu', '--icu-locale=en-US'];
      const url = await (await server).database('namesakes_icu', options);
      expect(await history(await createPostgresStorage({ database: createPgPoolDatabase(url) }))).toEqual(BYTE_ORDER);
    },
    60_000,
  );
});
