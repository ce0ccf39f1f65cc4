import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import { BATCH_HOLD_MS } from '../src/core/ingest/extraction.js';
import type { ExtractionSchedulerFactory } from '../src/core/ingest/extraction-scheduler.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import type { IngestExchangeInput, IngestInput } from '../src/core/schemas.js';
import type { Memory } from '../src/core/types.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';
import { createExtractionQueue } from '../src/workers/extraction-queue.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-batched-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

const users = ['ana', 'ben', 'cleo', 'dov', 'eli'];
const channels = ['room-a', 'room-b', 'dm-ana'];
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito Accra Hanoi'.split(' ');
const jobs = 'pilot chemist baker nurse judge potter'.split(' ');
const start = Date.parse('2024-03-01T10:00:00Z');

/** What user `user` says at step `index`: new facts, the same fact again, a fact that changes, commands, chatter. */
function said(index: number, user: number): string {
  const city = cities[(index + user) % cities.length];
  const job = jobs[(index + 2 * user) % jobs.length];
  return [
    `I live in ${cities[user % cities.length]} with my two cats.`,
    `My brother works as a ${job} in ${city}.`,
    'I use Vim for everything',
    `I live in ${cities[user % cities.length]} with my two cats.`,
    'I switched from Vim to VS Code',
    `/remember the ${city} office code is ${4000 + index}`,
    `I prefer green tea over coffee, and my sister lives in ${city}.`,
    'ok',
    `We moved to ${city} last year, and my friend is a ${job}.`,
    '/forget office code',
    `I collect old maps from ${city}.`,
    `I collect old maps from ${city}.`,
  ][index % 12] as string;
}

/** A few hundred messages over several users and channels, a third of them exchanges answered by the agent. */
function history(count: number): Array<IngestInput | IngestExchangeInput> {
  return Array.from({ length: count }, (_, index) => {
    const user = (index * 7) % users.length;
    const channelId = channels[index % channels.length] as string;
    const sender = channelId === 'dm-ana' ? 'ana' : (users[user] as string);
    const content = said(Math.floor(index / 3), user);
    const createdAt = new Date(start + index * 3_600_000).toISOString();
    if (index % 3 === 1) {
      return { channelId, userId: sender, userMessage: content, assistantReply: `Noted (${index}).`, createdAt };
    }
    return { channelId, sender, senderName: sender.toUpperCase(), content, createdAt };
  });
}

/**
 * An engine over real SQLite with the offline extractor (or `extractor`), extracting when `whenIdle()` is
 * awaited, channel after channel (no background worker, whose turns of 250 ms would make the order in which
 * channels share a sender's personal memories depend on the machine's speed).
 */
