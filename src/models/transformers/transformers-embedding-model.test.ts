import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../core/errors.js';
import { describeEmbeddingModelContract } from '../embedding-model.contract.js';
import {
  createTransformersEmbeddingModel,
  importTransformers,
  meanPool,
  type TransformersModule,
  type TransformersTensor,
} from './transformers-embedding-model.js';

/**
 * A tiny stand-in for `@huggingface/transformers` with real numbers: the tokenizer maps each word to
 * an id (0 is padding) and the "model" maps token id t to the vector [t, 1, -t] (padding tokens get
 * [100, 100, 100], so a pooling that forgot the mask would be far off).
 */
function tinyModule(hiddenSize = 3) {
  const loads: Array<{ kind: string; model: string; options: unknown }> = [];
  const calls: string[][] = [];
  const vocabulary = new Map<string, number>();
  const module: TransformersModule = {
    env: { localModelPath: '/models/', allowRemoteModels: true, cacheDir: null },
    AutoTokenizer: {
      async from_pretrained(model, options) {
        loads.push({ kind: 'tokenizer', model, options });
        return (texts) => {
          calls.push(texts);
          const ids = texts.map((text) =>
            text.split(/\s+/).map((word) => {
              if (!vocabulary.has(word)) vocabulary.set(word, vocabulary.size + 1);
              return vocabulary.get(word) ?? 0;
            }),
          );
          const width = Math.max(...ids.map((row) => row.length));
          const inputIds = new BigInt64Array(texts.length * width);
          const mask = new BigInt64Array(texts.length * width);
          for (const [index, row] of ids.entries()) {
            for (const [position, id] of row.entries()) {
              inputIds[index * width + position] = BigInt(id);
              mask[index * width + position] = 1n;
            }
          }
          return {
            input_ids: { data: inputIds, dims: [texts.length, width] },
            attention_mask: { data: mask, dims: [texts.length, width] },
          };
        };
      },
    },
    AutoModel: {
      async from_pretrained(model, options) {
        loads.push({ kind: 'model', model, options });
        const network = async (inputs: Record<string, TransformersTensor>) => {
          const ids = inputs.input_ids as TransformersTensor;
          const [batch = 0, width = 0] = ids.dims;
          const data = new Float32Array(batch * width * hiddenSize);
          for (let token = 0; token < batch * width; token++) {
            const id = Number(ids.data[token]);
            const vector = id === 0 ? [100, 100, 100] : [id, 1, -id];
            for (let slot = 0; slot < hiddenSize; slot++) data[token * hiddenSize + slot] = vector[slot] ?? 0;
          }
          return { last_hidden_state: { data, dims: [batch, width, hiddenSize] } };
        };
        return Object.assign(network, { config: { hidden_size: hiddenSize } });
      },
    },
  };
  return { module, loads, calls };
}

/** The tiny module with a model that loads but fails on every batch, as ONNX Runtime does on a broken file. */
function failingModule(): TransformersModule {
  const { module } = tinyModule();
  module.AutoModel.from_pretrained = async () =>
    Object.assign(
      async () => {
        throw new Error('ONNX Runtime: invalid input shape');
      },
      { config: { hidden_size: 3 } },
    );
  return module;
}

describeEmbeddingModelContract('local ONNX (a stand-in module, no weights)', {
  makeModel: () => createTransformersEmbeddingModel({ batchSize: 2, loadModule: async () => tinyModule().module }),
  failing: {
    makeModel: () => createTransformersEmbeddingModel({ loadModule: async () => failingModule() }),
    advice: 'set MNEME_EMBEDDER=none',
  },
});

function expectClose(actual: Float32Array | undefined, expected: number[]) {
  expect(actual).toBeDefined();
  expect(Array.from(actual ?? []).map((value) => Number(value.toFixed(5)))).toEqual(
    expected.map((value) => Number(value.toFixed(5))),
  );
}

