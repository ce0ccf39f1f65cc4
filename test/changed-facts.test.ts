import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Memory } from '../src/core/types.js';
import { createFixedClock } from '../src/testing.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

/** An engine as a new user gets it: SQLite in memory, the offline extractor, no embedding model. */
async function open(): Promise<Mneme> {
  const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T09:00:00Z') });
  engines.push(mneme);
  return mneme;
}

/** Oz says each line in the channel, a day apart from 1 March 2024. */
async function ozSays(mneme: Mneme, channelId: string, ...lines: string[]): Promise<void> {
  for (const [index, content] of lines.entries()) {
    const createdAt = new Date(Date.parse('2024-03-01T10:00:00Z') + index * 86_400_000).toISOString();
    await mneme.ingest({ channelId, sender: 'oz', senderName: 'Oz', content, createdAt });
  }
  await mneme.whenIdle();
}

async function facts(mneme: Mneme): Promise<Memory[]> {
  const { memories } = await mneme.list({ limit: 100 });
  return memories.filter((memory) => memory.category !== 'exchange').reverse();
}

describe('facts about different people', () => {
  it('are stored apart however alike, and consolidation never merges them', async () => {
    const mneme = await open();
    await mneme.putChannel({ id: 'town-square', visibility: 'public' });
    await ozSays(
      mneme,
      'town-square',
      "Sam's team uses PostgreSQL 15",
      "Lee's team uses PostgreSQL 15",
      "Sam's team uses PostgreSQL 15",
      "Lee's team uses PostgreSQL 15",
    );
    const stored = await facts(mneme);
    expect(stored.map((memory) => memory.content)).toEqual([
      "Sam's team uses PostgreSQL 15.",
      "Lee's team uses PostgreSQL 15.",
    ]);
    for (const memory of stored) expect(await mneme.history(memory.id)).toHaveLength(1);
    await mneme.maintain({ tasks: ['consolidate'] });
    expect((await facts(mneme)).map((memory) => memory.id)).toEqual(stored.map((memory) => memory.id));
  });
});

describe('facts said with "we" or "our"', () => {
  it('stay in the room even in a public channel and when they name infrastructure', async () => {
    const mneme = await open();
    await mneme.putChannel({ id: 'town-square', visibility: 'public' });
    await ozSays(
      mneme,
      'town-square',
      'Our team uses PostgreSQL 15',
      'The staging server runs on port 8080 behind nginx',
    );
    expect((await facts(mneme)).map((memory) => [memory.content, memory.scope])).toEqual([
      ["Oz's team uses PostgreSQL 15.", 'room'],
      ['The staging server runs on port 8080 behind nginx.', 'global'],
    ]);
  });
});
