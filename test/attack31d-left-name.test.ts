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
 * goes by it now, when the rename labels it and when a memory made before it is written.
 */

const at = Date.parse('2026-03-02T10:00:00Z');

/**
 * Robert, called Bob, and Eve, called `eveName`, each send a message in channel c; the episode of the two, with the
 * text `text`, made then.
 */
async function episodeOfTwo(storage: Storage, eveName: string, text: string) {
  await storage.directory.putUser({ id: 'robert', displayName: 'Bob' }, at);
  await storage.directory.putUser({ id: 'eve', displayName: eveName }, at);
  const sent = await storage.messages.append(
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
  const episode = globalMemory(text, {
    scope: 'global',
    owner: ownerKey('global', {}),
    source: 'episode',
    sourceMessageIds: sent.map((message) => message.id),
  });
  return { ...episode, validFrom: at + 2 };
}

async function attack(storage: Storage): Promise<string> {
  const episode = await episodeOfTwo(storage, 'Eve', 'Eve asked who signs; Bob approved the budget');
  const [written] = await storage.memories.insert([episode], { at: at + 3, actor: 'tester' });
  await storage.directory.putUser({ id: 'eve', displayName: 'Bob' }, at + 4);
  await storage.directory.putUser({ id: 'eve', displayName: 'Eve' }, at + 5);
  const [now] = await storage.memories.get([written?.id ?? 0]);
  return now?.content ?? '';
}

/** The episode written after Eve left Bob's name: its text was made while she was called Bob too. */
async function madeWhileNamesakes(storage: Storage): Promise<string> {
  // The model read the two as labelled and wrote their labels.
  const text = 'Bob (robert) approved the budget after Bob (eve) asked';
  const episode = await episodeOfTwo(storage, 'Bob', text);
  await storage.directory.putUser({ id: 'eve', displayName: 'Eve' }, at + 3);
  const [written] = await storage.memories.insert([episode], { at: at + 4, actor: 'tester' });
  return written?.content ?? '';
}

onEachStore((open) => {
  it('keeps the label of a speaker in an episode written after a namesake left the name', async () => {
    const storage = await open();
    try {
      expect(await madeWhileNamesakes(storage)).toBe('Bob (robert) approved the budget after Bob (eve) asked');
    } finally {
      await storage.close();
    }
  }, 60_000);

  it('keeps the label of a speaker whose name another speaker took and left', async () => {
    const storage = await open();
    try {
      expect(await attack(storage)).toBe('Eve asked who signs; Bob (robert) approved the budget');
    } finally {
      await storage.close();
    }
  }, 60_000);
});
