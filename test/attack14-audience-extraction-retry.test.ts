import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import type { IngestInput } from '../src/core/schemas.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

/**
 * wt-attack14 at the engine: extraction's batches search the senders' memories inside their transaction
 * (ingest's related-memory search), where the full-text leg's audience snapshot is now used (ADR 25, 2026-12-03,
 * session 14). A batch fails mid-way (the extractor dies after some messages: rolled back), the channel is
 * extracted again by the same engine (the same connection and snapshot), more messages come; at each stage every
 * owner key's full-text search on the engine's storage (snapshot from the first search) answers as a second storage
 * on the same file that never holds one (`textSnapshotAfter: -1`), and so does a second storage holding its own.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack14-engine-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

const users = ['ana', 'ben', 'cleo'];
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito'.split(' ');
const start = Date.parse('2024-03-01T10:00:00Z');

function said(index: number, user: number): string {
  const city = cities[(index + user) % cities.length];
  return [
    `I live in ${cities[user % cities.length]} with my two cats.`,
    `My brother works as a pilot in ${city}.`,
    'I use Vim for everything',
    'I switched from Vim to VS Code',
    `I prefer green tea over coffee, and my sister lives in ${city}.`,
    `We moved to ${city} last year.`,
    `I collect old maps from ${city}.`,
    `/remember the ${city} office code is ${4000 + index}`,
    '/forget office code',
  ][index % 9] as string;
}

function history(count: number, from = 0): IngestInput[] {
  return Array.from({ length: count }, (_, at) => {
    const index = from + at;
    const user = (index * 7) % users.length;
    const channelId = index % 2 ? 'room-a' : 'dm-ben';
    const sender = channelId === 'dm-ben' ? 'ben' : (users[user] as string);
    return {
      channelId,
      sender,
      senderName: sender.toUpperCase(),
      content: said(Math.floor(index / 2), user),
      createdAt: new Date(start + index * 3_600_000).toISOString(),
    };
  });
}

/** An extractor that dies at its calls in `dies` (counted from 1), and answers as the offline one otherwise. */
function flakyExtractor(dies: Set<number>): FactExtractor & { calls: number } {
  const offline = createOfflineExtractor();
  const flaky = {
    id: 'offline',
    inProcess: true,
    relatedOnlyRemoves: false,
    calls: 0,
    async extract(input: Parameters<FactExtractor['extract']>[0]) {
      if (dies.has(++flaky.calls)) throw new Error('the extractor died');
      return offline.extract(input);
    },
  };
  return flaky;
}

const terms = [
  'lisbon',
  'oslo',
  'porto',
  'kyoto',
  'lima',
  'quito',
  'cats',
  'brother',
  'vim',
  'code',
  'tea',
  'maps',
  'pilot',
  'office',
  'sister',
];

/** Every owner key's searches (each term alone, and a few together; active, and with faded) on both storages. */
async function agree(path: string, helds: Storage[], reference: Storage, step: string): Promise<number> {
  const file = new BetterSqlite3(path, { readonly: true });
  const owners = file.prepare<[], string>('SELECT DISTINCT owner FROM memories ORDER BY owner').pluck().all();
  file.close();
  let found = 0;
  for (const owner of [...owners.map((key) => [key]), owners]) {
    for (const asked of [...terms.map((term) => [term]), terms.slice(0, 5), terms.slice(5)]) {
      for (const includeFaded of [false, true]) {
        const search = { terms: asked, owners: owner, limit: 200, includeFaded };
        const expected = await reference.memories.searchText(search);
        for (const [index, held] of helds.entries()) {
          expect(
            await held.memories.searchText(search),
            `${step} (${index}): ${owner.join(',')} ${asked.join(' ')}`,
          ).toEqual(expected);
        }
        found += expected.length;
      }
    }
  }
  return found;
}

