import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { openStorage } from '../src/config/open-storage.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { hasPostgresBinaries, startTestPostgresServer } from '../src/storage/postgres/postgres-server.fixture.js';
import { createFixedClock } from '../src/testing.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-copy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const embedder = createFakeEmbeddingModel({ dimensions: 32 });
const quiet = { warn: () => {}, info: () => {} };

/** A SQLite database with something in every table: memories, versions, links, messages, keys, policy, watermarks. */
async function sourceDatabase(name: string): Promise<string> {
  const path = join(folder, name);
  const first = await openStorage({ path });
  // Migration 14's rows: a message's external id, a file's ingest progress, a stored idempotent response.
  await first.messages.append([{ ...chatLine, content: 'From the chat log', createdAt: Date.now() }], {
    file: { ...ingestProgress, at: Date.now() },
  });
  await first.idempotency.claim({ ...idempotencyKey, now: Date.now(), lockedUntil: Date.now() + 60_000 });
  await first.idempotency.complete(idempotencyKey, { status: 202, body: '{"accepted":true}' });
  await first.close();
  const mneme = await createMneme({ path, embedder, backfill: false, logger: quiet });
  await mneme.setPolicy({ settings: { 'recall.topK': 7 }, actor: 'tester' });
  for (let index = 0; index < 12; index++) {
    await mneme.ingestExchange({
      channelId: `room-${index % 3}`,
      userId: `user-${index % 2}`,
      userName: `User ${index % 2}`,
      userMessage: [
        'My sister Ana lives in Lisbon. I collect old maps.',
        'My brother Ben works as a pilot.',
        'I prefer green tea over coffee.',
        'We moved to Oslo last year.',
      ][index % 4] as string,
      assistantReply: `Noted (${index}).`,
    });
  }
  await mneme.whenIdle();
  const kept = await mneme.remember({ content: 'The deploy runs on Kubernetes', scope: 'global', pinned: true });
  const gone = await mneme.remember({ content: 'The office printer is broken', scope: 'global' });
  await mneme.update({ id: kept.id, importance: 0.9, actor: 'editor' });
  await mneme.forget(gone.id);
  await mneme.close();
  const storage = await openStorage({ path });
  await storage.apiKeys.insert({ prefix: 'mk_test', hash: 'hash', label: 'test key', userId: null }, Date.now());
  await storage.close();
  return path;
}

const chatLine = {
  channelId: 'room-0',
  senderId: 'user-0',
  role: 'user' as const,
  topicId: null,
  externalId: 'evt-1',
};
const ingestProgress = { path: '/logs/chat.jsonl', line: 3, prefixSha256: 'ab'.repeat(32) };
const idempotencyKey = {
  principal: 'user:user-0',
  key: 'k-1',
  requestSha256: 'cd'.repeat(32),
  expiresAt: Date.parse('2100-01-01T00:00:00.000Z'),
};

/** Everything a face can read of a database, ids included. */
async function contents(path: string) {
  // One fixed time for every read: strength and recency are computed as of the clock.
  const clock = createFixedClock('2030-01-01T00:00:00.000Z');
  const mneme = await createMneme({ path, embedder, backfill: false, logger: quiet, clock });
  try {
    const { memories } = await mneme.list({ archived: 'include', limit: 500 });
    const storage = await openStorage({ path });
    const ids = memories.map((memory) => memory.id);
    const vectors = await storage.maintenance.vectors(ids, embedder.modelId);
    const messages = [];
    for (const channel of await storage.messages.channelIds()) {
      messages.push(...(await storage.messages.listAfter(channel, 0, 1000)));
    }
    const result = {
      memories,
      histories: await Promise.all(ids.map((id) => mneme.history(id))),
      links: await Promise.all(ids.map((id) => mneme.links(id))),
      messages,
      policy: await mneme.policyHistory(),
      keys: await storage.apiKeys.list(),
      watermarks: await storage.maintenanceState.list('extraction'),
      members: await storage.memberships.members('channel', 'room-1'),
      ingest: await storage.messages.ingestFile(ingestProgress.path),
      // A completed key's claim answers its stored response and changes nothing.
      idempotency: await storage.idempotency.claim({
        ...idempotencyKey,
        requestSha256: 'ef'.repeat(32),
        now: Date.parse('2030-01-01T00:00:00.000Z'),
        lockedUntil: Date.parse('2030-01-01T00:01:00.000Z'),
      }),
      vectors: [...vectors.entries()].sort(([a], [b]) => a - b).map(([id, vector]) => [id, Array.from(vector)]),
      recall: (await recallOf(mneme)).map((hit) => [hit.memory.id, hit.ranks]),
    };
    await storage.close();
    return result;
  } finally {
    await mneme.close();
  }
}

