import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../testing.js';
import { ErrorCode } from './errors.js';
import type { ReembedProgress } from './reembed.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-reembed-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const newFile = () => join(folder, `reembed-${files++}.db`);
const clock = createFixedClock();
const quiet = { warn: () => {} };

const contents = [
  'Oz keeps bees on the roof',
  'Ana plays the cello on Sundays',
  'the staging server is called kestrel',
  'Oz is allergic to peanuts',
  'the team ships on Fridays',
];

/** A file database holding `contents`, embedded with `embedder` (or without vectors). */
async function databaseWith(embedder: EmbeddingModel | 'none'): Promise<{ path: string; ids: number[] }> {
  const path = newFile();
  const mneme = await createMneme({ path, clock, embedder, backfill: false, logger: quiet });
  const ids: number[] = [];
  for (const content of contents) ids.push((await mneme.remember({ content })).id);
  await mneme.close();
  return { path, ids };
}

/** An embedding model that fails while `isDown` is true, to stand in for a stopped server. */
function flakyModel(base: EmbeddingModel, failures: { isDown: boolean; calls: number }): EmbeddingModel {
  return {
    modelId: base.modelId,
    dimensions: base.dimensions,
    async embed(texts, purpose, options) {
      failures.calls++;
      if (failures.isDown) throw new Error('Ollama is not reachable');
      return base.embed(texts, purpose, options);
    },
  };
}

/** Every vector the index holds belongs to its one model, and every memory claiming a vector has one. */
async function expectOneModelInIndex(path: string) {
  const storage = createSqliteStorage({ path });
  try {
    const index = await storage.vectorIndex();
    const page = await storage.memories.list({ archived: 'exclude', limit: 100, offset: 0, owners: null });
    for (const memory of page.memories) {
      if (memory.embeddingModel === null) continue;
      expect(memory.embeddingModel).toBe(index?.model);
      const hits = await storage.memories.searchVector({
        vector: new Float32Array(index?.dimensions ?? 0).fill(0.1),
        model: memory.embeddingModel,
        owners: null,
        limit: 100,
      });
      expect(hits.map((hit) => hit.id)).toContain(memory.id);
    }
  } finally {
    await storage.close();
  }
}

