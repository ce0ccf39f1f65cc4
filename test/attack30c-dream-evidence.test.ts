import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { createOfflineExtractor } from '../src/models/offline/offline-extractor.js';
import {
  closeEngineStores,
  type EngineStore,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * Wt-c (attack 30), maintenance with two audiences: a dreamer is shown up to 50 memories of one owner and names, as
 * the insight's evidence, those it chooses. A chat model sums up what it read and names one or two: the insight then
 * quoted memories it did not name, and what follows an insight by its sources (ADR 5) left it behind. Bob's facts of
 * two public channels were global; the insight quoted both and named the lobby's; the atrium made private, its fact
 * moved into its room, and the insight quoting its vault key stayed global, read by every user. Likewise a purge of Ann
 * deleted the episode quoting her, and the insight that quoted it and named another stayed, quoting her to the room.
 */
const START = Date.parse('2026-03-02T08:00:00Z');
const HOUR = 60 * 60 * 1000;

// Sums up everything it is given and names one memory as its evidence, not the one holding a secret (as a chat model
// may name what its summary opens with).
const dreamer: Dreamer = {
  id: 'sloppy-dreamer',
  async dream(input) {
    const named = input.memories.find((memory) => !/wombat|osprey/.test(memory.content));
    if (!named) return [];
    const content = `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`;
    return [{ content, category: 'pattern', sourceIds: [named.id] }];
  },
};

describe.each(serverEngineStores)(
  'a dream insight that names only some of what it was shown, on %s',
  (store: EngineStore) => {
    beforeAll(() => prepareEngineStore(store), 120_000);
    afterAll(() => closeEngineStores());

    const open = () =>
      openMaintenanceEngine({ store, start: '2026-03-02T08:00:00Z', dreamer, extractor: createOfflineExtractor() });

    it('follows a channel it quotes without naming it when that channel is made private', {
      timeout: 60_000,
    }, async () => {
      const { mneme } = await open();
      await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob', 'ann'] });
      await mneme.putChannel({ id: 'atrium', visibility: 'public', members: ['bob', 'carl'] });
      for (const [channelId, content] of [
        ['lobby', 'The staging database password rotates at quokkamidnight'],
        ['lobby', 'The staging API token rotates at quokkanoon'],
        ['atrium', 'The production vault key is wombat-seventeen'],
      ] as const) {
        await mneme.ingest({ channelId, sender: 'bob', senderName: 'Bob', content });
      }
      await mneme.whenIdle();
      await mneme.maintain({ tasks: 'dream' });
      const insight = (await mneme.list({ limit: 100 })).memories.find((memory) => memory.source === 'dream');
      if (!insight) throw new Error('the dream wrote no insight');
      expect(insight).toMatchObject({ scope: 'global' });
      expect(insight.content).toContain('wombat-seventeen');

      await mneme.putChannel({ id: 'atrium', visibility: 'private' });
      const eve = mneme.as({ kind: 'user', userId: 'eve', label: 'eve' });
      const { hits } = await eve.recall({ query: 'production vault key wombat', viewer: {} });
      expect(hits.map((hit) => hit.memory.content).filter((content) => content.includes('wombat'))).toEqual([]);
      await expect(eve.get({ id: insight.id, viewer: {} })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // The atrium's room reads all it quotes (the lobby is public): its members keep it there.
      expect(await mneme.get(insight.id)).toMatchObject({ scope: 'room', channelId: 'atrium' });
      await mneme.close();
    });

    it('goes with a purge of the user whose words it quotes without naming them', { timeout: 60_000 }, async () => {
      const engine = await openMaintenanceEngine({
        store,
        start: '2026-03-02T08:00:00Z',
        dreamer,
        policy: { ingest: { extraction: false, exchangeMemories: false } },
      });
      const { mneme } = engine;
      await mneme.putChannel({ id: 'hall', members: ['ann', 'bob', 'carl'] });
      // Three hours of talk in the hall, four messages an hour: three episodes; Ann speaks in the last hour only.
      for (let hour = 0; hour < 3; hour++) {
        for (let turn = 0; turn < 4; turn++) {
          const sender = turn % 2 === 1 ? 'carl' : hour === 2 ? 'ann' : 'bob';
          await mneme.ingest({
            channelId: 'hall',
            sender,
            content:
              sender === 'ann' ? `My locker code is osprey${turn} remember it` : `Noted, hour ${hour} turn ${turn}`,
            createdAt: new Date(START + hour * HOUR + turn * 60_000).toISOString(),
          });
        }
      }
      await mneme.whenIdle();
      engine.clock.set(START + 5 * HOUR);
      await mneme.maintain({ tasks: 'episodes' });
      await mneme.maintain({ tasks: 'dream' });
      const insight = (await mneme.list({ limit: 100 })).memories.find((memory) => memory.source === 'dream');
      if (!insight) throw new Error('the dream wrote no insight');
      expect(insight.content).toContain('osprey');

      await mneme.purgeUser('ann');
      const left = (await mneme.list({ limit: 500, archived: 'include' })).memories;
      expect(left.filter((memory) => memory.content.includes('osprey')).map((memory) => memory.id)).toEqual([]);
      await mneme.close();
    });
  },
);
