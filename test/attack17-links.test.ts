import { expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Wt-attack17, an angle that held: linking joins a global memory to any owner's (ADR 5 keeps what follows
 * a link to the viewer's owners). A non-member whose recall finds the global memory gets no graph hit of
 * the private room's memory linked to it, and its links list no edge to it (not even its id).
 */
it("follows no link from a global memory into a room the reader is not in, and lists none of the room's links", async () => {
  const mneme = await createMneme({
    path: ':memory:',
    embedder: createFakeEmbeddingModel(),
    clock: createFixedClock('2026-03-02T10:00:00Z'),
    logger: { warn: () => {}, info: () => {} },
  });
  try {
    await mneme.putChannel({ id: 'vault', members: ['bob'] });
    const shared = await mneme.remember({ content: 'The walrus deploy runs on cluster nine every night' });
    const secret = await mneme.remember({
      content: 'The walrus deploy runs on cluster nine every night, key 7731',
      scope: 'room',
      channelId: 'vault',
    });
    await mneme.maintain({ tasks: ['link'] });
    const edges = await mneme.links(shared.id);
    expect(edges.some((link) => link.sourceId === secret.id || link.targetId === secret.id)).toBe(true);
    const asBob = await mneme
      .as({ kind: 'user', userId: 'bob', label: 'bob' })
      .recall({ query: 'walrus deploy cluster', viewer: { channelId: 'vault' } });
    expect(asBob.hits.map((hit) => hit.memory.id)).toEqual(expect.arrayContaining([shared.id, secret.id]));

    const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann' });
    const recalled = await ann.recall({ query: 'walrus deploy cluster' });
    expect(recalled.hits.map((hit) => hit.memory.id)).toEqual([shared.id]);
    expect(JSON.stringify(recalled)).not.toMatch(/7731/);
    expect(await ann.links(shared.id)).toEqual([]);
  } finally {
    await mneme.close();
  }
});
