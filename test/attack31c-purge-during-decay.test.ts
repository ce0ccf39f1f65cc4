import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  daysAfter,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Bob purges himself (his own key) while decay runs: decay has read his old memory as due, the purge deletes it, and
 * decay's write finds no row. Decay's archive took that for an error and the run failed (NOT_FOUND), leaving Eve's
 * old memory on the same page undecayed until a later run; nothing of Bob's may come back either.
 */

const start = '2024-06-01T00:00:00.000Z';

describe.each(engineStores)(
  'a purge of Bob between decay reading his memory and putting it to rest, on %s',
  (store) => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-purge-'));
    beforeAll(() => prepareEngineStore(store), 60_000);
    afterAll(async () => {
      await closeEngineStores();
      rmSync(folder, { recursive: true, force: true });
    });

    it('puts the other memories of the page to rest and brings back nothing of Bob', async () => {
      const path = join(folder, 'purge.db');
      const maintainer = await openMaintenanceEngine({ store, path, start });
      const service: MaintenanceEngine =
        store === 'sqlite' ? await openMaintenanceEngine({ store, path, start }) : maintainer;
      try {
        const bob = service.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
        const eve = service.mneme.as({ kind: 'user', userId: 'eve', label: 'eve app' });
        const bobs = (await bob.remember({ content: 'My locker code is 4471' })).id;
        const eves = (await eve.remember({ content: 'My bike is the red one' })).id;
        const maintenance = maintainer.storage.maintenance;
        const due = maintenance.dueForDecay.bind(maintenance);
        let purged = false;
        maintenance.dueForDecay = async (rule, until, after, limit) => {
          const page = await due(rule, until, after, limit);
          if (!purged && page.some((memory) => memory.id === bobs)) {
            purged = true;
            await bob.purgeUser('bob');
          }
          return page;
        };

        const report = await maintainer.mneme.maintain({ tasks: ['decay'], now: daysAfter(start, 60) });

        expect(purged).toBe(true);
        expect(report.decay?.archived).toBe(1);
        const left = await maintainer.storage.memories.get([bobs, eves]);
        expect(left.map((memory) => [memory.id, memory.fadedAt !== null])).toEqual([[eves, true]]);
      } finally {
        if (service !== maintainer) await service.mneme.close();
        await maintainer.mneme.close();
      }
    });
  },
);
