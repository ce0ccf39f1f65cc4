import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * The room check reads the cited messages' channels kept beside the citations (SQLite's migration 27, written by the
 * citation triggers). A memory whose citations an update changes is found by the check of its room as its citations
 * are now: citing another channel's message after the update, and no longer once it cites its room's alone. Held on
 * both stores.
 */
describe.each(engineStores)('the room check of a memory whose citations change, on %s', (store: EngineStore) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it('finds it while it cites another channel and not before or after', { timeout: 60_000 }, async () => {
    const { mneme, storage, clock } = await openMaintenanceEngine({ store });
    try {
      const inTeam = (await mneme.ingest({ channelId: 'team', sender: 'ann', content: 'Standup at nine' })).messages[0];
      const inSecret = (await mneme.ingest({ channelId: 'secret', sender: 'ann', content: 'Vault code 4471' }))
        .messages[0];
      const teamId = inTeam?.id ?? 0;
      const secretId = inSecret?.id ?? 0;
      const context = { at: clock.now(), actor: 'test' };
      const [memory] = await storage.memories.insert(
        [
          {
            content: 'Standup at nine',
            category: 'fact',
            sector: 'semantic',
            scope: 'room',
            owner: 'room:team',
            userId: null,
            channelId: 'team',
            projectId: null,
            topicId: null,
            source: 'extraction',
            importance: 0.5,
            pinned: false,
            sourceMessageIds: [teamId],
            sourceIds: [],
            embedding: null,
          },
        ],
        context,
      );
      const id = memory?.id ?? 0;
      const checked = async () =>
        (await storage.memories.citedChannels({ owner: 'room:team' }))
          .filter((cited) => cited.memory.id === id)
          .map((cited) => cited.channelIds);

      expect(await checked()).toEqual([]);
      await storage.memories.update(id, { sourceMessageIds: [teamId, secretId] }, context);
      expect(await checked()).toEqual([['secret', 'team']]);
      await storage.memories.update(id, { sourceMessageIds: [teamId] }, context);
      expect(await checked()).toEqual([]);
    } finally {
      await mneme.close();
    }
  });
});
