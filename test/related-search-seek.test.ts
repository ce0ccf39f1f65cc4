import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { IngestExchangeInput, IngestInput } from '../src/core/schemas.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { TextSearch } from '../src/storage/memory-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
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
  ][index % 12] as string;
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
 * An engine over real SQLite with the offline extractor, extracting when `whenIdle()` is awaited. With
 * `shared`, the related-memory search is told nothing of its counts (no `postingsAtMost`): the store
 * answers by the statement recall uses, the search before this change.
 */
function open(shared: boolean): { mneme: Mneme; searches: TextSearch[] } {
  const storage = createSqliteStorage({ path: ':memory:' });
  const searches: TextSearch[] = [];
  const { memories } = storage as { -readonly [Store in keyof Storage]: Storage[Store] };
  const searchText = memories.searchText.bind(memories);
  memories.searchText = (search) => {
    searches.push(search);
    if (!shared) return searchText(search);
    const { postingsAtMost: _told, ...rest } = search;
    return searchText(rest);
  };
  const mneme = createEngine({
    storage,
    embedder: null,
    clock: createFixedClock('2024-06-01T09:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({ ingest: { extractionBatchMessages: 16, extractionBatchMs: 60_000 } }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
    extractor: createOfflineExtractor(),
  });
  engines.push(mneme);
  return { mneme, searches };
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

describe('the related-memory search seeking each occurrence by id (ADR 19, session 9)', () => {
  it('writes the same memories and versions as the shared statement over a history of duplicates, changes, subjects, users and rooms', async () => {
    const messages = history(240);
    const seeking = open(false);
    const shared = open(true);
    for (const { mneme } of [seeking, shared]) {
      for (let start = 0; start < messages.length; start += 40) {
        await mneme.ingestMany(messages.slice(start, start + 40));
        await mneme.whenIdle();
      }
    }
    const written = await outcome(seeking.mneme);
    expect(await outcome(shared.mneme)).toEqual(written);
    // Both searched, and most of the searches were the counted ones this change is about.
    expect(seeking.searches.filter((search) => search.postingsAtMost !== undefined).length).toBeGreaterThan(40);
    expect(shared.searches.length).toBe(seeking.searches.length);
    expect(written.filter((memory) => memory.supersededBy !== null).length).toBeGreaterThan(0);
    expect(written.filter((memory) => memory.versions.length > 1).length).toBeGreaterThan(0);
  });

  it('never finds a memory of another user’s personal scope for a sender’s related memories', async () => {
    const { mneme, searches } = open(false);
    await mneme.ingestMany([
      { channelId: 'dm-ana', sender: 'ana', senderName: 'Ana', content: 'I keep a kestrel named Quill.' },
      { channelId: 'room-a', sender: 'ben', senderName: 'Ben', content: 'I keep a kestrel named Quill.' },
    ]);
    await mneme.whenIdle();
    const counted = searches.filter((search) => search.postingsAtMost !== undefined);
    expect(counted.length).toBe(2);
    const personal = (await mneme.list({ limit: 100 })).memories.filter((memory) => memory.scope === 'personal');
    // Ben's fact is his own memory, not an update of Ana's: her memory was no candidate of his search.
    expect(personal.map((memory) => [memory.userId, memory.content, memory.sourceMessageIds.length]).sort()).toEqual([
      ['ana', 'Ana keeps a kestrel named Quill.', 1],
      ['ben', 'Ben keeps a kestrel named Quill.', 1],
    ]);
  });
});