async function open(
  path: string,
  options: { batch: number; batchMs?: number; extractor?: FactExtractor; worker?: ExtractionSchedulerFactory },
): Promise<Mneme> {
  const ingest = {
    extractionBatchMessages: options.batch,
    ...(options.batchMs ? { extractionBatchMs: options.batchMs } : {}),
  };
  const mneme = createEngine({
    storage: createSqliteStorage({ path }),
    embedder: null,
    clock: createFixedClock('2024-06-01T09:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({ ingest }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: options.extractor ?? createOfflineExtractor(),
    ...(options.worker ? { extractionScheduler: options.worker } : {}),
  });
  engines.push(mneme);
  return mneme;
}

/** Every memory (archived and superseded ones too), oldest first. */
async function allMemories(mneme: Mneme): Promise<Memory[]> {
  const memories: Memory[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await mneme.list({ limit: 100, offset, archived: 'include' });
    memories.push(...page.memories);
    if (page.memories.length < 100) break;
  }
  return memories.sort((left, right) => left.id - right.id);
}

/** The memories and their links as sets of text, ids replaced by what they point at. */
async function normalised(mneme: Mneme): Promise<{ memories: string[]; links: string[] }> {
  const memories = await allMemories(mneme);
  const byId = new Map(memories.map((memory) => [memory.id, memory]));
  const key = (id: number | null) => {
    const memory = id === null ? undefined : byId.get(id);
    return memory
      ? `${memory.scope}:${memory.userId}:${memory.channelId}|${memory.content}|${memory.sourceMessageIds.join(',')}`
      : String(id);
  };
  const links = new Set<string>();
  for (const memory of memories) {
    for (const link of await mneme.links(memory.id)) {
      links.add(`${key(link.sourceId)} -${link.type}-> ${key(link.targetId)}`);
    }
  }
  return {
    memories: memories
      .map((memory) =>
        [
          memory.content,
          memory.category,
          memory.sector,
          memory.scope,
          memory.userId,
          memory.channelId,
          memory.topicId,
          memory.sourceMessageIds.join(','),
          memory.archivedAt === null ? 'active' : 'archived',
          `superseded by ${key(memory.supersededBy)}`,
        ].join(' | '),
      )
      .sort(),
    links: [...links].sort(),
  };
}

const messages = history(360);

describe('batched extraction', () => {
  it('writes the same memories, supersessions, links and episodes as one transaction a message', async () => {
    const single = await open(':memory:', { batch: 1 });
    const batched = await open(':memory:', { batch: 64 });
    for (const mneme of [single, batched]) {
      await mneme.ingestMany(messages);
      await mneme.whenIdle();
    }
    const before = await normalised(single);
    expect(await normalised(batched)).toEqual(before);
    // The history exercises what depends on earlier messages of a batch: a repeated fact is stored once,
    // a changed one supersedes, commands and exchange chunks are there.
    expect(before.memories.filter((line) => line.startsWith('ANA lives in Lisbon with')).length).toBe(1);
    expect(before.memories.some((line) => /superseded by .*VS Code/.test(line))).toBe(true);
    expect(before.memories.some((line) => line.includes('office code'))).toBe(true);
    expect(before.memories.some((line) => line.includes('| exchange |'))).toBe(true);
    expect(before.links.some((line) => line.includes('-supersedes->'))).toBe(true);

    for (const mneme of [single, batched]) await mneme.maintain();
    const after = await normalised(single);
    expect(await normalised(batched)).toEqual(after);
    expect(after.links.length).toBeGreaterThan(before.links.length);
  });

  it('writes the same memories when the messages the offline extractor finds no fact in skip their related-memory search', async () => {
    // Told that its related memories may add facts, the engine searches for every message first, as before.
    const searching = await open(':memory:', {
      batch: 64,
      extractor: { ...createOfflineExtractor(), relatedOnlyRemoves: false },
    });
    const skipping = await open(':memory:', { batch: 64 });
    // Each speaker alone in their channels: an extractor whose related memories may add facts is shown the speaker's
    // personal memories only where the speaker alone reads (attack28b), so both engines search the same memories.
    const alone = messages.map((item) => ({
      ...item,
      channelId: `${item.channelId}:${'userMessage' in item ? item.userId : item.sender}`,
    }));
    for (const mneme of [searching, skipping]) {
      await mneme.ingestMany(alone);
      await mneme.whenIdle();
    }
    const searched = await normalised(searching);
    expect(await normalised(skipping)).toEqual(searched);
    expect(searched.memories.some((line) => /superseded by .*VS Code/.test(line))).toBe(true);
  });

  /** An extractor whose `failAt`-th call fails, and every later one (a model that died mid-batch). */
  function dyingExtractor(failAt: number): FactExtractor & { calls: number } {
    const offline = createOfflineExtractor();
    const dying = {
      id: 'offline',
      inProcess: true,
      calls: 0,
      async extract(input: Parameters<FactExtractor['extract']>[0]) {
        if (++dying.calls >= failAt) throw new Error('the extractor died');
        return offline.extract(input);
      },
    };
    return dying;
  }

  /** What extraction wrote (facts and exchange chunks; a `/remember` command writes at ingest). */
  async function extracted(mneme: Mneme): Promise<Memory[]> {
    return (await allMemories(mneme)).filter(
      (memory) => memory.source === 'extraction' || memory.source === 'exchange',
    );
  }

  const oneChannel = messages.filter((message) => message.channelId === 'room-a');

  it('writes a batch whole or not at all: a failure mid-batch leaves its earlier messages unwritten, extracted once on restart', async () => {
    const path = join(folder, 'failing.db');
    const dying = dyingExtractor(6);
    const policy = { batch: 64, batchMs: 60_000 };
    const failing = await open(path, { ...policy, extractor: dying });
    await failing.ingestMany(oneChannel);
    await expect(failing.whenIdle()).rejects.toThrow('the extractor died');
    expect(dying.calls).toBeGreaterThanOrEqual(6);
    expect(await extracted(failing)).toEqual([]);
    await failing.close();
    engines.splice(engines.indexOf(failing), 1);

    const restarted = await open(path, policy);
    await restarted.whenIdle();
    const reference = await open(':memory:', { batch: 1 });
    await reference.ingestMany(oneChannel);
    await reference.whenIdle();
    const memories = await normalised(restarted);
    expect(memories).toEqual(await normalised(reference));
    expect(memories.memories.length).toBeGreaterThan(20);
  });

  it('runs a batch on past extractionBatchMs while no other call waits for the store: a failure at the 20th message leaves none written', async () => {
    const dying = dyingExtractor(20);
    const failing = await open(join(folder, 'unhurried.db'), { batch: 64, batchMs: 1, extractor: dying });
    await failing.ingestMany(oneChannel);
    await expect(failing.whenIdle()).rejects.toThrow('the extractor died');
    expect(dying.calls).toBe(20);
    expect(await extracted(failing)).toEqual([]);
  });

  it("runs a batch on past the end of its channel's turn in the background worker: a failure at the 20th message leaves none written", async () => {
    const dying = dyingExtractor(20);
    // Each call slower than a whole turn (1 ms): every message of the batch ends after the turn did.
    const slow = {
      ...dying,
      async extract(input: Parameters<FactExtractor['extract']>[0]) {
        await new Promise((resolve) => setTimeout(resolve, 3));
        return dying.extract(input);
      },
    };
    const worker: ExtractionSchedulerFactory = (work) => createExtractionQueue(work, { turnMs: 1 });
    const failing = await open(join(folder, 'turns.db'), { batch: 64, batchMs: 60_000, extractor: slow, worker });
    await failing.ingestMany(oneChannel);
    await vi.waitFor(() => expect(dying.calls).toBeGreaterThanOrEqual(20), { timeout: 20_000 });
    expect(await extracted(failing)).toEqual([]);
  });

  it("ends a batch after BATCH_HOLD_MS once its channel's turn is over: the messages before a failure are kept", async () => {
    const dying = dyingExtractor(25);
    // 24 calls of at least 120 ms each: past BATCH_HOLD_MS (2 s) before the failure.
    const slow = {
      ...dying,
      async extract(input: Parameters<FactExtractor['extract']>[0]) {
        await new Promise((resolve) => setTimeout(resolve, 120));
        return dying.extract(input);
      },
    };
    expect(24 * 120).toBeGreaterThan(BATCH_HOLD_MS);
    const worker: ExtractionSchedulerFactory = (work) => createExtractionQueue(work, { turnMs: 1 });
    const failing = await open(join(folder, 'held.db'), { batch: 64, batchMs: 60_000, extractor: slow, worker });
    await failing.ingestMany(oneChannel);
    await vi.waitFor(() => expect(dying.calls).toBeGreaterThanOrEqual(25), { timeout: 60_000 });
    expect((await extracted(failing)).length).toBeGreaterThan(0);
  });

  it('ends a batch after extractionBatchMs once another call waits for the store: the messages before a failure are kept', async () => {
    const dying = dyingExtractor(20);
    const failing = await open(join(folder, 'waited-for.db'), { batch: 64, batchMs: 1, extractor: dying });
    await failing.ingestMany(oneChannel);
    let idle = false;
    const extraction = failing.whenIdle().finally(() => {
      idle = true;
    });
    // Another caller of the store all along, as a request would be.
    const reading = (async () => {
      while (!idle) await failing.list({ limit: 1 });
    })();
    await expect(extraction).rejects.toThrow('the extractor died');
    await reading;
    expect((await extracted(failing)).length).toBeGreaterThan(0);
  });

  it('keeps what the messages before a failure wrote under batch size 1 (one transaction a message)', async () => {
    const dying = dyingExtractor(6);
    const failing = await open(join(folder, 'single.db'), { batch: 1, batchMs: 60_000, extractor: dying });
    await failing.ingestMany(oneChannel);
    await expect(failing.whenIdle()).rejects.toThrow('the extractor died');
    expect((await extracted(failing)).length).toBeGreaterThan(0);
  });
});
