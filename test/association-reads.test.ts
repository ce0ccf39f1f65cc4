import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { TextSearch } from '../src/storage/memory-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

/** The full-text searches a recall asks of the real SQLite store, recorded. */
function watchedSearches(storage: Storage): TextSearch[] {
  const searches: TextSearch[] = [];
  const { memories } = storage as { -readonly [Store in keyof Storage]: Storage[Store] };
  const searchText = memories.searchText.bind(memories);
  memories.searchText = (search) => {
    searches.push(search);
    return searchText(search);
  };
  return searches;
}

describe('recall: what the association list asks of the store (ADR 26, session 7)', () => {
  it("searches the associated words alone, the query's words being searched once, and still finds what they bring", async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const mneme = createEngine({
      storage,
      embedder: null,
      clock: createFixedClock('2024-06-15T12:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({ recall: { associationWeight: 0.3 } }),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
    });
    engines.push(mneme);
    const add = async (content: string) => (await mneme.remember({ content })).id;
    await add('Family dinner with the kids on Sunday evening');
    await add('The kids and the whole family went to the zoo');
    await add('Planning a family holiday that the kids will love');
    for (const filler of [
      'The invoice went to accounting',
      'Printer toner is low again',
      'Standup moved to Wednesday',
      'Quarterly report due Friday',
      'Server rack needs a new fan',
      'Budget review with finance',
      'Contract signed by the vendor',
      'Laptop battery replaced',
      'Parking permits renewed in March',
      'Office plants watered by Lee',
      'Coffee machine descaled',
      'Wifi password rotated',
    ])
      await add(filler);
    const target = await add('Swimming with the kids every Saturday morning');
    const searches = watchedSearches(storage);

    const result = await mneme.recall({ query: 'What does the family do together?', inspect: true });

    expect(result.hits.map((hit) => hit.memory.id)).toContain(target);
    const withKids = searches.filter((search) => search.terms.includes('kids'));
    expect(withKids).toHaveLength(1);
    expect(withKids[0]?.terms).not.toContain('family');
    expect(withKids[0]?.terms).not.toContain('together');
    expect(searches.filter((search) => search.terms.includes('together'))).toHaveLength(1);
  });
});
