import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { NewMemory } from '../src/storage/memory-store.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Attack (session 6, wt-attack6) on ce21369: linking's batched first pass against the per-memory searches, on
// what test/link-batched.test.ts leaves out: faded memories (they keep their vectors, so the lists hold them,
// but linking's searches drop them), vectors that came after the lists were trained (placed by `put`, some in
// the overflow band), and a second batched pass over a store already linked up to its watermark.
const DIMENSIONS = 48;
const model = createFakeEmbeddingModel({ dimensions: DIMENSIONS });
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

function corpus(count: number, seed: number): NewMemory[] {
  const random = createSeededRandom(seed);
  const topics = Array.from({ length: 30 }, () => Float32Array.from({ length: DIMENSIONS }, () => random.normal()));
  const owners = [
    { scope: 'global', owner: 'global', userId: null, channelId: null },
    { scope: 'personal', owner: 'user:oz', userId: 'oz', channelId: null },
    { scope: 'personal', owner: 'user:mia', userId: 'mia', channelId: null },
  ] as const;
  return Array.from({ length: count }, (_, index) => {
    const topic = random.below(topics.length);
    const centre = topics[topic] ?? new Float32Array(DIMENSIONS);
    const spread = topic < 5 ? 0.03 : 0.12;
    const vector = Float32Array.from(centre, (value) => value / Math.sqrt(DIMENSIONS) + random.normal() * spread);
    const scope = random.below(3) < 2 ? owners[0] : (owners[1 + random.below(2)] ?? owners[0]);
    return globalMemory(`memory ${seed}-${index} of topic ${topic}`, {
      ...scope,
      embedding: { model: model.modelId, vector },
    });
  });
}

async function linked(batched: boolean) {
  const engine = await openMaintenanceEngine({ embedder: model, vectorListMinVectors: 800 });
  engines.push(engine);
  const context = { at: Date.parse('2024-06-01T00:00:00.000Z'), actor: null };
  await engine.storage.memories.insert(corpus(1000, 7), context);
  // The lists trained and filled over the first thousand; the next ones are placed as they are stored.
  while (await engine.storage.maintenance.indexStep());
  await engine.storage.memories.insert(corpus(400, 8), context);
  // One memory in nine fades: it keeps its vector (recall searches it), linking does not link to it.
  const faded = Array.from({ length: 1400 }, (_, index) => index + 1).filter((id) => id % 9 === 4);
  await engine.storage.memories.archive(faded, context, { fade: true });
  let batches = 0;
  const batch = engine.storage.memories.searchOlderNeighbours?.bind(engine.storage.memories);
  if (!batched || !batch) delete engine.storage.memories.searchOlderNeighbours;
  else {
    engine.storage.memories.searchOlderNeighbours = (searches) => {
      batches++;
      return batch(searches);
    };
  }
  const first = await engine.mneme.maintain({ tasks: ['link'] });
  // A second pass over 300 more (batched again: at least LINK_BATCH_FROM past the watermark).
  await engine.storage.memories.insert(corpus(300, 9), context);
  const second = await engine.mneme.maintain({ tasks: ['link'] });
  const links = [];
  for (let id = 1; id <= 1700; id++) {
    for (const link of await engine.mneme.links(id)) if (link.sourceId === id) links.push(link);
  }
  expect(await engine.storage.maintenance.indexStep()).toBe(false);
  const fadedTargets = links.filter((link) => faded.includes(link.targetId));
  return { reports: [first.link, second.link], links, batches, fadedTargets };
}

describe('attack6: linking many memories at once, over faded and late-placed vectors', { timeout: 240_000 }, () => {
  it('makes the links the searches one at a time make', async () => {
    const one = await linked(false);
    const many = await linked(true);
    expect(many.reports).toEqual(one.reports);
    expect(many.links).toEqual(one.links);
    expect(one.links.length).toBeGreaterThan(300);
    // Not vacuous: the batched run asked the store for pages of searches (two passes), no faded target.
    expect({ one: one.batches, many: many.batches > 1 }).toEqual({ one: 0, many: true });
    expect(many.fadedTargets).toEqual([]);
  });
});
