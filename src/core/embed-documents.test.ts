import { describe, expect, it } from 'vitest';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import { embedDocuments } from './embed-documents.js';

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (message: string) => warnings.push(message) } };
}

const brokenModel: EmbeddingModel = {
  modelId: 'broken',
  dimensions: 8,
  embed: async () => {
    throw new Error('connection refused');
  },
};

describe('embedDocuments', () => {
  it('returns a document vector of the model for each text, in order', async () => {
    const embedder = createFakeEmbeddingModel();
    const { logger } = recordingLogger();
    const embeddings = await embedDocuments({ embedder, logger }, ['Oz keeps bees', 'Ana plays the cello']);
    const [expected] = await createFakeEmbeddingModel().embed(['Ana plays the cello'], 'document');
    expect(embeddings.map((embedding) => embedding?.model)).toEqual(['fake-64', 'fake-64']);
    expect(embeddings[1]?.vector).toEqual(expected);
    expect(embedder.calls).toEqual([{ texts: ['Oz keeps bees', 'Ana plays the cello'], purpose: 'document' }]);
  });

  it('returns null for each text without a model', async () => {
    const { logger, warnings } = recordingLogger();
    expect(await embedDocuments({ embedder: null, logger }, ['one', 'two'])).toEqual([null, null]);
    expect(warnings).toEqual([]);
  });

  it('returns null for each text and says why when the model fails', async () => {
    const { logger, warnings } = recordingLogger();
    expect(await embedDocuments({ embedder: brokenModel, logger }, ['one', 'two'])).toEqual([null, null]);
    expect(warnings).toEqual(['embedding with broken failed, stored without a vector: connection refused']);
  });

  it('does not call the model for no texts', async () => {
    const embedder = createFakeEmbeddingModel();
    const { logger } = recordingLogger();
    expect(await embedDocuments({ embedder, logger }, [])).toEqual([]);
    expect(embedder.calls).toEqual([]);
  });
});
