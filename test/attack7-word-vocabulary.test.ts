import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { consolidateOffline, type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-vocabulary-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe("attack7: consolidation's stored vocabulary across user purges", () => {
  // Finding: a purge deletes the whole vocabulary (consolidation_words, AUTOINCREMENT) and the next run writes
  // every word again under new ids, so the largest word id grows by the vocabulary's size at every purge; the
  // near-duplicate index sizes its arrays by the largest id and sorts all of them when sealed
  // (`Array.from({ length: wordLimit })`), so each purge makes every later consolidation slower and larger.
  it('keeps word ids within a small multiple of the vocabulary through many purges', async () => {
    const path = join(folder, 'vocabulary.db');
    const engine = await openMaintenanceEngine({ path, start: '2024-06-01T10:00:00.000Z' });
    engines.push(engine);
    for (let at = 0; at < 64; at++) {
      await engine.mneme.remember({ content: `shared${at} alpha${at % 7} beta${at % 11} gamma${at} delta${at}` });
    }
    const purges = 15;
    for (let round = 0; round < purges; round++) {
      await engine.mneme.remember({
        content: `private note ${round} of user ${round}`,
        scope: 'personal',
        userId: `user${round}`,
      });
      await engine.mneme.remember({ content: `round ${round} marker epsilon${round}` });
      await consolidateOffline(engine, { nearDuplicateIndex: 'always', wordBlockSize: 8 });
      await engine.mneme.purgeUser(`user${round}`);
    }
    await engine.mneme.remember({ content: 'one more new memory after the last purge' });
    await consolidateOffline(engine, { nearDuplicateIndex: 'always', wordBlockSize: 8 });
    const raw = openSqliteDatabase({ path });
    const { words, largest } = raw
      .prepare<[], { words: number; largest: number }>(
        'SELECT count(*) AS words, IFNULL(MAX(id), 0) AS largest FROM consolidation_words',
      )
      .get() ?? { words: 0, largest: 0 };
    raw.close();
    expect(words).toBeGreaterThan(100);
    expect(largest).toBeLessThan(3 * words);
  }, 120_000);
});
