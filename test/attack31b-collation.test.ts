import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { createFixedClock } from '../src/testing.js';

/*
 * Attack finding (wt-b, attack 31b): SQLite orders text by its bytes, and the PostgreSQL store asked for the same
 * order with a bare `ORDER BY id`, which sorts by the database's collation. The test server is made with
 * `--locale=C`, where the two agree, but a database made on most installations sorts by a language's rules
 * (en_US.UTF-8: `alice` before `Zoe`, `a_c` before `a-b`). There the same data was exported in another order
 * (users, projects, topics, channels, memberships, watermarks and a user's own spaces), so `mneme export` of one
 * database on SQLite and on PostgreSQL gave two files, and `GET /api/stats` listed the categories in another order.
 * The store now orders those by bytes (`COLLATE "C"`), as it already did its members, channels and ingest files.
 * The server's database here uses ICU's `en-US` (this machine has no en_US.UTF-8 locale; ICU sorts these ids the same).
 */

const START = '2026-03-02T10:00:00.000Z';
/** Ids that bytes and a language's collation sort apart: case, and `_` against `-` and digits. */
const USERS = ['Zoe', 'alice', 'bob_2', 'bob-1', 'bob1'];
const CATEGORIES = ['zeta', 'alpha', 'a-b', 'a_c', 'a1', 'Beta'];

let server: Promise<TestPostgresServer> | undefined;
let databases = 0;

/** A new database of the test server whose default collation is ICU's `en-US`, as a `postgres://` address. */
async function languageCollatedDatabase(): Promise<string> {
  server ??= startTestPostgresServer();
  const options = ['--template=template0', '--locale=C', '--locale-provider=icu', '--icu-locale=en-US'];
  return (await server).database(`attack31b_icu_${++databases}`, options);
}

afterAll(async () => {
  await (await server)?.stop();
});

/** The same spaces, members, memories and messages in a new database, through the engine as an administrator. */
async function seeded(path: string): Promise<Mneme> {
  const mneme = await createMneme({ path, clock: createFixedClock(START), logger: { warn: () => {}, info: () => {} } });
  for (const user of USERS) await mneme.setDisplayName({ userId: user, displayName: `Person ${user}` });
  // More users and members than a page of the export (500), so its pages follow one another in that order too.
  const many = Array.from({ length: 520 }, (_, index) => `${index % 2 ? 'U' : 'u'}${index % 3 ? '-' : '_'}${index}`);
  await mneme.putChannel({ id: 'hall', visibility: 'private', members: many });
  await mneme.putChannel({ id: 'Room-B', visibility: 'private', members: ['Zoe', 'alice'] });
  await mneme.putChannel({ id: 'room-a', visibility: 'private', members: ['bob-1', 'bob_2', 'bob1'] });
  await mneme.putChannel({ id: 'room_c', visibility: 'public', members: ['alice', 'Zoe'] });
  for (const id of ['P-x', 'p-y', 'p_z']) await mneme.createProject({ id, name: id, members: ['alice', 'Zoe'] });
  for (const id of ['T-1', 't_2', 't-3']) await mneme.createTopic({ id, projectId: 'p-y', members: ['alice'] });
  for (const [index, category] of CATEGORIES.entries()) {
    await mneme.remember({
      content: `Alice noted thing number ${index + 1}`,
      scope: 'personal',
      userId: 'alice',
      category,
    });
  }
  for (const channelId of ['room_c', 'Room-B', 'room-a']) {
    const sender = channelId === 'room-a' ? 'bob_2' : 'alice';
    await mneme.ingest({ channelId, sender, content: `I always water the plants in ${channelId} on Mondays` });
  }
  await mneme.whenIdle();
  return mneme;
}

/** An export's records of spaces, members and watermarks, in the file's order (memories and messages left out). */
async function exported(mneme: Mneme, userId?: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of mneme.exportData(userId === undefined ? {} : { userId })) {
    const record = JSON.parse(line) as { type: string };
    if (['user', 'project', 'topic', 'channel', 'membership', 'watermark'].includes(record.type)) lines.push(line);
  }
  return lines;
}

/** What a store answers that follows the order of text: both exports, and the categories of `GET /api/stats`. */
async function orderOf(mneme: Mneme) {
  const admin = await mneme.apiKeys.create({ label: 'ops' });
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const response = await app.request('/api/stats', { headers: { authorization: `Bearer ${admin.key}` } });
  const stats = (await response.json()) as { byCategory: Record<string, number> };
  return {
    export: await exported(mneme),
    aliceExport: await exported(mneme, 'alice'),
    categories: Object.keys(stats.byCategory),
  };
}

let sqlite: Awaited<ReturnType<typeof orderOf>>;
beforeAll(async () => {
  const mneme = await seeded(':memory:');
  sqlite = await orderOf(mneme);
  await mneme.close();
}, 60_000);

const stores = [
  { name: 'PGlite', path: async () => 'pglite:memory:' },
  ...(hasPostgresBinaries
    ? [{ name: 'a PostgreSQL 15 server database collated by en-US', path: languageCollatedDatabase }]
    : []),
];

describe('text in byte order, as SQLite keeps it', () => {
  it('orders ids and categories by their bytes on SQLite: the order the other stores must give', () => {
    expect(sqlite.categories).toEqual(['a-b', 'a1', 'a_c', 'alpha', 'beta', 'exchange', 'fact', 'zeta']);
    const users = sqlite.export.filter((line) => line.includes('"type":"user"')).map((line) => JSON.parse(line).id);
    expect(users.filter((id) => USERS.includes(id))).toEqual(['Zoe', 'alice', 'bob-1', 'bob1', 'bob_2']);
    expect(users).toEqual([...users].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(users).toHaveLength(525);
  });

  describe.each(stores)('on $name', ({ path }) => {
    it('exports spaces, memberships and watermarks, and lists the categories of its stats, in the order SQLite does', {
      timeout: 120_000,
    }, async () => {
      const mneme = await seeded(await path());
      try {
        expect(await orderOf(mneme)).toEqual(sqlite);
      } finally {
        await mneme.close();
      }
    });
  });
});

if (!hasPostgresBinaries) {
  describe(`on a PostgreSQL 15 server (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('orders text by its bytes in a database collated by a language', () => {});
  });
}
