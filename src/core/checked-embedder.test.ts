import { describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { checkedEmbedder, unusableVector } from './checked-embedder.js';
import { ErrorCode } from './errors.js';

/** A model that returns `bad` for a text containing "bad", a usable vector otherwise. */
function modelReturning(bad: number[]): EmbeddingModel {
  return {
    modelId: 'test:bad-vectors',
    dimensions: 4,
    embed: async (texts) => texts.map((text) => Float32Array.from(text.includes('bad') ? bad : [1, 0.5, 0.25, 0.125])),
  };
}

describe('vectors no index can rank by', () => {
  it('names a value beyond float32, NaN and a vector of zeros, and accepts the rest', () => {
    expect(unusableVector([1e39, 1, 1, 1])).toMatch(/position 0 is not a finite float32/);
    expect(unusableVector([1, Number.NaN, 1, 1])).toMatch(/position 1/);
    expect(unusableVector([0, 0, 0, 0])).toBe('every value is 0');
    expect(unusableVector([0, 0, 1e-30, 0])).toBeNull();
  });

  it.each([
    ['a value beyond float32', [1, 1, 1, 1e39]],
    ['NaN', [1, Number.NaN, 1, 1]],
    ['zeros', [0, 0, 0, 0]],
  ])('are MODEL_FAILED from the model (%s), and the memory is stored lexical-only', async (_, bad) => {
    // Plain arrays reach the check as they are: a Float32Array would already hold Infinity for 1e39.
    const raw: EmbeddingModel = { ...modelReturning(bad), embed: async (texts) => texts.map(() => bad as never) };
    await expect(checkedEmbedder(raw).embed(['x'], 'document')).rejects.toMatchObject({ code: ErrorCode.ModelFailed });

    const warnings: string[] = [];
    const mneme = await createMneme({
      path: ':memory:',
      embedder: modelReturning(bad),
      backfill: false,
      logger: { warn: (message) => warnings.push(message), info: () => {} },
    });
    try {
      const stored = await mneme.remember({ content: 'a bad vector comes back for this memory' });
      const fine = await mneme.remember({ content: 'this one embeds fine' });
      expect(warnings.join('\n')).toMatch(/unusable vector/);
      // The bad one waits for a re-embed; the other has its vector; both are found by their words.
      expect((await mneme.vectorStatus()).missing).toBe(1);
      const found = await mneme.recall({ query: 'bad vector memory' });
      expect(found.hits.map((hit) => hit.memory.id)).toContain(stored.id);
      expect(fine.id).toBeGreaterThan(stored.id);
    } finally {
      await mneme.close();
    }
  });
});