describe('attack14: extraction batches failing mid-way and extracted again, searched through the audience snapshot (engine)', () => {
  it('answers every owner key as a storage that never holds the snapshot, after a failed batch, its retry, and more messages', async () => {
    const path = join(folder, 'retry.db');
    const storage = createSqliteStorage({ path, textSnapshotAfter: 0 });
    const reference = createSqliteStorage({ path, textSnapshotAfter: -1 });
    closing.push(() => reference.close());
    // A second storage on the file (another connection) holding its own snapshot: it sees the batches' commits only.
    const watcher = createSqliteStorage({ path, textSnapshotAfter: 0 });
    closing.push(() => watcher.close());
    const extractor = flakyExtractor(new Set([9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]));
    const mneme: Mneme = createEngine({
      storage,
      embedder: null,
      clock: createFixedClock('2024-06-01T09:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({ ingest: { extractionBatchMessages: 64, extractionBatchMs: 60_000 } }),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor,
    });
    closing.push(() => mneme.close());
    await mneme.ingestMany(history(40));
    await agree(path, [storage, watcher], reference, 'ingested');
    // The first batch dies at its 9th message: rolled back after searches inside it.
    await mneme.whenIdle().catch(() => undefined);
    expect(extractor.calls).toBeGreaterThanOrEqual(9);
    await agree(path, [storage, watcher], reference, 'after the failed batch');
    // Extracted again by the same engine (the same connection and snapshot), until nothing is left.
    for (let round = 0; round < 20; round++) {
      const done = await mneme.whenIdle().then(
        () => true,
        () => false,
      );
      await agree(path, [storage, watcher], reference, `retry ${round}`);
      if (done) break;
    }
    await mneme.ingestMany(history(40, 40));
    await mneme.whenIdle();
    const found = await agree(path, [storage, watcher], reference, 'more messages');
    expect(found).toBeGreaterThan(50);
    const file = new BetterSqlite3(path, { readonly: true });
    const extracted = file
      .prepare<[], number>("SELECT count(*) FROM memories WHERE source IN ('extraction', 'exchange')")
      .pluck()
      .get();
    const archived = file
      .prepare<[], number>('SELECT count(*) FROM memories WHERE archived_at IS NOT NULL')
      .pluck()
      .get();
    file.close();
    expect(extracted).toBeGreaterThan(20);
    expect(archived).toBeGreaterThan(0);
  });
  it("drops what a failed batch's related-memory searches brought in: a memory restated (its text and length changed) in the batch, rolled back", async () => {
    const path = join(folder, 'restated.db');
    const storage = createSqliteStorage({ path, textSnapshotAfter: 0 });
    const reference = createSqliteStorage({ path, textSnapshotAfter: -1 });
    closing.push(() => reference.close());
    let dies = false;
    // Each message is its own fact; a message saying "die" kills the extractor while `dies` is set.
    const extractor: FactExtractor = {
      id: 'echo',
      inProcess: true,
      async extract(input) {
        if (dies && input.userMessage.includes('die')) throw new Error('the extractor died');
        return [{ content: input.userMessage, category: 'preference', importance: 0.5, scope: 'personal' }];
      },
    };
    const mneme: Mneme = createEngine({
      storage,
      embedder: null,
      clock: createFixedClock('2024-06-01T09:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({ ingest: { extractionBatchMessages: 64, extractionBatchMs: 60_000 } }),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor,
    });
    closing.push(() => mneme.close());
    const message = (content: string, index: number): IngestInput => ({
      channelId: 'dm-ana',
      sender: 'ana',
      senderName: 'ANA',
      content,
      createdAt: new Date(start + index * 3_600_000).toISOString(),
    });
    await mneme.ingestMany([
      message('I really love my pet kestrel Pip', 0),
      message('My favourite bird is the kestrel', 1),
      message('I watch kestrels hover over the dunes', 2),
    ]);
    await mneme.whenIdle();
    const search = { terms: ['kestrel'], owners: ['user:ana'], limit: 20 };
    expect(await storage.memories.searchText(search)).toEqual(await reference.memories.searchText(search));
    const before = await reference.memories.searchText(search);
    // Restated at length (an update of its text, within the batch), then searched by the next messages, then the
    // extractor dies: the batch is rolled back.
    dies = true;
    await mneme.ingestMany([
      message('I really love my pet kestrel Pip so very very much indeed', 3),
      message('My kestrel Pip likes mice', 4),
      message('kestrel die', 5),
    ]);
    await expect(mneme.whenIdle()).rejects.toThrow('the extractor died');
    expect(await reference.memories.searchText(search)).toEqual(before);
    expect(await storage.memories.searchText(search)).toEqual(before);
    // Extracted again, the extractor healthy: the same memories on both.
    dies = false;
    await mneme.whenIdle();
    const after = await reference.memories.searchText(search);
    expect(after).not.toEqual(before);
    expect(await storage.memories.searchText(search)).toEqual(after);
  });
});