describe('re-embedding', () => {
  it('gives memories stored while no model was available a vector, in batches, with progress', async () => {
    const { path, ids } = await databaseWith('none');
    const model = createFakeEmbeddingModel({ dimensions: 32 });
    const mneme = await createMneme({ path, clock, embedder: model, backfill: false, logger: quiet });
    expect(await mneme.vectorStatus()).toEqual({
      embedder: model.modelId,
      index: { model: model.modelId, dimensions: 32 },
      missing: 5,
      search: { available: true, reason: null },
    });
    const progress: ReembedProgress[] = [];
    const report = await mneme.reembed({ batchSize: 2, onProgress: (step) => progress.push(step) });
    expect(report).toEqual({ model: model.modelId, total: 5, done: 5, embedded: 5, failed: 0 });
    expect(progress.map((step) => `${step.done}/${step.total}`)).toEqual(['0/5', '2/5', '4/5', '5/5']);
    expect(model.calls.map((call) => [call.texts.length, call.purpose])).toEqual([
      [2, 'document'],
      [2, 'document'],
      [1, 'document'],
    ]);
    expect((await mneme.list()).memories.map((memory) => memory.embeddingModel)).toEqual(ids.map(() => model.modelId));
    expect((await mneme.vectorStatus()).missing).toBe(0);
    expect((await mneme.reembed()).total).toBe(0);
    await mneme.close();
    await expectOneModelInIndex(path);
  });

  it('re-embeds after a model change, and meanwhile never compares vectors of two models', async () => {
    const first = createFakeEmbeddingModel({ dimensions: 32, modelId: 'model-a' });
    const { path, ids } = await databaseWith(first);
    const second = createFakeEmbeddingModel({ dimensions: 32, modelId: 'model-b' });
    const mneme = await createMneme({ path, clock, embedder: second, backfill: false, logger: quiet });

    // The model change emptied the index: nothing has a vector, and model-a's vectors are gone.
    expect(await mneme.vectorStatus()).toMatchObject({ index: { model: 'model-b' }, missing: 5 });
    const storage = createSqliteStorage({ path });
    const [queryVector] = await first.embed(['Oz keeps bees'], 'query');
    expect(
      await storage.memories.searchVector({
        vector: queryVector ?? new Float32Array(),
        model: 'model-a',
        owners: null,
        limit: 10,
      }),
    ).toEqual([]);

    // Stop after the first batch of two: a partial re-embed.
    const controller = new AbortController();
    await expect(
      mneme.reembed({
        batchSize: 2,
        signal: controller.signal,
        onProgress: (step) => {
          if (step.done === 2) controller.abort(new Error('stopped'));
        },
      }),
    ).rejects.toThrow('stopped');
    const embedded = (await mneme.list()).memories.filter((memory) => memory.embeddingModel === 'model-b');
    expect(embedded.map((memory) => memory.id).sort()).toEqual(ids.slice(0, 2));

    // Vector search sees only model-b vectors; a model-a query finds nothing; recall finds the rest lexically.
    const [secondQuery] = await second.embed(['Oz is allergic to peanuts'], 'query');
    const vectorHits = await storage.memories.searchVector({
      vector: secondQuery ?? new Float32Array(),
      model: 'model-b',
      owners: null,
      limit: 10,
    });
    expect(vectorHits.map((hit) => hit.id).sort()).toEqual(ids.slice(0, 2));
    const recalled = await mneme.recall({ query: 'peanuts allergic' });
    expect(recalled.hits[0]).toMatchObject({ memory: { id: ids[3], embeddingModel: null }, match: 'fts' });
    await storage.close();

    // The next run resumes where the first stopped.
    expect(await mneme.reembed({ batchSize: 2 })).toMatchObject({ total: 3, embedded: 3 });
    expect((await mneme.list()).memories.every((memory) => memory.embeddingModel === 'model-b')).toBe(true);
    const recalledAgain = await mneme.recall({ query: 'peanuts allergic' });
    expect(recalledAgain.hits[0]).toMatchObject({ memory: { id: ids[3] }, match: 'hybrid' });
    await mneme.close();
    await expectOneModelInIndex(path);
  });

  it('re-embeds in the background when opened with a new model, and close stops it', async () => {
    const { path } = await databaseWith(createFakeEmbeddingModel({ dimensions: 16, modelId: 'old' }));
    const model = createFakeEmbeddingModel({ dimensions: 16, modelId: 'new' });
    const notices: string[] = [];
    const mneme = await createMneme({
      path,
      clock,
      embedder: model,
      logger: { warn: () => {}, info: (text) => notices.push(text) },
    });
    await expect.poll(async () => (await mneme.vectorStatus()).missing).toBe(0);
    expect(notices).toEqual([
      're-embedding 5 memories with new in the background',
      're-embedded 5 memories with new (0 failed)',
    ]);
    await mneme.close();

    const blocked: EmbeddingModel = {
      modelId: 'blocked',
      dimensions: 16,
      embed: (_texts, _purpose, options) =>
        new Promise((_resolve, reject) => {
          if (options?.signal?.aborted) reject(options.signal.reason);
          options?.signal?.addEventListener('abort', () => reject(options.signal?.reason));
        }),
    };
    const waiting = await createMneme({ path, clock, embedder: blocked, logger: quiet });
    await waiting.close();
    const reopened = await createMneme({ path, clock, embedder: 'none', logger: quiet });
    expect(await reopened.vectorStatus()).toMatchObject({ index: { model: 'blocked' }, missing: 5 });
    await reopened.close();
  });

  it('gives a memory stored while the model was down its vector in the background once the model is back', async () => {
    const failures = { isDown: false, calls: 0 };
    const model = flakyModel(createFakeEmbeddingModel({ dimensions: 16 }), failures);
    const path = newFile();
    const mneme = await createMneme({ path, clock, embedder: model, backfillEveryMs: 50, logger: quiet });
    try {
      await mneme.remember({ content: 'Oz keeps bees on the roof' });
      failures.isDown = true;
      await mneme.remember({ content: 'Ana plays the cello on Sundays' });
      expect((await mneme.vectorStatus()).missing).toBe(1);
      // Passes while the model is down find it and fail; it stays without a vector, nothing else is touched.
      const before = failures.calls;
      await expect.poll(() => failures.calls).toBeGreaterThan(before + 1);
      expect((await mneme.vectorStatus()).missing).toBe(1);
      failures.isDown = false;
      await expect.poll(async () => (await mneme.vectorStatus()).missing).toBe(0);
    } finally {
      await mneme.close();
    }
    // Closed, no pass runs any more.
    const calls = failures.calls;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(failures.calls).toBe(calls);
    await expectOneModelInIndex(path);
  });

  it('refuses a backfillEveryMs that is not a whole number of milliseconds setInterval can wait', async () => {
    for (const backfillEveryMs of [-1, 1.5, 2 ** 31, Number.NaN]) {
      await expect(createMneme({ path: ':memory:', backfillEveryMs })).rejects.toMatchObject({
        code: ErrorCode.ConfigInvalid,
        message: expect.stringContaining('backfillEveryMs must be a whole number of milliseconds'),
      });
    }
  });

  it('stops after three failures in a row, keeps what was written, and resumes once the model works', async () => {
    const { path } = await databaseWith('none');
    const failures = { isDown: false, calls: 0 };
    const model = flakyModel(createFakeEmbeddingModel({ dimensions: 16 }), failures);
    const warnings: string[] = [];
    const mneme = await createMneme({
      path,
      clock,
      embedder: model,
      backfill: false,
      logger: { warn: (text) => warnings.push(text) },
    });
    await mneme
      .reembed({
        batchSize: 2,
        onProgress: (step) => {
          if (step.done === 2) failures.isDown = true;
        },
      })
      .then(
        () => expect.unreachable('the run should stop'),
        (error) => {
          expect(error.code).toBe(ErrorCode.ModelFailed);
          expect(error.message).toMatch(
            /^re-embedding with fake-16 stopped with 2 of 5 memories embedded: Ollama is not reachable; run it again/,
          );
        },
      );
    // Batch calls failed, then three memories one by one (two of the second batch, one of the third): three in a row.
    expect(warnings).toHaveLength(3);
    expect((await mneme.vectorStatus()).missing).toBe(3);
    failures.isDown = false;
    expect(await mneme.reembed()).toMatchObject({ total: 3, embedded: 3, failed: 0 });
    await mneme.close();
  });

  it('skips a text the model refuses and embeds the rest of its batch', async () => {
    const { path } = await databaseWith('none');
    const base = createFakeEmbeddingModel({ dimensions: 16 });
    const picky: EmbeddingModel = {
      modelId: base.modelId,
      dimensions: 16,
      async embed(texts, purpose) {
        if (texts.some((text) => text.includes('kestrel'))) throw new Error('input too long');
        return base.embed(texts, purpose);
      },
    };
    const mneme = await createMneme({ path, clock, embedder: picky, backfill: false, logger: quiet });
    expect(await mneme.reembed({ batchSize: 5 })).toMatchObject({ total: 5, embedded: 4, failed: 1 });
    expect(
      (await mneme.list()).memories.find((memory) => memory.content.includes('kestrel'))?.embeddingModel,
    ).toBeNull();
    await mneme.close();
  });

  it('refuses to re-embed without an embedding model', async () => {
    const mneme = await createMneme({ path: ':memory:', clock });
    await expect(mneme.reembed()).rejects.toMatchObject({
      code: ErrorCode.ConfigInvalid,
      message: expect.stringMatching(/set MNEME_EMBEDDER or pass `embedder` to createMneme/),
    });
    expect(await mneme.vectorStatus()).toEqual({
      embedder: null,
      index: null,
      missing: 0,
      search: { available: true, reason: null },
    });
    await mneme.close();
  });
});
