import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import { createChatFactExtractor } from '../src/models/chat/chat-fact-extractor.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
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
import { createFixedClock, createScriptedChatModel } from '../src/testing.js';
import { type ExportRecord as Line, normaliseExport } from './export-file-fixture.js';

/**
 * "Nothing acknowledged is lost" through an export and an import (docs/export-format.md). Eve, called Dana, renames
 * herself Dora: the name she left (`users.left_name`, ADR 44) labels it in a memory made from what she said before,
 * written later. An export dropped it: restored, a chat model's "Dana prefers green tea" was written unlabelled, and
 * read as the Dana who arrived next.
 */

const at = (minute: number) => new Date(Date.UTC(2026, 2, 2, 9, minute)).toISOString();

/** An extractor that is the offline one until `chat` is set, then a chat model's that calls Eve by her old name. */
function switchableExtractor(): FactExtractor & { chat(): void } {
  const offline = createOfflineExtractor();
  const reply = (request: { messages: ReadonlyArray<{ content: string }> }) =>
    request.messages.some((message) => message.content.includes('green tea'))
      ? JSON.stringify({ facts: [{ content: 'Dana prefers green tea over coffee', category: 'preference' }] })
      : JSON.stringify({ facts: [] });
  const model = createChatFactExtractor(createScriptedChatModel(Array.from({ length: 50 }, () => reply)));
  let current: FactExtractor = offline;
  return {
    id: 'offline-then-chat',
    extract: (input, options) => current.extract(input, options),
    chat() {
      current = model;
    },
  };
}

function engine(storage: Storage, extractor: FactExtractor): Mneme {
  return createEngine({
    storage,
    embedder: null,
    clock: createFixedClock('2026-03-02T12:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({}),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor,
  });
}

/**
 * Ann and Eve (called Dana) share a private room, under a policy changed once; what they said was extracted (a fact that changed supersedes the
 * one before), Eve's note was edited, another forgotten; Eve said something more, not extracted yet, and renamed
 * herself Dora.
 */
async function build(mneme: Mneme): Promise<void> {
  await mneme.setPolicy({ settings: { 'recall.topK': 12 } });
  await mneme.putChannel({ id: 'shared', visibility: 'private', members: ['ann', 'eve'] });
  const said = async (sender: string, content: string, minute: number, senderName?: string) =>
    mneme.ingest({
      channelId: 'shared',
      sender,
      content,
      createdAt: at(minute),
      ...(senderName ? { senderName } : {}),
    });
  await said('ann', 'I love hiking in the Alps every summer', 1, 'Ann');
  await said('eve', 'I use Vim for everything', 2, 'Dana');
  await said('ann', 'We meet every Friday in the garden', 3);
  await said('eve', 'I switched from Vim to VS Code', 4);
  await mneme.whenIdle();
  const note = await mneme.remember({ content: 'Eve keeps bees', scope: 'personal', userId: 'eve' });
  await mneme.update({ id: note.id, content: 'Eve keeps two hives of bees', importance: 0.8 });
  const doomed = await mneme.remember({ content: 'A note to forget', scope: 'personal', userId: 'ann' });
  await mneme.forget(doomed.id);
  await said('eve', 'Dana here: I prefer green tea over coffee', 5);
  await mneme.setDisplayName({ userId: 'eve', displayName: 'Dora' });
}

async function exported(mneme: Mneme): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of mneme.exportData()) lines.push(line);
  return lines;
}

