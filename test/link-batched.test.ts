import { afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { LINK_BATCH_FROM } from '../src/core/maintenance/link-task.js';
import { ownerKey } from '../src/core/scope.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { NewMemory } from '../src/storage/memory-store.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// Linking's first pass over a large store (ADR 20, 2026-12-01, session 6) asks the store for a page of
// neighbour searches at once, and the store skips those whose bands hold no older code within the Hamming
// bound. The links must be the ones the searches one at a time make: same pairs, strengths, limit per
// memory, scope rule.
const DIMENSIONS = 64;
const LIST_MIN_VECTORS = 1000;
const model = createFakeEmbeddingModel({ dimensions: DIMENSIONS });
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

/**
 * 1,600 memories: three quarters around 40 topics, most loose (cosine about 0.6 between two of a topic), a few
 * tight (about 0.9: more than ten neighbours above the linking cosine); a quarter along a line between two
 * topics, which the lists cut across (neighbours in other lists than a memory's own); in global, two users'
 * and a room's scope.
 */
function corpus(): NewMemory[] {
  const random = createSeededRandom(61);
  const topics = Array.from({ length: 40 }, () => Float32Array.from({ length: DIMENSIONS }, () => random.normal()));
  const owners = [
    { scope: 'global', owner: 'global', userId: null, channelId: null },
    { scope: 'personal', owner: 'user:oz', userId: 'oz', channelId: null },
    { scope: 'personal', owner: 'user:mia', userId: 'mia', channelId: null },
    { scope: 'room', owner: 'room:family', userId: null, channelId: 'family' },
  ] as const;
  // And an arc between two topics, which the lists cut across: neighbours in other lists than a memory's own.
  const [from = topics[0], to = topics[0]] = [topics[0], topics[1]];
  return Array.from({ length: 1600 }, (_, index) => {
    const topic = random.below(topics.length);
    const centre = topics[topic] ?? new Float32Array(DIMENSIONS);
    const spread = topic < 4 ? 0.04 : 0.16;
    const along = random.below(1000) / 1000;
    const vector =
      index % 4 === 3
        ? Float32Array.from(
            centre,
            (_, at) => ((1 - along) * (from?.[at] ?? 0) + along * (to?.[at] ?? 0)) / 8 + random.normal() * 0.01,
          )
        : Float32Array.from(centre, (value) => value / Math.sqrt(DIMENSIONS) + random.normal() * spread);
    // Two thirds global, so that every scope sees more than LIST_MIN_VECTORS vectors and searches the lists.
    const scope = random.below(3) < 2 ? owners[0] : (owners[1 + random.below(3)] ?? owners[0]);
    return globalMemory(`memory ${index} of topic ${topic}`, {
      ...scope,
      embedding: { model: model.modelId, vector },
    });
  });
}

async function linked(batched: boolean) {
  const engine = await openMaintenanceEngine({ embedder: model, vectorListMinVectors: LIST_MIN_VECTORS });
  engines.push(engine);
  await engine.storage.memories.insert(corpus(), { at: Date.now(), actor: null });
  if (!batched) delete engine.storage.memories.searchOlderNeighbours;
  const report = await engine.mneme.maintain({ tasks: ['link'] });
  const links = [];
  for (let id = 1; id <= 1600; id++) {
    for (const link of await engine.mneme.links(id)) if (link.sourceId === id) links.push(link);
  }
  return { report: report.link, links, engine };
}

describe('linking many memories at once', { timeout: 180_000 }, () => {
  it('makes the links the searches one at a time make', async () => {
    expect(1600).toBeGreaterThanOrEqual(LINK_BATCH_FROM);
    const one = await linked(false);
    const many = await linked(true);
    // The lists answered both (trained and filled: no step left).
    expect(await many.engine.storage.maintenance.indexStep()).toBe(false);
    expect(many.report).toEqual(one.report);
    expect(many.links).toEqual(one.links);
    // Not a vacuous comparison: links, a memory at the limit of ten, and the scope rule kept.
    expect(one.links.length).toBeGreaterThan(500);
    const perSource = new Map<number, number>();
    for (const link of one.links) perSource.set(link.sourceId, (perSource.get(link.sourceId) ?? 0) + 1);
    expect(Math.max(...perSource.values())).toBe(10);
    const owners = new Map<number, string>();
    for (const memory of await many.engine.storage.maintenance.listAfter(0, 2000)) {
      owners.set(memory.id, memory.scope === 'global' ? 'global' : `${memory.userId ?? memory.channelId}`);
    }
    for (const link of many.links) {
      const pair = [owners.get(link.sourceId), owners.get(link.targetId)];
      expect(pair.includes('global') || pair[0] === pair[1]).toBe(true);
    }
  });

  it('answers a page of searches in any order of ids as one search at a time does', async () => {
    // The store answers a page whatever the order of its ids (linking asks them ascending, page after page): a
    // page ascending from the middle, one shuffled below it, one ascending from the start again (ADR 20, session 8).
    const engine = await openMaintenanceEngine({ embedder: model, vectorListMinVectors: LIST_MIN_VECTORS });
    engines.push(engine);
    await engine.storage.memories.insert(corpus(), { at: Date.now(), actor: null });
    while (await engine.storage.maintenance.indexStep());
    const vectors = await engine.storage.maintenance.vectors(
      Array.from({ length: 1600 }, (_, index) => index + 1),
      model.modelId,
    );
    const owners = new Map<number, string>();
    for (const memory of await engine.storage.maintenance.listAfter(0, 2000)) {
      owners.set(memory.id, ownerKey(memory.scope, memory));
    }
    const search = (id: number) => {
      const owner = owners.get(id) ?? 'global';
      return {
        vector: vectors.get(id) ?? new Float32Array(DIMENSIONS),
        model: model.modelId,
        owners: owner === 'global' ? null : ['global', owner],
        limit: 11,
        minScore: 0.85,
        olderThan: id,
      };
    };
    const random = createSeededRandom(5);
    const shuffled = Array.from({ length: 1600 }, (_, index) => index + 1).sort(() => random.below(3) - 1);
    // Ascending from the middle, then the lower half shuffled, then ascending from the start: three pages.
    const pages = [
      Array.from({ length: 500 }, (_, index) => 801 + index),
      shuffled.filter((id) => id <= 800).slice(0, 500),
      Array.from({ length: 500 }, (_, index) => 1 + index * 3),
    ];
    let withOlder = 0;
    for (const page of pages) {
      const searches = page.map(search);
      const batched = (await engine.storage.memories.searchOlderNeighbours?.(searches)) ?? [];
      const single = [];
      for (const one of searches) {
        single.push((await engine.storage.memories.searchVector(one)).filter((hit) => hit.id < one.olderThan));
      }
      expect(batched).toEqual(single);
      withOlder += single.filter((hits) => hits.length > 0).length;
    }
    // Not vacuous: many of these searches have older neighbours, many have none.
    expect(withOlder).toBeGreaterThan(100);
    expect(withOlder).toBeLessThan(1400);
  });
});
