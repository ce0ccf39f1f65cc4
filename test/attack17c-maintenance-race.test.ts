import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';

/**
 * Wt-attack17c: maintenance builds a memory from memories of one owner and writes it in that owner after a
 * model answered (a dreamer, a merger). An audience change that moved those memories out of the owner
 * meanwhile (ADR 5, 2026-12-03) found nothing built on them yet; the new memory must not then be written in
 * the owner they left, for everyone who could not read their channel.
 */
describe('a maintenance write built on memories that moved out of its owner while the model answered', () => {
  let mneme: Mneme | undefined;
  afterEach(async () => {
    await mneme?.close();
    mneme = undefined;
  });
  const narrow = () => mneme?.putChannel({ id: 'lobby', visibility: 'private' });

  it('writes no global dream insight on facts of a channel made private while the dreamer reflected', async () => {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      dreamer: {
        id: 'narrowing-dreamer',
        async dream(input) {
          if (input.scope === 'global') await narrow();
          return [
            {
              content: `Pattern: ${input.memories.map((memory) => memory.content).join(' / ')}`,
              category: 'pattern',
              sourceIds: input.memories.map((memory) => memory.id),
            },
          ];
        },
      },
      logger: { warn: () => {}, info: () => {} },
    });
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
    for (const content of [
      'The staging database password rotates at quokkamidnight',
      'The staging API token rotates at quokkanoon',
      'The staging VPN key rotates at quokkadawn',
    ]) {
      await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content });
    }
    await mneme.whenIdle();
    expect((await mneme.list({ scope: 'global', limit: 100 })).memories).toHaveLength(3);
    await mneme.maintain({ tasks: 'dream' });
    const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann app' });
    expect((await ann.list({ limit: 100 })).memories.map((memory) => memory.content)).toEqual([]);
    expect((await mneme.list({ scope: 'global', limit: 100 })).memories).toEqual([]);
  });

  it('merges no global facts of a channel made private while the merger wrote their merge', async () => {
    mneme = await createMneme({
      path: ':memory:',
      embedder: createFakeEmbeddingModel(),
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      merger: {
        id: 'narrowing-merger',
        async merge(input) {
          await narrow();
          return { content: input.memories.map((memory) => memory.content).join(' / ') };
        },
      },
      logger: { warn: () => {}, info: () => {} },
    });
    // Extraction keeps both facts (it would fold a restatement into the first); consolidation merges them.
    await mneme.setPolicy({ settings: { 'ingest.similarityThreshold': 0.99 } });
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
    for (const content of [
      'The staging database password rotates at quokkamidnight',
      'The staging database password rotates at quokkamidnight every week',
    ]) {
      await mneme.ingest({ channelId: 'lobby', sender: 'bob', senderName: 'Bob', content });
    }
    await mneme.whenIdle();
    expect((await mneme.list({ scope: 'global', limit: 100 })).memories).toHaveLength(2);
    await mneme.maintain({ tasks: 'consolidate' });
    const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann app' });
    expect((await ann.list({ limit: 100 })).memories.map((memory) => memory.content)).toEqual([]);
    expect((await mneme.list({ scope: 'global', limit: 100 })).memories).toEqual([]);
  });
});