/** The round trip and what comes after it, on stores of one kind (`open` gives a new, empty one). */
function roundTrip(open: () => Promise<Storage>) {
  it('restores the names a user left so a memory written after the restore is labelled as on its source', async () => {
    const sourceExtractor = switchableExtractor();
    const source = engine(await open(), sourceExtractor);
    const restoredExtractor = switchableExtractor();
    const restored = engine(await open(), restoredExtractor);
    try {
      await build(source);
      const first = await exported(source);
      const eve = first
        .map((line) => JSON.parse(line) as Line)
        .find((line) => line.type === 'user' && line.id === 'eve');
      expect(eve).toMatchObject({ displayName: 'Dora', leftNames: [{ name: 'Dana', at: '2026-03-02T12:00:00.000Z' }] });
      expect(JSON.parse(first[0] ?? '{}')).toMatchObject({ version: 4 });
      const memories = first.map((line) => JSON.parse(line) as Line).filter((line) => line.type === 'memory');
      expect(memories.some((memory) => memory.supersededBy !== null)).toBe(true);
      expect(memories.some((memory) => memory.archivedAt !== null)).toBe(true);
      expect(memories.some((memory) => memory.scope === 'room')).toBe(true);

      // A user's export carries that user's own names left only.
      const leftOf = async (userId: string) => {
        const lines: string[] = [];
        for await (const line of source.exportData({ userId })) lines.push(line);
        return lines
          .map((line) => JSON.parse(line) as Line)
          .flatMap((line) => (line.type === 'user' && line.leftNames ? [[line.id, line.leftNames]] : []));
      };
      expect(await leftOf('eve')).toEqual([['eve', [{ name: 'Dana', at: '2026-03-02T12:00:00.000Z' }]]]);
      expect(await leftOf('ann')).toEqual([]);

      await restored.importData(first);
      const second = await exported(restored);
      expect(normaliseExport(second)).toEqual(normaliseExport(first));

      // After the restore, as on the source: the message Eve sent as Dana is extracted by a chat model that calls her
      // Dana, then a Dana arrives.
      for (const [mneme, extractor] of [
        [source, sourceExtractor],
        [restored, restoredExtractor],
      ] as const) {
        extractor.chat();
        await mneme.whenIdle();
        await mneme.setDisplayName({ userId: 'dana', displayName: 'Dana' });
      }
      const { memories: eves } = await restored.list({ userId: 'eve', scope: 'personal', limit: 50 });
      expect(eves.map((memory) => memory.content)).toContain('Dana (eve) prefers green tea over coffee');
      expect(normaliseExport(await exported(restored))).toEqual(normaliseExport(await exported(source)));
    } finally {
      await source.close();
      await restored.close();
    }
  }, 120_000);
}

describe('SQLite', () => roundTrip(async () => createSqliteStorage({ path: ':memory:' })));
describe('PGlite', () =>
  roundTrip(async () => createPostgresStorage({ database: await createPgliteDatabase('pglite:memory:') })));
describe.skipIf(!hasPostgresBinaries)('PostgreSQL 15 server', () => {
  let server: TestPostgresServer;
  let count = 0;
  beforeAll(async () => {
    server = await startTestPostgresServer();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  roundTrip(async () => {
    count++;
    return createPostgresStorage({ database: createPgPoolDatabase(await server.database(`restore${count}`)) });
  });
});

describe('mneme copy', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-copy-left-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('copies the names a user left to SQLite and to PGlite', async () => {
    const from = join(folder, 'source.db');
    const source = await createMneme({ path: from, embedder: 'none', backfill: false });
    await source.setDisplayName({ userId: 'eve', displayName: 'Dana' });
    await source.setDisplayName({ userId: 'eve', displayName: 'Dora' });
    const expected = (await exported(source))
      .map((line) => JSON.parse(line) as Line)
      .find((line) => line.type === 'user' && line.id === 'eve');
    await source.close();
    expect(expected?.leftNames).toEqual([{ name: 'Dana', at: expect.any(String) }]);
    for (const to of [join(folder, 'copy.db'), `pglite:${join(folder, 'copy-pg')}`]) {
      await copyDatabase({ from, to });
      const copy = await createMneme({ path: to, embedder: 'none', backfill: false });
      try {
        const eve = (await exported(copy))
          .map((line) => JSON.parse(line) as Line)
          .find((line) => line.type === 'user' && line.id === 'eve');
        expect(eve).toEqual(expected);
      } finally {
        await copy.close();
      }
    }
  }, 120_000);
});
