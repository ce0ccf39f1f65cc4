import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { MAINTENANCE_ACTOR } from '../src/core/reserved-ids.js';
import { createFixedClock } from '../src/testing.js';
import { storesIn, writeBelowTheEngine } from './data-from-before.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-purge-actor-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };
const at = '2026-03-02T10:00:00Z';

/**
 * A purge clears its user's id from the actors of every version row, so that what they did is no longer theirs by
 * name. A user called `maintenance` (which a database from before ADR 38 may hold; none can be made now) took with her
 * the actor of every version row maintenance wrote, on every user's memories: their history no longer said what did
 * it.
 */
describe.each(storesIn(folder))('on %s', (_store, pathOf) => {
  it('leaves the version rows of maintenance alone when a user called maintenance is purged', {
    timeout: 60_000,
  }, async () => {
    const path = pathOf('purge');
    const before = await createMneme({ path, clock: createFixedClock(at), logger: quiet });
    const memory = await before.remember({ content: 'Ann keeps her bike in the garage', userId: 'ann' });
    await before.close();
    await writeBelowTheEngine(path, async (storage) => {
      await storage.directory.putUser({ id: 'maintenance', displayName: 'Mia from maintenance' }, Date.parse(at));
      await storage.memories.update(
        memory.id,
        { importance: 0.2 },
        { at: Date.parse(at) + 1000, actor: MAINTENANCE_ACTOR, reason: 'decayed' },
      );
    });
    const mneme = await createMneme({ path, clock: createFixedClock(at), logger: quiet });
    try {
      await expect(mneme.setDisplayName({ userId: 'maintenance', displayName: 'Mia' })).rejects.toThrow(/is reserved/);
      await mneme.purgeUser('maintenance');
      const versions = await mneme.history(memory.id);
      expect(versions.map((version) => version.actor)).toContain(MAINTENANCE_ACTOR);
      expect((await mneme.get(memory.id)).importance).toBeCloseTo(0.2);
    } finally {
      await mneme.close();
    }
  });
});
