import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  type EngineStore,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * Ingest asked whether a message's sender was already a member of its channel before the append, which makes them
 * one: a sender who was not was an audience change of the channel's room (ADR 5). An administrator who removes the
 * sender in between, and a memory of the room written after the removal that the sender may not read (it cites a
 * channel they are not in), must not be read by the sender once the append makes them a member again (session 19).
 */

describe.each(serverEngineStores)('a sender removed from a channel before the append, on %s', (store: EngineStore) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it('does not read the room memory citing a channel the sender is not in', { timeout: 60_000 }, async () => {
    const { mneme, storage, clock } = await openMaintenanceEngine({ store });
    try {
      await mneme.putChannel({ id: 'secret', members: ['ann'] });
      await mneme.putChannel({ id: 'team', members: ['ann', 'bob'] });
      const said = await mneme.ingest({ channelId: 'secret', sender: 'ann', content: 'The vault code is 4471' });
      const secretMessage = said.messages[0]?.id ?? 0;
      let written: number | null = null;
      // The administrator's removal and a memory of the team room citing the secret channel, written after it (every
      // reader of the team room, Ann alone, reads the secret channel), land after ingest prepared Bob's message and
      // before its append (where ingest asked whether Bob was a member before session 19).
      const append = storage.messages.append.bind(storage.messages);
      storage.messages.append = async (messages, options) => {
        if (written === null && messages.some((message) => message.channelId === 'team')) {
          await mneme.putChannel({ id: 'team', members: ['ann'] });
          const [memory] = await storage.memories.insert(
            [
              {
                content: 'The vault code is 4471',
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
                sourceMessageIds: [secretMessage],
                sourceIds: [],
                embedding: null,
              },
            ],
            { at: clock.now(), actor: 'test' },
          );
          written = memory?.id ?? 0;
        }
        return append(messages, options);
      };

      await mneme.ingest({ channelId: 'team', sender: 'bob', content: 'Morning all' });

      expect(written).not.toBeNull();
      expect(await storage.memberships.isMember('channel', 'team', 'bob')).toBe(true);
      const [memory] = await storage.memories.get([written ?? 0]);
      expect([memory?.scope, memory?.channelId]).toEqual(['room', 'secret']);
      const asBob = await mneme.recall({ query: 'vault code', viewer: { userId: 'bob', channelId: 'team' } });
      expect(asBob.hits.map((hit) => hit.memory.id)).not.toContain(written);
      const asAnn = await mneme.recall({ query: 'vault code', viewer: { userId: 'ann', channelId: 'secret' } });
      expect(asAnn.hits.map((hit) => hit.memory.id)).toContain(written);
    } finally {
      await mneme.close();
    }
  });
});
