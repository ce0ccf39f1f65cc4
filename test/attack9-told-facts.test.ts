import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { ExtractedFact, FactExtractor } from '../src/core/ports/fact-extractor.js';
import { MAX_CONTENT_CHARS } from '../src/core/schemas.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createOfflineExtractor, extractFacts, factsWithoutKnown } from '../src/models/offline/offline-extractor.js';
import { createFixedClock } from '../src/testing.js';

const silent = { warn: () => {}, info: () => {} };
let open: Mneme[] = [];
afterEach(async () => {
  await Promise.all(open.map((mneme) => mneme.close()));
  open = [];
});

async function engine(extractor: FactExtractor) {
  const mneme = await createMneme({
    path: ':memory:',
    clock: createFixedClock(Date.parse('2024-06-15T12:00:00.000Z')),
    embedder: createFakeEmbeddingModel(),
    logger: silent,
    extractor,
    policy: { ingest: { exchangeMemories: false } },
  });
  open.push(mneme);
  return mneme;
}

async function extracted(mneme: Mneme) {
  const { memories } = await mneme.list({ limit: 500 });
  return memories.filter((memory) => memory.sourceMessageIds.length > 0);
}

/**
 * A custom extractor (a user's code) whose `extract` answers valid facts, and whose `withoutRelated`
 * answers what `extract` would have been refused for (ExtractedFactsSchema: importance clamped to
 * [0, 1], content trimmed and at most 10,000 characters, at most 20 facts). `extract`'s answer is validated (runExtractor's safeParse); the told one is not.
 */
function lyingExtractor(told: (facts: readonly ExtractedFact[]) => ExtractedFact[]): FactExtractor {
  return {
    id: 'custom',
    relatedOnlyRemoves: true,
    async extract(input) {
      if (input.speaker.userId !== 'oz')
        return [{ content: 'Ann lives in Oslo now.', category: 'fact', importance: 0.5, scope: 'personal' }];
      return [{ content: 'Oz keeps a parrot called Ink.', category: 'fact', importance: 0.5, scope: 'personal' }];
    },
    withoutRelated: (facts) => told(facts),
  };
}

describe('attack9: the answer told by withoutRelated', () => {
  it('is validated as extract()’s answer is: an importance of 7 is clamped to 1, not retried for ever (the channel stalls)', async () => {
    const mneme = await engine(lyingExtractor((facts) => facts.map((fact) => ({ ...fact, importance: 7 }))));
    await mneme.remember({ content: 'Oz keeps a zebra called Quill.', scope: 'personal', userId: 'oz' });
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I keep a parrot called Ink and a zebra.',
    });
    await mneme.whenIdle();
    // A later message of the channel whose facts come from extract() alone (no related memory: nothing told).
    await mneme.ingest({
      channelId: 'c',
      sender: 'ann',
      senderName: 'Ann',
      content: 'Something entirely different here.',
    });
    await mneme.whenIdle();
    // extract()'s answer with an importance of 7 is clamped to 1 (ImportanceSchema) and stored; the told one goes
    // unparsed to the insert, which fails (CHECK importance BETWEEN 0 AND 1) at every catch-up pass: the
    // watermark never moves and the channel's later messages are never extracted.
    const facts = await extracted(mneme);
    expect(facts.some((memory) => memory.userId === 'ann')).toBe(true);
  });

  it('(control) extract()’s own answer with an importance of 7 is clamped to 1 and the channel goes on', async () => {
    const mneme = await engine({
      id: 'custom-plain',
      relatedOnlyRemoves: true,
      async extract(input) {
        if (input.speaker.userId !== 'oz')
          return [{ content: 'Ann lives in Oslo now.', category: 'fact', importance: 0.5, scope: 'personal' }];
        return [{ content: 'Oz keeps a parrot called Ink.', category: 'fact', importance: 7, scope: 'personal' }];
      },
    });
    await mneme.remember({ content: 'Oz keeps a zebra called Quill.', scope: 'personal', userId: 'oz' });
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I keep a parrot called Ink and a zebra.',
    });
    await mneme.whenIdle();
    await mneme.ingest({
      channelId: 'c',
      sender: 'ann',
      senderName: 'Ann',
      content: 'Something entirely different here.',
    });
    await mneme.whenIdle();
    const facts = await extracted(mneme);
    expect(facts.map((memory) => [memory.userId, memory.importance]).sort()).toEqual([
      ['ann', 0.5],
      ['oz', 1],
    ]);
  });

  it('is validated as extract()’s answer is: content over MAX_CONTENT_CHARS is not stored', async () => {
    const mneme = await engine(
      lyingExtractor((facts) =>
        facts.map((fact) => ({ ...fact, content: `Oz keeps a parrot called ${'Ink '.repeat(3000)}.` })),
      ),
    );
    await mneme.remember({ content: 'Oz keeps a zebra called Quill.', scope: 'personal', userId: 'oz' });
    await mneme.ingest({
      channelId: 'c',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I keep a parrot called Ink and a zebra.',
    });
    await mneme.whenIdle();
    for (const memory of await extracted(mneme)) expect(memory.content.length).toBeLessThanOrEqual(MAX_CONTENT_CHARS);
  });

  it('the offline extractor: told equals a second run when a related memory differs only by case, and not when by punctuation', () => {
    const input = {
      speaker: { userId: 'oz', displayName: 'Oz' },
      channelId: 'c',
      userMessage: 'I keep a zebra called Quill. I also keep a parrot called Ink. I live in Oslo.',
      assistantReply: null,
      related: [] as Array<{ id: number; content: string }>,
    };
    const unrelated = extractFacts(input);
    for (const related of [
      [{ id: 1, content: 'OZ KEEPS A ZEBRA CALLED QUILL.' }],
      [{ id: 1, content: 'Oz keeps a zebra called Quill' }],
      [
        { id: 1, content: 'Oz lives in Oslo.' },
        { id: 2, content: 'oz also keeps a parrot called ink.' },
      ],
      [
        { id: 1, content: 'Oz keeps a zebra called Quill.' },
        { id: 1, content: 'Oz keeps a zebra called Quill.' },
      ],
    ]) {
      expect(factsWithoutKnown(unrelated, related)).toEqual(extractFacts({ ...input, related }));
    }
    expect(createOfflineExtractor().withoutRelated).toBe(factsWithoutKnown);
  });
});
