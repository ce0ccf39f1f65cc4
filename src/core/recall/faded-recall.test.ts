import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  closeEngineStores,
  daysAfter,
  type EngineStore,
  engineStores,
  type MaintenanceEngine,
  openMaintenanceEngine,
  prepareEngineStore,
} from '../../../test/maintenance-engine.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { openSqliteDatabase } from '../../storage/sqlite/sqlite-database.js';
import type { PolicyOptions } from '../policy.js';

const start = '2024-06-01T00:00:00.000Z';
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});
afterAll(closeEngineStores);
let store: EngineStore = 'sqlite';

async function open(policy: PolicyOptions = {}, path?: string) {
  const engine = await openMaintenanceEngine({
    store,
    start,
    policy,
    embedder: createFakeEmbeddingModel(),
    ...(path === undefined ? {} : { path }),
  });
  engines.push(engine);
  return engine;
}

/** A memory about the staging server, then 60 days without a retrieval and a decay run: it faded. */
async function fadedKestrel(engine: MaintenanceEngine) {
  const memory = await engine.mneme.remember({ content: 'kestrel is the staging server of the billing team' });
  engine.clock.set(daysAfter(start, 60));
  const report = await engine.mneme.maintain({ tasks: ['decay'] });
  expect(report.decay).toMatchObject({ archived: 1 });
  return memory;
}

