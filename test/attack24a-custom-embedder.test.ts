import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createFixedClock } from '../src/testing.js';

let mneme: Mneme | undefined;
afterEach(async () => {
  await mneme?.close();
  mneme = undefined;
});

const fake = createFakeEmbeddingModel({ dimensions: 8 });

/** An embedding model passed to createMneme that declares 8 dimensions and answers as `answer` says. */
function custom(answer: (vectors: Float32Array[]) => Float32Array[]): EmbeddingModel {
  return {
    modelId: 'custom:house',
    dimensions: 8,
    embed: async (texts, purpose) => answer(await fake.embed(texts, purpose)),
  };
}

async function open(embedder: EmbeddingModel, warnings: string[]): Promise<Mneme> {
  mneme = await createMneme({
    path: ':memory:',
    clock: createFixedClock(),
    embedder,
    backfill: false,
    logger: { warn: (text) => warnings.push(text), info: () => {} },
  });
  return mneme;
}

describe('attack24a: an embedding model of the library user that answers vectors of another length', () => {
  it('stores the memory without a vector, as any failure of the model does, rather than refusing the write', async () => {
    const warnings: string[] = [];
    const engine = await open(
      custom((vectors) => vectors.map((vector) => vector.slice(0, 4))),
      warnings,
    );
    const memory = await engine.remember({ content: 'Oz keeps bees on the roof' });
    expect(memory.content).toBe('Oz keeps bees on the roof');
    expect((await engine.vectorStatus()).missing).toBe(1);
    expect(warnings.join('\n')).toMatch(/stored without a vector: .*4 dimensions, expected 8/);
  });

  it('makes recall lexical and say so, rather than search by the wrong vector', async () => {
    const warnings: string[] = [];
    const engine = await open(
      custom((vectors) => vectors.map((vector) => vector.slice(0, 4))),
      warnings,
    );
    await engine.remember({ content: 'Oz keeps bees on the roof' });
    const recalled = await engine.recall({ query: 'bees' });
    expect(recalled.vectorLeg).toBe('model-failed');
    expect(recalled.hits.map((hit) => hit.memory.content)).toEqual(['Oz keeps bees on the roof']);
  });
});

describe('attack24a: an embedding model of the library user that answers fewer vectors than texts', () => {
  it('makes recall lexical and say so, rather than say its vector leg was used', async () => {
    const warnings: string[] = [];
    const engine = await open(
      custom((vectors) => vectors.slice(0, 1)),
      warnings,
    );
    await engine.remember({ content: 'Oz keeps bees on the roof' });
    // Over seven words: the query and its first five words are embedded together, two texts.
    const recalled = await engine.recall({ query: 'where does Oz keep all of his bees these days' });
    expect(recalled.vectorLeg).toBe('model-failed');
    expect(warnings.join('\n')).toMatch(/1 vectors? for 2 texts/);
  });
});
