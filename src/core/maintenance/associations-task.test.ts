import { afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import { createOfflineEpisodeSummariser } from '../../models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../../models/offline/offline-memory-merger.js';
import { ASSOCIATIONS_TASK, type TermAssociationStore } from '../../storage/maintenance-store.js';
import type { EngineContext } from '../engine-context.js';
import { resolvePolicy } from '../policy.js';
import type { RememberInput } from '../schemas.js';
import { runAssociations } from './associations-task.js';
import { ALL_CHANNELS } from './maintenance-task.js';

const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

async function open(): Promise<MaintenanceEngine> {
  const engine = await openMaintenanceEngine({ start: '2024-06-01T10:00:00.000Z' });
  engines.push(engine);
  return engine;
}

function run(engine: MaintenanceEngine, options: { bulk?: boolean } = {}, associationWeight = 0.3) {
  const context: EngineContext = {
    storage: engine.storage,
    embedder: null,
    clock: engine.clock,
    logger: { warn: () => {} },
    policy: resolvePolicy({ recall: { associationWeight } }),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
  };
  return runAssociations(context, engine.clock.now(), options);
}

function associations(engine: MaintenanceEngine): TermAssociationStore {
  const store = engine.storage.maintenance.termAssociations;
  if (!store) throw new Error('the SQLite store keeps word associations');
  return store;
}

const ann = { scope: 'personal', userId: 'ann' } satisfies Omit<RememberInput, 'content'>;
const bob = { scope: 'personal', userId: 'bob' } satisfies Omit<RememberInput, 'content'>;

async function remember(engine: MaintenanceEngine, contents: readonly string[], input: Omit<RememberInput, 'content'>) {
  const ids: number[] = [];
  for (const content of contents) ids.push((await engine.mneme.remember({ content, ...input })).id);
  return ids;
}

const associatedWith = async (engine: MaintenanceEngine, owners: readonly string[], stem: string) =>
  (await associations(engine).read(owners, [stem])).flatMap((row) =>
    row.words.map((word) => `${row.owner} ${word.stem}`),
  );

describe('the stored word associations (ADR 26, session 8)', () => {
  it("stores each word's associations per owner key, from that owner key's memories only", async () => {
    const engine = await open();
    await remember(engine, ['Family dinner with the kids', 'The kids and the family at the zoo'], ann);
    await remember(engine, ['Family trip to the lighthouse', 'The lighthouse family photo'], bob);
    const report = await run(engine);
    expect(report.checked).toBe(4);
    expect(await associatedWith(engine, ['user:ann'], 'famili')).toEqual(['user:ann kid']);
    expect(await associatedWith(engine, ['user:bob'], 'famili')).toEqual(['user:bob lighthous']);
    // Both owner keys read together: each row is its own owner key's.
    expect((await associatedWith(engine, ['user:ann', 'user:bob'], 'famili')).sort()).toEqual([
      'user:ann kid',
      'user:bob lighthous',
    ]);
    expect(await associatedWith(engine, ['user:carol'], 'famili')).toEqual([]);
  });

  it('does nothing while the association list is off, and its first run after reads every memory', async () => {
    const engine = await open();
    await remember(engine, ['Family dinner with the kids', 'The kids and the family at the zoo'], ann);
    expect(await run(engine, {}, 0)).toEqual({ checked: 0, words: 0 });
    expect(await engine.storage.maintenanceState.get(ALL_CHANNELS, ASSOCIATIONS_TASK)).toBeNull();
    expect(await run(engine)).toEqual({ checked: 2, words: 2 });
  });

  it('reads each new memory once, from a watermark, and computes a stored word again only once its count has moved', async () => {
    const engine = await open();
    await remember(engine, ['Family dinner with the kids', 'The kids and the family at the zoo'], ann);
    expect(await run(engine)).toEqual({ checked: 2, words: 2 });
    expect(await engine.storage.maintenanceState.get(ALL_CHANNELS, ASSOCIATIONS_TASK)).toMatchObject({
      watermark: 2,
    });
    expect(await run(engine)).toEqual({ checked: 0, words: 0 });
    // "family" 2 -> 3 (x1.5) is computed again, with the new memory's words; "kids" 2 -> 2 is not.
    await remember(engine, ['A family picnic by the river with cake'], ann);
    expect(await run(engine)).toEqual({ checked: 1, words: 1 });
    await remember(engine, ['Cake and the river again'], ann);
    // "cake" and "river" are now in 2 memories each: computed for the first time.
    expect(await run(engine)).toEqual({ checked: 1, words: 2 });
    expect(await associatedWith(engine, ['user:ann'], 'cake')).toEqual(['user:ann river']);
  });

  it('are all taken by a purge, with their watermark, and the next run computes what is left', async () => {
    const engine = await open();
    await remember(engine, ['Family dinner with the kids', 'The kids and the family'], bob);
    await remember(engine, ['Family dinner with the kids', 'The kids and the family'], ann);
    await run(engine);
    expect(await associatedWith(engine, ['user:ann'], 'famili')).toEqual(['user:ann kid']);
    await engine.mneme.purgeUser('ann');
    expect(await associatedWith(engine, ['user:ann', 'user:bob'], 'famili')).toEqual([]);
    expect(await engine.storage.maintenanceState.get(ALL_CHANNELS, ASSOCIATIONS_TASK)).toBeNull();
    expect(await run(engine)).toEqual({ checked: 2, words: 2 });
    expect(await associatedWith(engine, ['user:ann', 'user:bob'], 'famili')).toEqual(['user:bob kid']);
  });

  it("stores the same associations from a bulk run's texts as from searches, when a word's memories all count", async () => {
    const contents = [
      'Family dinner with the kids on Sunday',
      'The kids and the family went to the zoo',
      'Planning a family holiday the kids will love',
      'Swimming with the kids every Saturday',
      'The zoo trip was a family favourite',
      'Holiday photos from the lighthouse',
      'The lighthouse tour before the holiday',
    ];
    const stored = async (bulk: boolean) => {
      const engine = await open();
      await remember(engine, contents, ann);
      await remember(engine, contents.slice(0, 4), bob);
      const report = await run(engine, { bulk });
      const rows = await associations(engine).read(
        ['user:ann', 'user:bob'],
        ['famili', 'kid', 'zoo', 'holidai', 'lighthous', 'dinner'],
      );
      return { report, rows: rows.sort((a, b) => `${a.owner} ${a.stem}`.localeCompare(`${b.owner} ${b.stem}`)) };
    };
    const searched = await stored(false);
    const bulk = await stored(true);
    expect(searched.rows.length).toBeGreaterThan(6);
    expect(bulk).toEqual(searched);
  });
});
