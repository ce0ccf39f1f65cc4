import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createEngine } from '../src/core/create-engine.js';
import { AUDIENCE_TASK } from '../src/core/derived-audience.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import { createPostgresStorage } from '../src/storage/postgres/postgres-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';
import { LOBBY_SECRET_QUERY, lobbySecretFact } from './lobby-secret.fixture.js';
import { type EngineStore, engineStores } from './maintenance-engine.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-upgraded-audience-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The schema versions of the release before the upgrade's marks (SQLite's migration 26, PostgreSQL's 6). */
const previousSchema: Record<EngineStore, number> = { sqlite: 25, pglite: 5, postgres: 5 };

const quiet = { warn: () => {}, info: () => {} };
const clock = createFixedClock('2026-03-02T10:00:00Z');
let databases = 0;

/** A database of `store`: a SQLite file or a PGlite folder, new for each test. */
function newDatabase(store: EngineStore): string {
  databases++;
  return store === 'sqlite' ? join(folder, `old-${databases}.db`) : `pglite:${join(folder, `old-${databases}`)}`;
}

/** The storage of `path`, migrated up to `migrateTo` (left out: the latest). */
async function openStorage(store: EngineStore, path: string, migrateTo?: number): Promise<Storage> {
  const target = migrateTo === undefined ? {} : { migrateTo };
  if (store === 'sqlite') return createSqliteStorage({ path, ...target });
  return createPostgresStorage({ database: await createPgliteDatabase(path), ...target });
}

/** An engine over `storage` as the library builds one, with the offline extractor; it checks nothing at open. */
function engineOver(storage: Storage): Mneme {
  return createEngine({
    storage,
    embedder: null,
    clock,
    logger: quiet,
    policy: resolvePolicy(),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: createOfflineExtractor(),
  });
}

const query = LOBBY_SECRET_QUERY;

const plan = 'I prefer the zanzibar hotel whenever I travel for work';

/**
 * What a mneme before 2026-12-03 left, at the schema of the release before this one: a global fact extracted in the
 * public lobby, then the lobby made private by writing the channel (an older release moved nothing); and a session
 * memory of Bob's message in the private team channel, in topic plans of Ann and Bob, then Ann removed from the
 * team channel (still in the topic).
 */
async function leftByAnOlderMneme(store: EngineStore, path: string): Promise<{ fact: Memory; session: Memory }> {
  const storage = await openStorage(store, path, previousSchema[store]);
  const old = engineOver(storage);
  try {
    const fact = await lobbySecretFact(old);
    await old.putChannel({ id: 'team', members: ['ann', 'bob'] });
    await old.createTopic({ id: 'plans', members: ['ann', 'bob'] });
    await old.ingest({ channelId: 'team', sender: 'bob', senderName: 'Bob', topicId: 'plans', content: plan });
    await old.whenIdle();
    const [session] = (await old.extract('plans')).created;
    if (!session) throw new Error('conversation extraction wrote nothing');
    expect(session).toMatchObject({ scope: 'session', topicId: 'plans' });

    await storage.memberships.putChannel({ id: 'lobby', visibility: 'private' }, clock.now());
    await storage.memberships.setMembers('channel', 'team', ['bob'], clock.now());
    expect(await storage.maintenanceState.list(AUDIENCE_TASK)).toEqual([]);
    return { fact, session };
  } finally {
    await old.close();
  }
}

const ann = (mneme: Mneme) => mneme.as({ kind: 'user', userId: 'ann', label: 'ann app' });
const bob = (mneme: Mneme) => mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });

/** Whether the user reads the memory: by a recall (of its own words) and in a listing, with `viewer`. */
async function reads(user: Mneme, memory: Memory, viewer: object = {}): Promise<boolean> {
  const found = (await user.recall({ query: memory.content, viewer })).hits.some((hit) => hit.memory.id === memory.id);
  const listed = (await user.list({ viewer, limit: 200 })).memories.some((listed) => listed.id === memory.id);
  return found || listed;
}

/**
 * Wt-upgrade18: since 2026-12-03 an audience change moves the memories its new audience may not read (ADR 5). A
 * database written by an older mneme, where the changes happened before those checks, kept them wide after the
 * upgrade: a global fact of a channel made private long ago was read by every user's key. The upgrade's migration
 * marks every channel memories cite for an audience check, due at once.
 */
describe.each(engineStores)(
  'a database an older mneme left on %s, with a global fact of a channel since made private',
  (store) => {
    it('is checked by the first maintain after the upgrade: members read the fact and the topic memory in their rooms, others do not', async () => {
      const path = newDatabase(store);
      const { fact, session } = await leftByAnOlderMneme(store, path);

      const storage = await openStorage(store, path);
      const mneme = engineOver(storage);
      try {
        const marks = await storage.maintenanceState.list(AUDIENCE_TASK);
        expect(marks.map((mark) => [mark.watermark, mark.details])).toEqual([
          [null, { change: { channelId: 'lobby' } }],
          [null, { change: { channelId: 'team' } }],
        ]);
        // What the older mneme left, until the check: every user reads the private lobby's words, Ann the team's.
        expect(await reads(ann(mneme), fact)).toBe(true);
        expect(await reads(ann(mneme), session, { topicId: 'plans' })).toBe(true);

        await mneme.maintain();
        expect(await reads(ann(mneme), fact)).toBe(false);
        expect(await reads(bob(mneme), fact, { channelId: 'lobby' })).toBe(true);
        expect(await mneme.get(fact.id)).toMatchObject({ scope: 'room', channelId: 'lobby', content: fact.content });
        expect(await reads(ann(mneme), session, { topicId: 'plans' })).toBe(false);
        expect(await reads(bob(mneme), session, { channelId: 'team' })).toBe(true);
        expect(await mneme.get(session.id)).toMatchObject({ scope: 'room', channelId: 'team' });
        expect(await storage.maintenanceState.list(AUDIENCE_TASK)).toEqual([]);
      } finally {
        await mneme.close();
      }
    });

    it('is checked when createMneme opens it, before a user key outside the lobby searches through HTTP', async () => {
      const path = newDatabase(store);
      const { fact } = await leftByAnOlderMneme(store, path);

      const mneme = await createMneme({ path, clock, logger: quiet });
      try {
        const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
        const search = async (userId: string, viewer: object) => {
          const { key } = await mneme.apiKeys.create({ label: userId, userId });
          const response = await app.request('/api/memories/search', {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ query, viewer }),
          });
          expect(response.status).toBe(200);
          return JSON.stringify(((await response.json()) as { hits: unknown[] }).hits);
        };
        expect(await search('ann', {})).not.toContain('quokkamidnight');
        expect(await search('bob', { channelId: 'lobby' })).toContain('quokkamidnight');
        expect(await mneme.get(fact.id)).toMatchObject({ scope: 'room', channelId: 'lobby' });
      } finally {
        await mneme.close();
      }
    });
  },
);
