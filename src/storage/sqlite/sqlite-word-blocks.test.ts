import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import type { WordBlockStore } from '../maintenance-store.js';

const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(): Promise<{ engine: MaintenanceEngine; blocks: WordBlockStore }> {
  const engine = await openMaintenanceEngine({ start: '2024-06-01T10:00:00.000Z' });
  engines.push(engine);
  const blocks = engine.storage.maintenance.wordBlocks;
  if (!blocks) throw new Error('SQLite keeps word blocks');
  return { engine, blocks };
}

describe('the SQLite word blocks', () => {
  it('gives back a written block as word ids of one vocabulary, a word the same id in every block', async () => {
    const { blocks } = await open();
    const generation = await blocks.generation();
    expect(
      await blocks.write(
        1,
        4,
        [
          { id: 1, owner: 'global', words: ['kestrel', 'hover'] },
          { id: 3, owner: 'user:oz', words: ['hover', 'verge', 'motorway'] },
        ],
        generation,
      ),
    ).toBe(true);
    expect(await blocks.write(5, 8, [{ id: 6, owner: 'global', words: ['motorway'] }], generation)).toBe(true);
    const { blocks: stored, maxWordId } = await blocks.read();
    const ids = await blocks.wordIds(['kestrel', 'hover', 'verge', 'motorway', 'heron'], generation);
    expect([...ids.keys()]).toEqual(['kestrel', 'hover', 'verge', 'motorway']);
    expect(maxWordId).toBe(Math.max(...ids.values()));
    const id = (word: string) => ids.get(word);
    expect(
      stored.map((block) => ({
        firstId: block.firstId,
        lastId: block.lastId,
        memories: [...block.ids].map((memory, at) => ({
          id: memory,
          owner: block.owners[block.ownerOf[at] ?? 0],
          words: [...block.words.subarray(block.starts[at], block.starts[at + 1])],
        })),
      })),
    ).toEqual([
      {
        firstId: 1,
        lastId: 4,
        memories: [
          { id: 1, owner: 'global', words: [id('kestrel'), id('hover')] },
          { id: 3, owner: 'user:oz', words: [id('hover'), id('verge'), id('motorway')] },
        ],
      },
      { firstId: 5, lastId: 8, memories: [{ id: 6, owner: 'global', words: [id('motorway')] }] },
    ]);
  });

  it('drops the block of a memory reworded, and refuses a block read before it', async () => {
    const { engine, blocks } = await open();
    const memory = await engine.mneme.remember({ content: 'kestrels hover above motorway verges' });
    const before = await blocks.generation();
    expect(await blocks.write(1, 4, [{ id: memory.id, owner: 'global', words: ['kestrels'] }], before)).toBe(true);
    await engine.mneme.remember({ content: 'herons stalk frogs along canals' });
    await engine.mneme.update({ id: memory.id, importance: 0.9 });
    expect(await blocks.generation()).toBe(before);
    expect((await blocks.read()).blocks).toHaveLength(1);
    await engine.mneme.update({ id: memory.id, content: 'kestrels hover above verges' });
    expect(await blocks.generation()).toBeGreaterThan(before);
    expect((await blocks.read()).blocks).toEqual([]);
    expect(await blocks.write(1, 4, [{ id: memory.id, owner: 'global', words: ['kestrels'] }], before)).toBe(false);
    expect((await blocks.read()).blocks).toEqual([]);
  });

  it('forgets the vocabulary and every block when a user is purged (their words go with them), and gives no id to a run that read before', async () => {
    const { engine, blocks } = await open();
    const memory = await engine.mneme.remember({ content: 'my locker code is 4471', scope: 'personal', userId: 'oz' });
    const generation = await blocks.generation();
    await blocks.write(1, 4, [{ id: memory.id, owner: 'user:oz', words: ['locker', 'code', '4471'] }], generation);
    expect((await blocks.read()).maxWordId).toBe(3);
    await engine.mneme.purgeUser('oz');
    expect(await blocks.read()).toEqual({ blocks: [], maxWordId: 0 });
    const after = await blocks.generation();
    expect(after).toBeGreaterThan(generation);
    expect(await blocks.wordIds(['locker', 'code', '4471'], after)).toEqual(new Map());
    // Ids start again from 1 (they do not grow by the vocabulary at every purge) ...
    await blocks.write(1, 4, [{ id: 9, owner: 'global', words: ['heron', 'locker'] }], after);
    expect(await blocks.wordIds(['heron', 'locker'], after)).toEqual(
      new Map([
        ['heron', 1],
        ['locker', 2],
      ]),
    );
    // ... so a run that read the blocks before the purge, whose ids meant other words, is told none.
    expect(await blocks.wordIds(['heron', 'locker'], generation)).toEqual(new Map());
  });
});
