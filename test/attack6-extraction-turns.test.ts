import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { ExtractionWork } from '../src/core/ingest/extraction-scheduler.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../src/testing.js';

// Attack (session 6, wt-attack6) on 34cc2b5: each channel turn of the extraction worker calls
// `processChannel(channel, closing, turn)`, which makes `AbortSignal.any([closing, turn])` for its lease wait.
// `closing` is the worker's signal, alive as long as the process. Node 20 (this machine: v20.20.2; `engines`
// allows >=20) keeps a WeakRef of every signal `AbortSignal.any` made in the source signal's
// `kDependantSignals` set and never removes them: the set, and the heap, grow by one entry a turn, for ever
// (measured in plain Node: +5.5 MB of heap after gc per 100,000 turns, /tmp/wt-attack6-any.mjs).
const engines: Mneme[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

/** The set Node keeps on a source signal of the signals `AbortSignal.any` made from it (undefined: none kept). */
function dependants(signal: AbortSignal): number | undefined {
  const symbol = Object.getOwnPropertySymbols(signal).find((each) => String(each) === 'Symbol(kDependantSignals)');
  const set =
    symbol === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown> | undefined>)[symbol];
  return set?.size;
}

describe('attack6: the extraction worker over a long life', () => {
  it("keeps nothing of a channel's turn on the worker's signal once the turn is over", async () => {
    const captured: { work?: ExtractionWork } = {};
    const mneme = createEngine({
      storage: createSqliteStorage({ path: ':memory:' }),
      embedder: null,
      clock: createFixedClock('2024-06-01T09:00:00Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy({}),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor: createOfflineExtractor(),
      extractionScheduler: (given) => {
        captured.work = given;
        return { schedule: () => true, whenIdle: async () => {}, close: async () => {} };
      },
    });
    engines.push(mneme);
    await mneme.ingest({ channelId: 'room', sender: 'ann', content: 'I live in Lisbon with my two cats.' });
    // The worker's signal (`controller.signal` of the queue), and a turn of `turnMs` each time, as `runTurn` does.
    const closing = new AbortController();
    const turns = 2_000;
    for (let index = 0; index < turns; index++) {
      const turn = new AbortController();
      await captured.work?.processChannel('room', closing.signal, turn.signal);
      turn.abort();
    }
    expect(await mneme.turns({ channelId: 'room', count: 5 })).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    (globalThis as { gc?: () => void }).gc?.();
    // Today on Node 20: 2,000 (one a turn, never removed).
    expect(dependants(closing.signal) ?? 0).toBeLessThan(turns / 10);
  });
});