async function recallOf(mneme: Mneme) {
  const result = await mneme.recall({ query: 'kubernetes deploy', viewer: { userId: 'user-0' }, inspect: true });
  return result.hits;
}

describe('mneme copy', () => {
  it('copies a SQLite database to PostgreSQL (PGlite + pgvector) and back, every table and vector the same', async () => {
    const source = await sourceDatabase('source.db');
    const before = await contents(source);
    expect(before.memories.length).toBeGreaterThan(10);
    expect(before.vectors.length).toBeGreaterThan(10);
    expect(before.links.flat().length).toBeGreaterThan(0);
    expect(before.messages.filter((message) => message.externalId === 'evt-1')).toHaveLength(1);
    expect(before.ingest).toEqual(ingestProgress);
    expect(before.idempotency).toMatchObject({ status: 202, body: '{"accepted":true}' });

    const postgres = `pglite:${join(folder, 'copy-pg')}`;
    const there = await runCli('unused', ['copy', '--from', source, '--to', postgres]);
    expect(there).toMatchObject({ code: 0 });
    expect(there.stdout).toMatch(/^copied \d+ rows from .*source\.db to pglite:.*; every table's count matches/);
    expect(there.stderr).toMatch(/copying memories \[#+\] \d+% \d+\/\d+/);
    expect(await contents(postgres)).toEqual(before);
    const copied = await openStorage({ path: postgres });
    const [again] = await copied.messages.append([
      { ...chatLine, content: 'From the chat log', createdAt: Date.now() },
    ]);
    await copied.close();
    expect(again).toMatchObject({ externalId: 'evt-1', duplicate: true });

    const back = join(folder, 'back.db');
    expect(await runCli('unused', ['copy', '--from', postgres, '--to', back])).toMatchObject({ code: 0 });
    expect(await contents(back)).toEqual(before);
  }, 120_000);

  it('resumes an interrupted copy where it stopped and ends with every count equal', async () => {
    const source = await sourceDatabase('interrupted.db');
    const target = join(folder, 'interrupted-copy.db');
    let batches = 0;
    await expect(
      copyDatabase({
        from: source,
        to: target,
        batchSize: 5,
        onProgress: ({ table }) => {
          if (table === 'memories' && ++batches === 4) throw new Error('interrupted');
        },
      }),
    ).rejects.toThrow('interrupted');
    const report = await copyDatabase({ from: source, to: target, batchSize: 5 });
    expect(report.tables.every((entry) => entry.source === entry.target)).toBe(true);
    expect(await contents(target)).toEqual(await contents(source));
  }, 120_000);

  it('keeps the ids of the newest rows a purge deleted from being given again, in a copy either way', async () => {
    /** Ann, then Bob (the newest message and memory), then Bob purged: the largest ids are gone from `path`. */
    async function purgedNewest(path: string) {
      const mneme = await createMneme({ path, embedder, backfill: false, logger: quiet });
      await mneme.putChannel({ id: 'c1', visibility: 'private', members: ['ann', 'bob'] });
      await mneme.ingest({ channelId: 'c1', sender: 'ann', role: 'user', content: 'I live in Lisbon.' });
      const [bobs] = (await mneme.ingest({ channelId: 'c1', sender: 'bob', role: 'user', content: 'I fly gliders.' }))
        .messages;
      await mneme.whenIdle();
      const { memories } = await mneme.list({ archived: 'include' });
      await mneme.purgeUser('bob');
      await mneme.close();
      return { message: bobs?.id ?? Number.POSITIVE_INFINITY, memory: Math.max(...memories.map((m) => m.id)) };
    }
    /** The ids the next message and memory of `path` get. */
    async function nextIds(path: string) {
      const mneme = await createMneme({ path, embedder, backfill: false, logger: quiet });
      const [message] = (await mneme.ingest({ channelId: 'c1', sender: 'ann', role: 'assistant', content: 'Ok.' }))
        .messages;
      const memory = await mneme.remember({ content: 'a note after the copy' });
      await mneme.close();
      return { message: message?.id ?? 0, memory: memory.id };
    }

    const source = join(folder, 'purged.db');
    const deleted = await purgedNewest(source);
    const postgres = `pglite:${join(folder, 'purged-pg')}`;
    expect(await copyDatabase({ from: source, to: postgres })).toBeTruthy();
    const there = await nextIds(postgres);
    expect(there.message).toBeGreaterThan(deleted.message);
    expect(there.memory).toBeGreaterThan(deleted.memory);

    const purgedThere = `pglite:${join(folder, 'purged-there')}`;
    const deletedThere = await purgedNewest(purgedThere);
    const back = join(folder, 'purged-back.db');
    expect(await copyDatabase({ from: purgedThere, to: back })).toBeTruthy();
    const here = await nextIds(back);
    expect(here.message).toBeGreaterThan(deletedThere.message);
    expect(here.memory).toBeGreaterThan(deletedThere.memory);
  }, 120_000);

  it('copies a table copied whole of more rows than PostgreSQL takes parameters in one statement', async () => {
    const source = join(folder, 'many-keys.db');
    const storage = await openStorage({ path: source });
    const now = Date.now();
    for (let index = 0; index < 10_000; index++) {
      await storage.idempotency.claim({ ...idempotencyKey, key: `k-${index}`, now, lockedUntil: now + 60_000 });
    }
    await storage.close();
    const report = await copyDatabase({ from: source, to: `pglite:${join(folder, 'many-keys-pg')}` });
    expect(report.tables.find((entry) => entry.table === 'idempotency_keys')).toMatchObject({
      source: 10_000,
      target: 10_000,
    });
  }, 120_000);

  it('refuses a target holding another database, and a source that does not exist, writing nothing', async () => {
    const other = await sourceDatabase('other.db');
    const source = await sourceDatabase('mine.db');
    const refused = await runCli('unused', ['copy', '--from', source, '--to', other]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /already holds rows \(.*memories [0-9]+.*\), which a copy would keep instead of the source's; copy into a new database/,
    );
    const missing = await runCli('unused', [
      'copy',
      '--from',
      join(folder, 'nothing.db'),
      '--to',
      join(folder, 'x.db'),
    ]);
    expect(missing.stderr).toBe(`mneme: there is no database at ${join(folder, 'nothing.db')}; check --from\n`);
  }, 120_000);

  it.skipIf(!hasPostgresBinaries)(
    'copies to a real PostgreSQL 15 server and back, and new rows there take ids after the copied ones',
    async () => {
      const server = await startTestPostgresServer();
      try {
        const source = await sourceDatabase('to-server.db');
        const url = await server.database('copied');
        expect(await runCli('unused', ['copy', '--from', source, '--to', url])).toMatchObject({ code: 0 });
        const mneme = await createMneme({ path: url, logger: quiet });
        const added = await mneme.remember({ content: 'written after the copy', scope: 'global' });
        const { memories } = await mneme.list({ archived: 'include', limit: 500 });
        expect(
          Math.max(...memories.filter((memory) => memory.id !== added.id).map((memory) => memory.id)),
        ).toBeLessThan(added.id);
        await mneme.close();
        const back = join(folder, 'from-server.db');
        const copied = await runCli('unused', ['copy', '--from', url, '--to', back, '--json']);
        expect(copied.code).toBe(0);
        const report = JSON.parse(copied.stdout) as {
          tables: Array<{ table: string; source: number; target: number }>;
        };
        expect(report.tables.find((entry) => entry.table === 'memories')).toMatchObject({
          source: memories.length,
          target: memories.length,
        });
      } finally {
        await server.stop();
      }
    },
    120_000,
  );
});
