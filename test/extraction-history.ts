import { afterEach } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import type { FactExtractor } from '../src/core/ports/fact-extractor.js';
import type { IngestExchangeInput, IngestInput } from '../src/core/schemas.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

const users = ['ana', 'ben', 'cleo', 'dov'];
const channels = ['room-a', 'room-b', 'dm-ana'];
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito'.split(' ');
const editors = 'Vim Emacs Helix Zed'.split(' ');
const start = Date.parse('2024-03-01T10:00:00Z');

/**
 * What user `user` says at step `index`: facts, the same fact again (also in other case and punctuation),
 * near-duplicates, changes of fact, other subjects.
 */
function said(index: number, user: number): string {
  const home = cities[user % cities.length] as string;
  const city = cities[(index + user) % cities.length] as string;
  const editor = editors[(index + user) % editors.length] as string;
  return [
    `I live in ${home} with my two cats.`,
    `I use ${editor} for everything`,
    `I live in ${home} with my two cats.`,
    `I live in ${home} with my two old cats.`,
    `I switched from ${editor} to ${editors[(index + user + 1) % editors.length]}`,
    `My brother lives in ${city} and my sister lives in Oslo.`,
    `We moved to ${city} last year.`,
    `Our standup is on ${index % 2 ? 'Monday' : 'Wednesday'} at ten.`,
    `I prefer green tea over coffee, and my friend Sam prefers coffee.`,
    `I no longer drink coffee.`,
    `Sam's team uses ${editor}.`,
    `Lee's team uses ${editor}.`,
    `I LIVE IN ${home.toUpperCase()} WITH MY TWO CATS!`,
    `i use ${editor.toLowerCase()} for everything.`,
  ][index % 14] as string;
}

/**
 * A history for comparing two ways of extracting: several users in two rooms and a direct channel, a third
 * of the messages exchanges answered by the agent.
 */
export function extractionHistory(count: number): Array<IngestInput | IngestExchangeInput> {
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

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

/**
 * An engine over `storage` with this extractor and the offline summariser and merger, no embedder, batches of
 * 16 messages; closed after each test.
 */
export function extractionEngine(storage: Storage, extractor: FactExtractor): Mneme {
  const mneme = createEngine({
    storage,
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
  return mneme;
}

/** Ingests the history in turns of 40 messages, waiting for extraction after each. */
export async function ingestInTurns(mneme: Mneme, messages: Array<IngestInput | IngestExchangeInput>): Promise<void> {
  for (let at = 0; at < messages.length; at += 40) {
    await mneme.ingestMany(messages.slice(at, at + 40));
    await mneme.whenIdle();
  }
}

/** Every memory (archived ones too) with what extraction decides of it, and its versions. */
export async function extractionOutcome(mneme: Mneme) {
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
