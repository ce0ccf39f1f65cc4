import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { wordCountDifferences } from '../src/storage/sqlite/sqlite-word-counts.fixture.js';
import { openMaintenanceEngine } from './maintenance-engine.js';

const folder = mkdtempSync(join(tmpdir(), 'wt-attack8-words-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const pieces = [
  'ies',
  'eed',
  'sses',
  'ing',
  'ed',
  'ation',
  'yy',
  "'s",
  "'",
  '-',
  '_',
  '.',
  '9',
  '0x1F',
  'café',
  'Ærø',
  '日本',
  '\u0001',
  '\t',
  ' ',
  ' ',
  ' ',
  'Run',
  'RUNS',
  'ponies',
  'caress',
  'agreed',
  'a',
  'b',
  'y',
  'x'.repeat(63),
  'z'.repeat(66),
  'naïve',
  'e\u0301',
  '🎉',
  '\u00a0',
  'ﬁ',
  'İ',
  'ß',
];

describe('attack8: word counts through every write path against a recount from the index', () => {
  it('(held) remember (personal, global), update, forget, restore, purge over mixed texts: no difference', async () => {
    const path = join(folder, 'words.db');
    const engine = await openMaintenanceEngine({ path });
    const random = createSeededRandom(88);
    const text = () => Array.from({ length: 1 + random.below(14) }, () => pieces[random.below(pieces.length)]).join('');
    try {
      const ids: number[] = [];
      const users = ['ann', 'bob', 'cy'];
      for (let round = 0; round < 300; round++) {
        const user = users[random.below(users.length)] ?? 'ann';
        const action = ids.length === 0 ? 0 : random.below(6);
        const id = ids[random.below(ids.length)] ?? 0;
        try {
          if (action <= 1) {
            const scope =
              random.below(2) === 0 ? ({ scope: 'personal', userId: user } as const) : ({ scope: 'global' } as const);
            ids.push((await engine.mneme.remember({ content: text(), ...scope })).id);
          } else if (action === 2) await engine.mneme.update({ id, content: text() });
          else if (action === 3) await engine.mneme.forget(id);
          else if (action === 4) await engine.mneme.restore(id);
          else if (round % 50 === 0) await engine.mneme.purgeUser(user);
        } catch (error) {
          if (
            !/INVALID_INPUT|NOT_FOUND|CONFLICT|nothing|already|not forgotten|invalid|blank|empty|text|archived|exist/i.test(
              String(error),
            )
          )
            throw error;
        }
      }
      expect(ids.length).toBeGreaterThan(50);
      const raw = new Database(path);
      try {
        expect(wordCountDifferences(raw)).toEqual([]);
      } finally {
        raw.close();
      }
    } finally {
      await engine.mneme.close();
    }
  });
});
