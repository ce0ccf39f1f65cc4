import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * Recall adds up to 3 memories linked to its direct hits (`graph` matches): one statement finds the linked ids among
 * the viewer's active memories, a second reads their rows. The direct hits' rows are checked again when read (a
 * memory forgotten, or moved out of the viewer's owner keys, since its leg found it is not returned: session 9); the
 * linked ones were not. A forget, or an audience change, that another process commits between the two statements
 * reached the viewer: a memory recall never sees, or one she may no longer read.
 */

interface Pair {
  first: MaintenanceEngine;
  second: MaintenanceEngine;
  eveKey: string;
  launch: number;
  vault: number;
}

/** Two processes on one SQLite file: Bob and Eve in channel team, where a room memory about the vault is linked to one about the launch. */
async function openPair(path: string): Promise<Pair> {
  const first = await openMaintenanceEngine({ path });
  const second = await openMaintenanceEngine({ path });
  await first.mneme.putChannel({ id: 'team', members: ['bob', 'eve'] });
  const eveKey = (await first.mneme.apiKeys.create({ label: 'eve', userId: 'eve' })).key;
  const bob = first.mneme.as({ kind: 'user', userId: 'bob', label: 'bob app' });
  const launch = (await bob.remember({ content: 'The launch is on Friday', scope: 'room', channelId: 'team' })).id;
  const vault = (await bob.remember({ content: 'The vault code is 4471', scope: 'room', channelId: 'team' })).id;
  await first.storage.links.add(
    [{ sourceId: launch, targetId: vault, type: 'semantic', strength: 0.9 }],
    first.clock.now(),
  );
  return { first, second, eveKey, launch, vault };
}

/** Runs `write` in the other process once, right after the first process's recall has found the linked memories. */
function afterNeighbours(pair: Pair, write: () => Promise<unknown>): void {
  const links = pair.first.storage.links;
  const neighbours = links.neighbours.bind(links);
  let done = false;
  links.neighbours = async (ids, owners, limit) => {
    const found = await neighbours(ids, owners, limit);
    if (!done) {
      done = true;
      await write();
    }
    return found;
  };
}

async function eveSearches(pair: Pair): Promise<number[]> {
  const app = createHttpApp({ mneme: pair.first.mneme, apiKeys: pair.first.mneme.apiKeys, logError: () => {} });
  const response = await app.request('/api/memories/search', {
    method: 'POST',
    headers: { authorization: `Bearer ${pair.eveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'launch Friday', viewer: { channelId: 'team' } }),
  });
  expect(response.status).toBe(200);
  const found = (await response.json()) as { hits: Array<{ memory: { id: number } }> };
  return found.hits.map((hit) => hit.memory.id);
}

describe('a memory linked to a hit, forgotten or moved by another process while the recall reads it', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack31c-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('returns the linked memory when nothing changes it', async () => {
    const pair = await openPair(join(folder, 'still.db'));
    try {
      expect(await eveSearches(pair)).toEqual([pair.launch, pair.vault]);
    } finally {
      await pair.second.mneme.close();
      await pair.first.mneme.close();
    }
  });

  it('does not return a linked memory Bob forgot in the other process', async () => {
    const pair = await openPair(join(folder, 'forgot.db'));
    try {
      afterNeighbours(pair, () =>
        pair.second.mneme
          .as({ kind: 'user', userId: 'bob', label: 'bob app' })
          .forget({ id: pair.vault, viewer: { channelId: 'team' } }),
      );
      expect(await eveSearches(pair)).toEqual([pair.launch]);
      const [memory] = await pair.first.storage.memories.get([pair.vault]);
      expect(memory?.archivedAt).not.toBeNull();
    } finally {
      await pair.second.mneme.close();
      await pair.first.mneme.close();
    }
  });

  it('does not return a linked memory moved out of the room Eve reads', async () => {
    const pair = await openPair(join(folder, 'moved.db'));
    try {
      // An audience change of the other process (ADR 5) moves it into the room of another channel.
      afterNeighbours(pair, () =>
        pair.second.storage.memories.moveTo(
          pair.vault,
          { scope: 'room', channelId: 'vault-room' },
          { at: pair.second.clock.now(), actor: 'audience', reason: 'test move' },
        ),
      );
      expect(await eveSearches(pair)).toEqual([pair.launch]);
      const [memory] = await pair.first.storage.memories.get([pair.vault]);
      expect(memory?.channelId).toBe('vault-room');
    } finally {
      await pair.second.mneme.close();
      await pair.first.mneme.close();
    }
  });
});
