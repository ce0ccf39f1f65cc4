import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dreamer } from '../src/core/ports/dreamer.js';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Wt-attack27a, identifiers: the dream pass groups memories by owner and user. It joined the two with a space, so the
 * room memories of channel `ops ann` written by user `lee` and those of channel `ops` written by user `ann lee` fell
 * into one group (`room:ops ann lee`), were given to the dreamer together, and its insight was written in the first
 * memory's room. Lee, with a real key, names his channel so that Ann's private room is dreamed with it.
 */
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
}, 120_000);
afterAll(async () => {
  await closeEngineStores();
});

describe.each(engineStores.map((store) => ({ store })))('on $store', ({ store }: { store: EngineStore }) => {
  it('never gives the dreamer the memories of two rooms whose owner and user read alike when joined', async () => {
    const given: Array<readonly number[]> = [];
    // Sums up whatever it is given, resting the insight on the first memory (a model picks the evidence it cites).
    const dreamer: Dreamer = {
      id: 'summing-dreamer',
      async dream(input) {
        given.push(input.memories.map((memory) => memory.id));
        const [first] = input.memories;
        if (!first) return [];
        return [
          {
            content: `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`,
            category: 'pattern',
            sourceIds: [first.id],
          },
        ];
      },
    };
    const world = await openMaintenanceEngine({ store, dreamer });
    const { mneme } = world;
    try {
      await mneme.putChannel({ id: 'ops', visibility: 'private', members: ['ann lee'] });
      await mneme.putChannel({ id: 'ops ann', visibility: 'private', members: ['lee'] });
      const keys = {
        ann: (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann lee' })).key,
        lee: (await mneme.apiKeys.create({ label: 'lee app', userId: 'lee' })).key,
      };
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const send = async (key: string, method: string, path: string, body?: unknown) => {
        const response = await app.request(path, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, json: (await response.json()) as Record<string, unknown> };
      };
      const owners = new Map<number, string>();
      const remember = async (key: string, channelId: string, content: string) => {
        const stored = await send(key, 'POST', '/api/memories', { scope: 'room', channelId, content });
        expect(stored.status, content).toBe(201);
        owners.set(stored.json.id as number, channelId);
      };
      await remember(keys.lee, 'ops ann', 'The lee desk plant needs water on Mondays');
      await remember(keys.lee, 'ops ann', 'The lee desk lamp is broken');
      await remember(keys.lee, 'ops ann', 'The lee desk drawer sticks');
      await remember(keys.ann, 'ops', 'The payroll server root password is tangerine-42');
      await remember(keys.ann, 'ops', 'The payroll export runs at midnight');
      await remember(keys.ann, 'ops', 'The payroll backups live in the north vault');

      await mneme.maintain({ tasks: 'dream' });

      const seen = await send(keys.lee, 'GET', `/api/memories?channelId=${encodeURIComponent('ops ann')}&limit=100`);
      expect(seen.status).toBe(200);
      const contents = (seen.json.memories as Memory[]).map((memory) => memory.content);
      expect(contents.join('\n')).not.toContain('tangerine-42');
      expect(contents.join('\n')).not.toContain('payroll');
      for (const ids of given) {
        expect(new Set(ids.map((id) => owners.get(id))).size, `one dream of ${ids.join(', ')}`).toBe(1);
      }
    } finally {
      await mneme.close();
    }
  });
});
