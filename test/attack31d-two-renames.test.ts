import { expect, it } from 'vitest';
import { ownerKey } from '../src/core/scope.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { Storage } from '../src/storage/storage.js';
import { onEachStore } from './attack31d-stores.fixture.js';

/**
 * Attack 31d: Eve, called Bob before any Bob is known, says she approves the wire; while extraction makes "Bob
 * approves the wire" she renames herself twice. Only the last name she left was kept (ADR 44, session 31), so the fact
 * was written with "Bob" unlabelled, and when the real Bob arrived it read as his. Every recent name left is kept.
 */

const at = Date.parse('2026-03-02T10:00:00Z');

async function attack(storage: Storage): Promise<string> {
  const { directory, memories } = storage;
  await directory.putUser({ id: 'eve', displayName: 'Bob' }, at);
  const fact = globalMemory('Bob approves the wire', {
    scope: 'personal',
    owner: ownerKey('personal', { userId: 'eve' }),
    userId: 'eve',
    source: 'extraction',
  });
  await directory.putUser({ id: 'eve', displayName: 'Xena' }, at + 2);
  await directory.putUser({ id: 'eve', displayName: 'Eve' }, at + 3);
  const [written] = await memories.insert([{ ...fact, validFrom: at + 1 }], { at: at + 4, actor: 'tester' });
  await directory.putUser({ id: 'robert', displayName: 'Bob' }, at + 5);
  const [now] = await memories.get([written?.id ?? 0]);
  return now?.content ?? '';
}

onEachStore((open) => {
  it('labels the name a user left before another rename in a memory whose text was made before both', async () => {
    const storage = await open();
    try {
      expect(await attack(storage)).toBe('Bob (eve) approves the wire');
    } finally {
      await storage.close();
    }
  }, 60_000);
});
