import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { globalMemory } from '../../storage/global-memory.fixture.js';
import { cosine } from './consolidate-task.js';
import { LINK_COSINE } from './link-task.js';
import { ALL_CHANNELS } from './maintenance-task.js';

const model = createFakeEmbeddingModel({ dimensions: 64 });
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(withVectors = true) {
  const engine = await openMaintenanceEngine(withVectors ? { embedder: model } : {});
  engines.push(engine);
  return engine;
}

async function link(engine: MaintenanceEngine) {
  const report = await engine.mneme.maintain({ tasks: ['link'] });
  if (!report.link) throw new Error('no link report');
  return report.link;
}

async function similarity(left: string, right: string): Promise<number> {
  const [a, b] = await model.embed([left, right], 'document');
  return cosine(a ?? new Float32Array(), b ?? new Float32Array());
}

/** Stores of this many vectors get inverted lists in the test of linking's build of them. */
const LIST_MIN_VECTORS = 1000;

const trip = 'Oz plans a trip to Lisbon in May with Mia and Leo and the kids';
const sameTrip = 'Oz plans a trip to Lisbon in May with Mia and Leo and the dog';

describe('the linking task', () => {
  it('links a new memory to an older one with cosine above 0.85, the cosine as strength', async () => {
    const engine = await open();
    const older = await engine.mneme.remember({ content: trip });
    const newer = await engine.mneme.remember({ content: sameTrip });
    await engine.mneme.remember({ content: 'The staging server runs out of disk on Mondays' });
    const expected = await similarity(trip, sameTrip);
    expect(expected).toBeGreaterThan(LINK_COSINE);

    expect(await link(engine)).toEqual({ checked: 3, created: 1, removed: 0, skipped: null });
    const [semantic] = await engine.mneme.links(older.id);
    expect(semantic).toMatchObject({ sourceId: newer.id, targetId: older.id, type: 'semantic' });
    expect(semantic?.strength).toBeCloseTo(expected, 5);
  });

  it('looks only at memories newer than its watermark', async () => {
    const engine = await open();
    await engine.mneme.remember({ content: trip });
    expect(await link(engine)).toMatchObject({ checked: 1, created: 0 });
    expect(await link(engine)).toMatchObject({ checked: 0, created: 0 });
    const newer = await engine.mneme.remember({ content: sameTrip });
    expect(await link(engine)).toMatchObject({ checked: 1, created: 1 });
    expect(await engine.storage.maintenanceState.get('', 'link')).toMatchObject({ watermark: newer.id });
  });

  it('never links two memories no viewer sees together', async () => {
    const engine = await open();
    const oz = await engine.mneme.remember({ content: trip, scope: 'personal', userId: 'oz' });
    await engine.mneme.remember({ content: sameTrip, scope: 'personal', userId: 'mia' });
    const shared = await engine.mneme.remember({ content: sameTrip, scope: 'room', channelId: 'family' });
    const everyone = await engine.mneme.remember({ content: `${trip}!` });

    await link(engine);
    const pairs = async (id: number) =>
      (await engine.mneme.links(id)).map((found) => [found.sourceId, found.targetId].sort((a, b) => a - b));
    // A global memory may be seen with anyone's; two users' or a user's and a room's never together.
    expect(await pairs(oz.id)).toEqual([[oz.id, everyone.id]]);
    expect(await pairs(shared.id)).toEqual([[shared.id, everyone.id]]);
    expect(await engine.mneme.stats()).toMatchObject({ links: 3 });
  });

  it('removes links to archived memories at the end of each run', async () => {
    const engine = await open();
    const older = await engine.mneme.remember({ content: trip });
    const newer = await engine.mneme.remember({ content: sameTrip });
    await link(engine);
    await engine.mneme.forget(older.id);
    expect(await link(engine)).toMatchObject({ checked: 0, created: 0, removed: 1 });
    expect(await engine.mneme.links(newer.id)).toEqual([]);
  });

  it('builds the inverted lists of a large store before its searches', { timeout: 120_000 }, async () => {
    const engine = await openMaintenanceEngine({ embedder: model, vectorListMinVectors: LIST_MIN_VECTORS });
    engines.push(engine);
    const contents = Array.from(
      { length: LIST_MIN_VECTORS },
      (_, index) => `note${index} colour${index % 97} town${index % 89}`,
    );
    const vectors = await model.embed(contents, 'document');
    await engine.storage.memories.insert(
      contents.map((content, index) => {
        const vector = vectors[index];
        return globalMemory(content, { embedding: vector ? { model: model.modelId, vector } : null });
      }),
      { at: Date.now(), actor: null },
    );
    // Only the newest few to link: the searches are not what this test is about.
    await engine.storage.maintenanceState.set(ALL_CHANNELS, 'link', { watermark: LIST_MIN_VECTORS - 5 });
    const report = await link(engine);
    expect(report.checked).toBe(5);
    // Trained and filled: the next step has nothing to do.
    expect(await engine.storage.maintenance.indexStep()).toBe(false);
  });

  it('without an embedding model only cleans up, and says so', async () => {
    const engine = await open(false);
    await engine.mneme.remember({ content: trip });
    expect(await link(engine)).toEqual({
      checked: 0,
      created: 0,
      removed: 0,
      skipped: 'no embedding model: only links to archived memories were removed',
    });
  });
});
