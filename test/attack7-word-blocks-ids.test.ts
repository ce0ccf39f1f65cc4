import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ConsolidateOptions } from '../src/core/maintenance/consolidate-task.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { consolidateOffline, type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-blocks-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});
let files = 0;

/** An engine on a file whose memory ids start at `firstId` (as after a copy of a store whose ids run that high). */
async function engineFrom(firstId: number): Promise<MaintenanceEngine> {
  const path = join(folder, `blocks-${files++}.db`);
  const engine = await openMaintenanceEngine({ path, start: '2024-06-01T10:00:00.000Z' });
  engines.push(engine);
  const raw = openSqliteDatabase({ path });
  raw
    .prepare(
      "INSERT INTO service_state (name, value) VALUES ('memories_id_floor', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    )
    .run(firstId - 1);
  raw.close();
  return engine;
}

const topics = [
  'kestrels hover above the motorway verges at dawn',
  'herons stalk frogs along the old canals',
  'the release train leaves every tuesday at noon',
  'ospreys plunge feet first after trout in the bay',
];

describe('attack7: consolidation word blocks hold memory ids as 32-bit integers', () => {
  // Finding: a block stores its memories' ids in an Int32Array; an id above 2^31 - 1 (a store copied from
  // PostgreSQL whose ids run that high, or one that grew there) is written wrapped, and the next run that
  // reads the block gives the index a negative id and fails ("add memories ... by growing id").
  it('consolidates a store whose memory ids pass 2^31 as the text path does', async () => {
    const results: unknown[] = [];
    for (const wordBlocks of [false, true]) {
      const engine = await engineFrom(2 ** 31 - 6);
      const options: ConsolidateOptions = { nearDuplicateIndex: 'always', wordBlocks, wordBlockSize: 4 };
      const runs: unknown[] = [];
      // Memories unlike any other on both sides of 2^31: they stay active, in the blocks around it.
      for (let at = 0; at < 12; at++) {
        await engine.mneme.remember({ content: `lone${at} word${at}a word${at}b word${at}c word${at}d` });
      }
      for (const [round, topic] of topics.entries()) {
        for (let copy = 0; copy < 6; copy++) await engine.mneme.remember({ content: `${topic} note ${round}-${copy}` });
        runs.push(await consolidateOffline(engine, options));
      }
      const ids = (await engine.mneme.list({ archived: 'include', limit: 100 })).memories.map((memory) => memory.id);
      expect(Math.max(...ids)).toBeGreaterThan(2 ** 31);
      results.push(runs);
    }
    expect(results[1]).toEqual(results[0]);
  }, 60_000);
});
