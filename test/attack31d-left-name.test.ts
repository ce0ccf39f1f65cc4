import { expect, it } from 'vitest';
import { ownerKey } from '../src/core/scope.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { Storage } from '../src/storage/storage.js';
import { onEachStore } from './attack31d-stores.fixture.js';

/**
 * Attack 31d: Eve renames herself to Bob's name and back. Taking it labels Bob's mentions with his id ("Bob (robert)")
 * in the memories that name him; leaving it labelled the name she left in every memory that names her, an episode
 * that cites her message and Bob's among them: "Bob (robert) approved the budget" became "Bob (eve) (robert) approved
 * the budget", Bob's approval read as hers. A name a user leaves is not theirs in a memory another of whose speakers
 * goes by it now.
 */

const at = Date.parse('2026-03-02T10:00:00Z');

async function attack(storage: Storage): Promise<string> {
  const { directory, messages, memories } = storage;
  await directory.putUser({ id: 'robert', displayName: 'Bob' }, at);
  await directory.putUser({ id: 'eve', displayName: 'Eve' }, at);
  const sent = await messages.append(
    [
      ['eve', 'Who signs the budget?'],
      ['robert', 'I approve the budget'],
    ].map(([senderId = '', content = ''], index) => ({
      channelId: 'c',
      senderId,
      role: 'user' as const,
      content,
      topicId: null,
      createdAt: at + 1 + index,
    })),
  );
  const episode = globalMemory('Eve asked who signs; Bob approved the budget', {
    scope: 'global',
    owner: ownerKey('global', {}),
    source: 'episode',
    sourceMessageIds: sent.map((message) => message.id),
  });
  const [written] = await memories.insert([{ ...episode, validFrom: at + 2 }], { at: at + 3, actor: 'tester' });
  await directory.putUser({ id: 'eve', displayName: 'Bob' }, at + 4);
  await directory.putUser({ id: 'eve', displayName: 'Eve' }, at + 5);
  const [now] = await memories.get([written?.id ?? 0]);
  return now?.content ?? '';
}

onEachStore((open) => {
  it('keeps the label of a speaker whose name another speaker took and left', async () => {
    const storage = await open();
    try {
      expect(await attack(storage)).toBe('Eve asked who signs; Bob (robert) approved the budget');
    } finally {
      await storage.close();
    }
  }, 60_000);
});
