import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * wt-attack10b: recall's touch is excused from dropping the full-text leg's audience snapshot (`unchangedBy`, ADR 25,
 * 2026-12-02, session 10) only when nothing else was written since the search. Here the same engine's writes run
 * beside its recalls (not awaited in between: the write may land between a recall's search and its touch), and the
 * next recall of each viewer must find the new memory, never the forgotten one, never the other user's.
 */
const folder = mkdtempSync('/tmp/wt-attack10b-concurrent-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

describe('attack10b: recalls beside writes of the same engine', () => {
  it('finds what was written beside the last recall, and only the viewer its own', async () => {
    const engine = await openMaintenanceEngine({
      path: join(folder, 'concurrent.db'),
      embedder: createFakeEmbeddingModel(),
      textSnapshotAfter: 0,
    });
    engines.push(engine);
    const { mneme } = engine;
    const ids = (result: { hits: Array<{ memory: { id: number; userId?: string | null } }> }) =>
      result.hits.map((hit) => hit.memory.id);
    const recall = (userId: string) =>
      mneme.recall({ query: 'heron', viewer: { userId }, topK: 100 }).then((result) => {
        for (const hit of result.hits) expect([userId, null, undefined]).toContain(hit.memory.userId);
        return ids(result);
      });
    for (let index = 0; index < 6; index++) {
      await mneme.remember({
        content: `heron ${index} by the lake`,
        scope: 'personal',
        userId: index % 2 ? 'ann' : 'bob',
      });
    }
    const annMemories = new Set((await recall('ann')).values());
    for (let round = 0; round < 12; round++) {
      // A recall, a new memory of ann's and the forgetting of one of hers, all started together.
      const victim = [...annMemories][0] as number;
      const [, added] = await Promise.all([
        recall(round % 2 ? 'ann' : 'bob'),
        mneme.remember({ content: `heron round ${round}`, scope: 'personal', userId: 'ann' }),
        mneme.forget(victim),
        recall('ann'),
      ]);
      annMemories.add(added.id);
      annMemories.delete(victim);
      // The full-text leg alone (the vector leg finds every memory of the viewer's here), then a recall.
      const text = await engine.storage.memories.searchText({
        terms: ['heron'],
        owners: ['user:ann'],
        limit: 100,
        includeFaded: false,
      });
      expect(text.map((hit) => hit.id).sort((left, right) => left - right)).toEqual(
        [...annMemories].sort((left, right) => left - right),
      );
      const seen = await recall('ann');
      expect(seen.sort((left, right) => left - right)).toEqual([...annMemories].sort((left, right) => left - right));
      expect(await recall('bob')).not.toContain(added.id);
    }
  });
});
