import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';

const file = readFileSync(resolve(import.meta.dirname, 'fixtures/mem0-export.json'), 'utf8');

/**
 * Attack finding (wt-attack, 2026-12-01): `mneme import --from mem0` run again with the same file (an
 * import killed after its commit and before it printed, then re-run; a script retried) added every memory
 * a second time. A mem0 memory's id is kept in its create version's reason: an import skips the ids an
 * earlier one brought in.
 */
describe('a mem0 export imported twice', () => {
  it('adds each memory once, and says how many it found already imported', async () => {
    const mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
    try {
      const first = await mneme.importData([file], { from: 'mem0' });
      expect(first.memories).toBe(3);
      const again = await mneme.importData([file], { from: 'mem0' });
      expect(again).toMatchObject({ memories: 0, versions: 0, duplicates: 3 });
      expect((await mneme.list({ archived: 'include' })).total).toBe(3);
    } finally {
      await mneme.close();
    }
  });
});
