import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Mneme } from '../src/core/mneme.js';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import { createHttpApp } from '../src/http/http-app.js';
import {
  closeEngineStores,
  type EngineStore,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * Wt-attack19 (ADR 5, amended 2026-12-01: what was built from a purged user's words is seen by no one afterwards).
 * A purge deletes the user's messages, the memories citing them, the user's memories and those built on the user's
 * memories: one step of `source_ids` from the user's own. An episode (of no user) quotes every speaker of its window;
 * a dream insight on a room's episodes (of no user either) quotes them, and a second insight on that one quotes it:
 * neither cites the purged user's messages nor is built on the user's own memories, so both stayed, quoting the
 * purged user to the room's readers.
 */
const START = Date.parse('2026-03-02T08:00:00Z');
const HOUR = 60 * 60 * 1000;

// Sums up whatever it is given in one insight that quotes every memory (as a chat model's summary may).
const dreamer: Dreamer = {
  id: 'quoting-dreamer',
  async dream(input) {
    return [
      {
        content: `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`,
        category: 'pattern',
        sourceIds: input.memories.map((memory) => memory.id),
      },
    ];
  },
};

describe.each(serverEngineStores)(
  'a purge of a user whose words an insight on episodes quotes, on %s',
  (store: EngineStore) => {
    beforeAll(() => prepareEngineStore(store), 120_000);
    afterAll(() => closeEngineStores());

    it('leaves no memory quoting the purged user, and none that Carls key finds', { timeout: 60_000 }, async () => {
      const engine = await openMaintenanceEngine({
        store,
        start: '2026-03-02T08:00:00Z',
        dreamer,
        policy: { ingest: { extraction: false, exchangeMemories: false } },
      });
      const mneme: Mneme = engine.mneme;
      try {
        await mneme.apiKeys.create({ label: 'ops' });
        const carl = (await mneme.apiKeys.create({ label: 'carl', userId: 'carl' })).key;
        await mneme.putChannel({ id: 'hall', members: ['bob', 'carl'] });
        // Three hours of talk in the hall, four messages an hour: three episodes.
        for (let hour = 0; hour < 3; hour++) {
          for (let turn = 0; turn < 4; turn++) {
            const bob = turn % 2 === 0;
            await mneme.ingest({
              channelId: 'hall',
              sender: bob ? 'bob' : 'carl',
              senderName: bob ? 'Bob' : 'Carl',
              content: bob ? `My pager code is pangolin${hour}${turn} remember it` : `Noted, hour ${hour} turn ${turn}`,
              createdAt: new Date(START + hour * HOUR + turn * 60_000).toISOString(),
            });
          }
        }
        await mneme.whenIdle();
        engine.clock.set(START + 5 * HOUR);
        await mneme.maintain({ tasks: 'episodes' });
        const episodes = (await mneme.list({ scope: 'room', channelId: 'hall', limit: 100 })).memories;
        expect(episodes.filter((memory) => memory.source === 'episode').length).toBeGreaterThanOrEqual(3);
        await mneme.maintain({ tasks: 'dream' });
        // And a dream on the insights (as a chat model's later reflection on them).
        const insight = (await mneme.list({ scope: 'room', channelId: 'hall', limit: 100 })).memories.find(
          (memory) => memory.source === 'dream',
        );
        if (!insight) throw new Error('the dream wrote no insight');
        expect(insight.content).toContain('pangolin');
        const [deeper] = await engine.storage.memories.insert(
          [
            {
              content: `Pattern of patterns: ${insight.content}`,
              category: 'pattern',
              sector: 'semantic',
              scope: 'room',
              owner: 'room:hall',
              userId: null,
              channelId: 'hall',
              projectId: null,
              topicId: null,
              source: 'dream',
              importance: 0.6,
              pinned: false,
              sourceMessageIds: [],
              sourceIds: [insight.id],
              embedding: null,
            },
          ],
          { at: engine.clock.now(), actor: 'maintenance' },
          { sourcesMustExist: true },
        );
        if (!deeper) throw new Error('nothing stored');

        await mneme.purgeUser('bob');
        const left = (await mneme.list({ limit: 500, archived: 'include' })).memories;
        expect(left.filter((memory) => memory.content.includes('pangolin')).map((memory) => memory.id)).toEqual([]);
        const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
        const response = await app.request('/api/memories/search', {
          method: 'POST',
          headers: { authorization: `Bearer ${carl}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            query: 'pager code pangolin',
            topK: 50,
            viewer: { userId: 'carl', channelId: 'hall' },
          }),
        });
        expect(response.status).toBe(200);
        const { hits } = (await response.json()) as { hits: Array<{ memory: { content: string } }> };
        expect(hits.filter((hit) => hit.memory.content.includes('pangolin'))).toEqual([]);
      } finally {
        await mneme.close();
      }
    });
  },
);
