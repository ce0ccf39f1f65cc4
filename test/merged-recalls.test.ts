import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { mergeRecalls, type RecallResult } from '../src/index.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

/** Two people in one room, as the offline extractor sees them: Ann's facts are hers, every turn is the room's. */
async function room(): Promise<Mneme> {
  const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T09:00:00Z') });
  engines.push(mneme);
  const lines: Array<[string, string, string]> = [
    ['ann', 'Ann', 'I adopted a greyhound called Pixel last spring'],
    ['bo', 'Bo', 'Nice! How is Pixel settling in?'],
    ['ann', 'Ann', 'Pixel sleeps all day on the sofa'],
    ['bo', 'Bo', 'I play the cello in a quartet on Sundays'],
  ];
  for (const [index, [sender, senderName, content]] of lines.entries()) {
    const createdAt = new Date(Date.parse('2024-03-01T10:00:00Z') + index * 60_000).toISOString();
    await mneme.ingest({ channelId: 'room-1', sender, senderName, content, createdAt });
  }
  await mneme.whenIdle();
  return mneme;
}

describe('recalls of several viewers merged into one ranking', () => {
  it('keeps a turn or the fact that stands in for it, never both, as one recall does', async () => {
    const mneme = await room();
    const query = 'What pet did Ann adopt?';
    const viewers = [
      { userId: 'ann', channelId: 'room-1' },
      { userId: 'bo', channelId: 'room-1' },
    ];
    const results: RecallResult[] = [];
    for (const viewer of viewers) results.push(await mneme.recall({ query, viewer, topK: 5, inspect: true }));
    const [asAnn, asBo] = results.map((result) => result.hits.map((hit) => hit.memory));
    // Ann's recall shows her fact in place of her turn; Bo cannot see her fact and gets the turn.
    const fact = asAnn?.find((memory) => memory.category !== 'exchange' && memory.content.includes('greyhound'));
    const turn = asBo?.find((memory) => memory.category === 'exchange' && memory.content.includes('greyhound'));
    expect(fact).toBeDefined();
    expect(turn).toBeDefined();
    expect(turn?.sourceMessageIds.every((id) => fact?.sourceMessageIds.includes(id))).toBe(true);

    const merged = mergeRecalls(results, 5).map((hit) => hit.memory.id);
    expect(merged).toContain(fact?.id);
    expect(merged).not.toContain(turn?.id);
    expect(new Set(merged).size).toBe(merged.length);
  });

  it('keeps each memory once, with its best hit, direct hits first, at most topK of them', async () => {
    const mneme = await room();
    const query = 'Pixel sofa cello quartet';
    const results: RecallResult[] = [];
    for (const userId of ['ann', 'bo']) {
      results.push(await mneme.recall({ query, viewer: { userId, channelId: 'room-1' }, topK: 2, inspect: true }));
    }
    const merged = mergeRecalls(results, 2);
    const direct = merged.filter((hit) => hit.match !== 'graph');
    expect(direct.length).toBeLessThanOrEqual(2);
    expect(merged.slice(0, direct.length)).toEqual(direct);
    const scores = direct.map((hit) => hit.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(() => mergeRecalls(results, 0)).toThrow(/topK must be at least 1/);
    expect(() => mergeRecalls(results, 2.5)).toThrow(/whole number/);
    for (const hit of direct) {
      const found = results.flatMap((result) => result.hits.filter((other) => other.memory.id === hit.memory.id));
      expect(hit.score).toBe(Math.max(...found.map((other) => other.score)));
    }
  });
});
