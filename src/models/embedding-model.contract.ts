import { describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { EmbeddingModel, EmbeddingPurpose } from './embedding-model.js';

/** How a test file hands its embedding model to the contract. */
export interface EmbeddingModelContractSubject {
  /** A working model; called once per test. Give it a small batch size so that batching is exercised. */
  makeModel(): EmbeddingModel | Promise<EmbeddingModel>;
  /** A model whose provider fails, and the advice its error must give; left out for a model that cannot fail. */
  failing?: { makeModel(): EmbeddingModel | Promise<EmbeddingModel>; advice: string };
}

const texts = [
  'Oz keeps bees',
  'Ana plays the cello',
  'the team ships on Fridays',
  'Lyon is in France',
  'kestrel is the staging server',
];

/**
 * The behaviour every EmbeddingModel must have. Call it from an adapter's test file with a function
 * that makes the model (against a loopback server or an in-process stand-in, never the internet).
 */
export function describeEmbeddingModelContract(name: string, subject: EmbeddingModelContractSubject): void {
  describe(`${name}: embedding model contract`, () => {
    it('has a model id and a positive whole number of dimensions', async () => {
      const model = await subject.makeModel();
      expect(model.modelId).toMatch(/\S/);
      expect(Number.isInteger(model.dimensions) && model.dimensions > 0).toBe(true);
    });

    it.each<EmbeddingPurpose>(['document', 'query'])(
      'returns one vector of its dimensions per text, in order, for %s texts',
      async (purpose) => {
        const model = await subject.makeModel();
        const vectors = await model.embed(texts, purpose);
        expect(vectors).toHaveLength(texts.length);
        for (const [index, vector] of vectors.entries()) {
          expect(vector).toBeInstanceOf(Float32Array);
          expect(vector).toHaveLength(model.dimensions);
          expect(vector.every(Number.isFinite)).toBe(true);
          const [alone] = await model.embed([texts[index] ?? ''], purpose);
          expect(Array.from(vector)).toEqual(Array.from(alone ?? []).map((value) => expect.closeTo(value, 5)));
        }
        expect(new Set(vectors.map((vector) => vector.join())).size).toBe(texts.length);
      },
    );

    it('returns no vectors for no texts', async () => {
      const model = await subject.makeModel();
      expect(await model.embed([], 'document')).toEqual([]);
    });

    it("rejects with the signal's reason when the signal has aborted", async () => {
      const model = await subject.makeModel();
      const reason = new Error('shutting down');
      await expect(model.embed(texts, 'document', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    });

    const { failing } = subject;
    if (!failing) return;
    it('turns a provider failure into MODEL_FAILED with what to do', async () => {
      const model = await failing.makeModel();
      const error = await model.embed(texts, 'query').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(MnemeError);
      expect(error).toMatchObject({ code: ErrorCode.ModelFailed, message: expect.stringContaining(failing.advice) });
    });
  });
}
