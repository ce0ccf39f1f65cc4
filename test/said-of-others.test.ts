import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFixedClock } from '../src/testing.js';

// The offline extractor kept only first-person sentences (and technical ones): what a user said of the people in
// their life ("Mia is coming to visit in June", "Actually Mia changed jobs, she is a teacher now") or of a thing's
// code ("The wifi password at the cabin is bluefox99") gave no memory, and only the exchange chunk could answer for
// it. They are now the speaker's personal facts, found by recall.

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((mneme) => mneme.close()));
});

describe('what a user says of someone they name', () => {
  it('is remembered as their personal fact, recalled for them and for nobody else', async () => {
    const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2026-11-30T09:00:00Z') });
    engines.push(mneme);
    await mneme.putChannel({ id: 'family', visibility: 'private', members: ['oz', 'ann'] });
    const lines = [
      'My sister Mia lives in Lisbon and works as a nurse.',
      'Mia is coming to visit in June.',
      'Actually Mia changed jobs, she is a teacher now.',
      'The wifi password at the cabin is bluefox99.',
    ];
    for (const [index, content] of lines.entries()) {
      const createdAt = new Date(Date.parse('2024-03-01T10:00:00Z') + index * 3_600_000).toISOString();
      await mneme.ingest({ channelId: 'family', sender: 'oz', senderName: 'Oz', content, createdAt });
    }
    await mneme.whenIdle();
    const { memories } = await mneme.list({ limit: 100 });
    const said = memories.filter((memory) => memory.content.startsWith('Oz says'));
    expect(said.map((memory) => memory.content).sort()).toEqual([
      'Oz says Mia changed jobs, she is a teacher now.',
      'Oz says Mia is coming to visit in June (mentioned on 1 March 2024).',
      'Oz says the wifi password at the cabin is bluefox99.',
    ]);
    for (const memory of said) expect(memory).toMatchObject({ scope: 'personal', userId: 'oz' });

    const oz = { userId: 'oz', channelId: 'family' };
    const visit = await mneme.recall({ query: 'when is Mia coming to visit', viewer: oz });
    expect(visit.hits[0]?.memory.content).toContain('Mia is coming to visit in June');
    const job = await mneme.recall({ query: 'is Mia a teacher now', viewer: oz });
    expect(job.hits[0]?.memory.content).toContain('she is a teacher now');
    const wifi = await mneme.recall({ query: 'cabin wifi password', viewer: oz });
    expect(wifi.hits[0]?.memory.content).toBe('Oz says the wifi password at the cabin is bluefox99.');

    const ann = await mneme.recall({
      query: 'cabin wifi password Mia',
      viewer: { userId: 'ann', channelId: 'family' },
    });
    expect(ann.hits.map((hit) => hit.memory.content).filter((content) => content.startsWith('Oz says'))).toEqual([]);
  });
});