describe('the local ONNX embedding model', () => {
  it('mean-pools token vectors over the attention mask and normalises them', async () => {
    const tiny = tinyModule();
    const model = await createTransformersEmbeddingModel({ loadModule: async () => tiny.module });
    expect(model).toMatchObject({ modelId: 'transformers:Xenova/all-MiniLM-L6-v2', dimensions: 3 });

    // "a b c" -> ids 1,2,3 -> mean [2, 1, -2]; "d" -> id 4 -> [4, 1, -4], padded with two tokens.
    const [first, second] = await model.embed(['a b c', 'd'], 'document');
    const length = (vector: number[]) => Math.hypot(...vector);
    expectClose(first, [2 / length([2, 1, -2]), 1 / length([2, 1, -2]), -2 / length([2, 1, -2])]);
    expectClose(second, [4 / length([4, 1, -4]), 1 / length([4, 1, -4]), -4 / length([4, 1, -4])]);
    expect(Math.hypot(...(second ?? []))).toBeCloseTo(1, 6);
  });

  it('runs texts in batches and applies the purpose prefix of e5 and nomic models', async () => {
    const tiny = tinyModule();
    const model = await createTransformersEmbeddingModel({
      model: 'Xenova/multilingual-e5-small',
      batchSize: 2,
      loadModule: async () => tiny.module,
    });
    await model.embed(['one', 'two', 'three'], 'query');
    expect(tiny.calls).toEqual([['query: one', 'query: two'], ['query: three']]);
    await model.embed(['four'], 'document');
    expect(tiny.calls[2]).toEqual(['passage: four']);
  });

  it('loads from a local folder without downloads, with the cache folder passed on', async () => {
    const tiny = tinyModule(4);
    const model = await createTransformersEmbeddingModel({
      model: 'my-minilm',
      localModelPath: '/srv/models',
      cacheDir: '/var/cache/mneme',
      loadModule: async () => tiny.module,
    });
    expect(model.dimensions).toBe(4);
    expect(tiny.module.env.localModelPath).toBe('/srv/models');
    expect(tiny.loads).toEqual([
      { kind: 'tokenizer', model: 'my-minilm', options: { cache_dir: '/var/cache/mneme', local_files_only: true } },
      { kind: 'model', model: 'my-minilm', options: { cache_dir: '/var/cache/mneme', local_files_only: true } },
    ]);
  });

  it('says where it looked when the model cannot be loaded', async () => {
    const tiny = tinyModule();
    tiny.module.AutoModel.from_pretrained = async () => {
      throw new Error('file onnx/model.onnx not found');
    };
    await expect(
      createTransformersEmbeddingModel({ allowDownloads: false, loadModule: async () => tiny.module }),
    ).rejects.toThrow(
      'could not load the ONNX model Xenova/all-MiniLM-L6-v2 in the cache (downloads are off): file onnx/model.onnx not found',
    );
  });

  it('pools a padded batch exactly by hand', () => {
    const hidden = { data: Float32Array.from([1, 2, 3, 4, 9, 9, 5, 6, 9, 9, 9, 9]), dims: [2, 3, 2] };
    const mask = { data: BigInt64Array.from([1n, 1n, 0n, 1n, 0n, 0n]), dims: [2, 3] };
    expect(meanPool(hidden, mask).map((vector) => Array.from(vector))).toEqual([
      [2, 3],
      [5, 6],
    ]);
  });

  const isInstalled = (() => {
    try {
      createRequire(import.meta.url).resolve('@huggingface/transformers');
      return true;
    } catch {
      return false;
    }
  })();

  it.skipIf(isInstalled)('says how to add @huggingface/transformers when it is not installed', async () => {
    const error = await importTransformers().catch((caught) => caught);
    expect(error.code).toBe(ErrorCode.ConfigInvalid);
    expect(error.message).toBe(
      'local embeddings need @huggingface/transformers, an optional dependency that is not installed: run `npm install @huggingface/transformers` next to mneme, or set MNEME_EMBEDDER=ollama or MNEME_EMBEDDER=none',
    );
    await expect(createTransformersEmbeddingModel()).rejects.toThrow(/npm install @huggingface\/transformers/);
  });
});
