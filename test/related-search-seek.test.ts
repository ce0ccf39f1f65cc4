import { describe, expect, it } from 'vitest';
import type { Mneme } from '../src/core/mneme.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import type { TextSearch } from '../src/storage/memory-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { extractionEngine, extractionHistory, extractionOutcome, ingestInTurns } from './extraction-history.js';

/**
 * An engine over real SQLite with the offline extractor. With `shared`, the related-memory search is told
 * nothing of its counts (no `postingsAtMost`): the store answers as for recall. (Since session 9 both seek
 * each occurrence by id; `sqlite-visible-ranking.test.ts` compares that with the planner's own plan.)
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
  return { mneme: extractionEngine(storage, createOfflineExtractor()), searches };
}

describe('the related-memory search told its counts (postingsAtMost), seeking each occurrence by id (ADR 19, session 9)', () => {
  it('writes the same memories and versions as the shared statement over a history of duplicates, changes, subjects, users and rooms', async () => {
    const messages = extractionHistory(240);
    const seeking = open(false);
    const shared = open(true);
    for (const { mneme } of [seeking, shared]) await ingestInTurns(mneme, messages);
    const written = await extractionOutcome(seeking.mneme);
    expect(await extractionOutcome(shared.mneme)).toEqual(written);
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
