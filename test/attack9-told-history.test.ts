import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { IngestExchangeInput, IngestInput } from '../src/core/schemas.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

const users = ['ana', 'ben', 'cleo', 'dov'];
const channels = ['room-a', 'room-b', 'dm-ana'];
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito'.split(' ');
const editors = 'Vim Emacs Helix Zed'.split(' ');
const start = Date.parse('2024-03-01T10:00:00Z');

/** What user `user` says at step `index`: facts, the same fact again, near-duplicates, changes of fact, other subjects. */
function said(index: number, user: number): string {
  const city = cities[(index + user) % cities.length] as string;
  const editor = editors[(index + user) % editors.length] as string;
  return [
    `I live in ${cities[user % cities.length]} with my two cats.`,
    `I use ${editor} for everything`,
    `I live in ${cities[user % cities.length]} with my two cats.`,
    `I live in ${cities[user % cities.length]} with my two old cats.`,
    `I switched from ${editor} to ${editors[(index + user + 1) % editors.length]}`,
    `My brother lives in ${city} and my sister lives in Oslo.`,
    `We moved to ${city} last year.`,
    `Our standup is on ${index % 2 ? 'Monday' : 'Wednesday'} at ten.`,
    `I prefer green tea over coffee, and my friend Sam prefers coffee.`,
    `I no longer drink coffee.`,
    `Sam's team uses ${editor}.`,
    `Lee's team uses ${editor}.`,
    `I LIVE IN ${(cities[user % cities.length] as string).toUpperCase()} WITH MY TWO CATS!`,
    `i use ${editor.toLowerCase()} for everything.`,
  ][index % 14] as string;
}

/** Several users in two rooms and a direct channel, a third of the messages exchanges answered by the agent. */
function history(count: number): Array<IngestInput | IngestExchangeInput> {
  return Array.from({ length: count }, (_, index) => {
    const user = (index * 5) % users.length;
    const channelId = channels[index % channels.length] as string;
    const sender = channelId === 'dm-ana' ? 'ana' : (users[user] as string);
    const content = said(Math.floor(index / 2), user);
    const createdAt = new Date(start + index * 3_600_000).toISOString();
    if (index % 3 === 1) {
      return { channelId, userId: sender, userMessage: content, assistantReply: `Noted (${index}).`, createdAt };
    }
    return { channelId, sender, senderName: sender.toUpperCase(), content, createdAt };
  });
}

/**
 * Held (wt-attack9): an engine asking the offline extractor once a message (its answer with related memories told by
 * `withoutRelated`, 5af27e8) writes the same memories and versions as one asking it twice (the method left out),
 * over a history of repeated facts (the same fact in other case and punctuation), changes, users, rooms, batches.
 */
function open(told: boolean): { mneme: Mneme; asked: number[] } {
  const offline = createOfflineExtractor();
  const asked: number[] = [];
  const extractor = {
    id: offline.id,
    relatedOnlyRemoves: true,
    async extract(input: Parameters<typeof offline.extract>[0]) {
      asked.push(input.related.length);
      return offline.extract(input);
    },
    ...(told && offline.withoutRelated ? { withoutRelated: offline.withoutRelated } : {}),
  };
  const mneme = createEngine({
    storage: createSqliteStorage({ path: ':memory:' }),
    embedder: null,
    clock: createFixedClock('2024-06-01T09:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({ ingest: { extractionBatchMessages: 16, extractionBatchMs: 60_000 } }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor,
  });
  engines.push(mneme);
  return { mneme, asked };
}

/** Every memory (archived ones too) with what extraction decides of it, and its versions. */
async function outcome(mneme: Mneme) {
  const memories = [];
  for (let offset = 0; ; offset += 200) {
    const page = await mneme.list({ limit: 200, offset, archived: 'include' });
    memories.push(...page.memories);
    if (offset + 200 >= page.total) break;
  }
  const sorted = memories.sort((left, right) => left.id - right.id);
  return Promise.all(
    sorted.map(async (memory) => ({
      id: memory.id,
      content: memory.content,
      category: memory.category,
      owner: [memory.scope, memory.userId, memory.channelId],
      importance: memory.importance,
      sourceMessageIds: memory.sourceMessageIds,
      supersededBy: memory.supersededBy,
      validFrom: memory.validFrom,
      archivedAt: memory.archivedAt,
      versions: (await mneme.history(memory.id)).map((version) => [version.version, version.action, version.changes]),
    })),
  );
}

describe('attack9: told answers against asking twice', () => {
  it('(held) write the same memories and versions over a history with repeats in other case and punctuation', async () => {
    const messages = history(280);
    const once = open(true);
    const twice = open(false);
    for (const { mneme } of [once, twice]) {
      for (let start = 0; start < messages.length; start += 40) {
        await mneme.ingestMany(messages.slice(start, start + 40));
        await mneme.whenIdle();
      }
    }
    const written = await outcome(once.mneme);
    expect(await outcome(twice.mneme)).toEqual(written);
    // The told path was taken (asked only without related memories), the other asked again with them.
    expect(once.asked.every((related) => related === 0)).toBe(true);
    expect(twice.asked.filter((related) => related > 0).length).toBeGreaterThan(40);
    expect(written.filter((memory) => memory.versions.length > 1).length).toBeGreaterThan(0);
  });
});