describe.each(engineStores)('memories that faded (ADR 9), on %s', (name) => {
  beforeAll(async () => {
    store = name;
    await prepareEngineStore(name);
  }, 120_000);

  it('leaves lists and keeps its vector, yet a recall that asks for it finds it, ranked below an active match', async () => {
    const engine = await open();
    const old = await fadedKestrel(engine);
    const faded = await engine.mneme.get(old.id);
    expect(faded.archivedAt).not.toBeNull();
    expect(faded.fadedAt).toBe(faded.archivedAt);
    expect(faded.embeddingModel).not.toBeNull();
    expect((await engine.mneme.list()).memories).toEqual([]);

    const fresh = await engine.mneme.remember({ content: 'kestrel is the staging server of the billing team, v2' });
    const found = await engine.mneme.recall({ query: 'kestrel staging server billing', explain: true, inspect: true });
    expect(found.hits.map((hit) => hit.memory.id)).toEqual([fresh.id, old.id]);
    const [active, rested] = found.hits;
    expect(rested?.score).toBeLessThan(active?.score ?? 0);
    expect(rested?.explanation).toMatch(
      /x0\.95 \(faded 2024-07-31: decay put it to rest; this recall brings it back\)/,
    );
  });

  it('is brought back by a recall that returns it: active again, reinforced, with a restore version saying why', async () => {
    const engine = await open();
    const old = await fadedKestrel(engine);
    await engine.mneme.recall({ query: 'kestrel', inspect: true });
    expect((await engine.mneme.get(old.id)).fadedAt).not.toBeNull();

    await engine.mneme.recall({ query: 'kestrel' });
    const back = await engine.mneme.get(old.id);
    expect(back).toMatchObject({ archivedAt: null, fadedAt: null, strength: 1, accessCount: 1 });
    const history = await engine.mneme.history(old.id);
    expect(history.map((version) => [version.action, version.reason])).toEqual([
      ['create', null],
      ['archive', 'decay: Ebbinghaus retention fell below 0.10'],
      ['restore', 'recalled after it faded'],
    ]);
    expect((await engine.mneme.list()).memories.map((memory) => memory.id)).toEqual([old.id]);
  });

  it('is found by the vector leg too, but never by linking, which looks at active memories only', async () => {
    const engine = await open();
    const old = await fadedKestrel(engine);
    const found = await engine.mneme.recall({
      query: 'kestrel is the staging server of the billing team',
      inspect: true,
    });
    expect(found.vectorLeg).toBe('used');
    expect(found.hits[0]).toMatchObject({ match: 'hybrid', memory: { id: old.id } });

    await engine.mneme.remember({ content: 'kestrel is the staging server of the billing team' });
    const linked = await engine.mneme.maintain({ tasks: ['link'] });
    expect(linked.link?.created).toBe(0);
  });

  it('is forgotten for good by forget: no longer found, its vector gone; restore brings it back', async () => {
    const engine = await open();
    const old = await fadedKestrel(engine);
    const forgotten = await engine.mneme.forget({ id: old.id, reason: 'wrong' });
    expect(forgotten).toMatchObject({ fadedAt: null, embeddingModel: null });
    expect((await engine.mneme.recall({ query: 'kestrel', inspect: true })).hits).toEqual([]);
    await expect(engine.mneme.forget(old.id)).rejects.toMatchObject({ code: 'CONFLICT' });

    const restored = await engine.mneme.restore(old.id);
    expect(restored).toMatchObject({ archivedAt: null, fadedAt: null });
    expect((await engine.mneme.recall({ query: 'kestrel', inspect: true })).hits).toHaveLength(1);
  });

  it('restores a faded memory with the vector it kept', async () => {
    const engine = await open();
    const old = await fadedKestrel(engine);
    const model = (await engine.mneme.get(old.id)).embeddingModel;
    expect(await engine.mneme.restore(old.id)).toMatchObject({
      archivedAt: null,
      fadedAt: null,
      embeddingModel: model,
    });
  });

  it('is not searched at all with recall.fadedWeight 0, and merges and forgets are never searched', async () => {
    const off = await open({ recall: { fadedWeight: 0 } });
    await fadedKestrel(off);
    expect((await off.mneme.recall({ query: 'kestrel', inspect: true })).hits).toEqual([]);

    const engine = await open();
    const forgotten = await engine.mneme.remember({ content: 'kestrel was retired' });
    await engine.mneme.forget(forgotten.id);
    expect((await engine.mneme.recall({ query: 'kestrel retired', inspect: true })).hits).toEqual([]);
  });

  it('keeps the links of a faded memory through link cleanup, and drops those of a forgotten one', async () => {
    // No graph expansion: the recall below must reinforce b alone.
    const engine = await open({ recall: { graphNeighbours: 0 } });
    const a = await engine.mneme.remember({ content: 'kestrel is the staging server of the billing team' });
    engine.clock.set(daysAfter(start, 1));
    const b = await engine.mneme.remember({ content: 'kestrel is the staging server of the billing team today' });
    expect((await engine.mneme.maintain({ tasks: ['link'] })).link?.created).toBe(1);
    engine.clock.set(daysAfter(start, 30));
    await engine.mneme.recall({ query: 'today' });
    engine.clock.set(daysAfter(start, 60));
    expect((await engine.mneme.maintain({ tasks: ['decay'] })).decay?.archived).toBe(1);
    expect((await engine.mneme.maintain({ tasks: ['link'] })).link?.removed).toBe(0);
    expect(await engine.mneme.links(a.id)).toHaveLength(1);

    await engine.mneme.forget(a.id);
    expect((await engine.mneme.maintain({ tasks: ['link'] })).link?.removed).toBe(1);
    expect(await engine.mneme.links(b.id)).toEqual([]);
  });

  it.skipIf(name !== 'sqlite')(
    'makes memories that decay archived before this version faded (migration 11)',
    async () => {
      const path = join(mkdtempSync(join(tmpdir(), 'mneme-faded-')), 'old.db');
      const before = openSqliteDatabase({ path, migrateTo: 10 });
      const insert = before.prepare(
        `INSERT INTO memories (content, category, sector, scope, owner, source, importance, source_message_ids, source_ids,
        valid_from, created_at, updated_at, archived_at) VALUES (?, 'fact', 'semantic', 'global', 'global', 'manual', 0.5, '[]', '[]', 1, 1, 1, ?)`,
      );
      const version = before.prepare(
        `INSERT INTO memory_versions (memory_id, version, action, actor, reason, changes, snapshot, created_at)
        VALUES (?, ?, ?, NULL, ?, '{}', '{}', 1)`,
      );
      const decayed = Number(insert.run('kestrel decayed', 5).lastInsertRowid);
      const forgotten = Number(insert.run('kestrel forgotten', 5).lastInsertRowid);
      version.run(decayed, 1, 'create', null);
      version.run(decayed, 2, 'archive', 'decay: Ebbinghaus retention fell below 0.10');
      version.run(forgotten, 1, 'create', null);
      version.run(forgotten, 2, 'archive', 'no longer true');
      before.close();

      const engine = await open({}, path);
      expect((await engine.mneme.get(decayed)).fadedAt).not.toBeNull();
      expect((await engine.mneme.get(forgotten)).fadedAt).toBeNull();
      const found = await engine.mneme.recall({ query: 'kestrel', inspect: true });
      expect(found.hits.map((hit) => hit.memory.id)).toEqual([decayed]);
    },
  );
});
