import { describe, expect, it } from 'vitest';
import type { Mneme } from '../src/core/mneme.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { extractionEngine, extractionHistory, extractionOutcome, ingestInTurns } from './extraction-history.js';

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
  const mneme = extractionEngine(createSqliteStorage({ path: ':memory:' }), extractor);
  return { mneme, asked };
}

describe('attack9: told answers against asking twice', () => {
  it('(held) write the same memories and versions over a history with repeats in other case and punctuation', async () => {
    const messages = extractionHistory(280);
    const once = open(true);
    const twice = open(false);
    for (const { mneme } of [once, twice]) await ingestInTurns(mneme, messages);
    const written = await extractionOutcome(once.mneme);
    expect(await extractionOutcome(twice.mneme)).toEqual(written);
    // The told path was taken (asked only without related memories), the other asked again with them.
    expect(once.asked.every((related) => related === 0)).toBe(true);
    expect(twice.asked.filter((related) => related > 0).length).toBeGreaterThan(40);
    expect(written.filter((memory) => memory.versions.length > 1).length).toBeGreaterThan(0);
  });
});
