import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { visibleOwners } from '../src/core/scope.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// ADR 27: a connection's recall caches (the inverted lists' codes, the full-text owner index) now live through
// another connection's commits, brought up to date from the record of changed memories instead of read again. Two
// engines on one file, as two processes: what the other one forgets, moves away or writes must be seen at once by
// the first one's recalls, which hold their caches, and its recalls' touches must change nothing of what they see.
const folder = mkdtempSync(join(tmpdir(), 'mneme-recall-changes-'));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('recall beside another connection that writes to the same file', () => {
  it('never gives Bo a memory the other connection forgot or moved into a room he is not in, and finds what it wrote', {
    timeout: 180_000,
  }, async () => {
    const path = join(folder, 'two.db');
    const model = createFakeEmbeddingModel();
    const options = { embedder: model, path, vectorListMinVectors: 300, textSnapshotAfter: 4 } as const;
    const first = await openMaintenanceEngine(options);
    engines.push(first);
    const topics = ['garden tomatoes basil', 'cello quartet sunday', 'lisbon trip may', 'greyhound pixel sofa'];
    for (let index = 0; index < 400; index++) {
      await first.mneme.remember({ content: `${topics[index % topics.length]} note ${index % 13} item${index}` });
    }
    for (let index = 0; index < 40; index++) {
      await first.mneme.remember({ content: `ann diary page ${index} tea`, scope: 'personal', userId: 'ann' });
    }
    while (await first.storage.maintenance.indexStep()) {}
    const other = await openMaintenanceEngine(options);
    engines.push(other);
    const bo = visibleOwners({ userId: 'bo' });
    const vectorHits = async (text: string, owners: readonly string[]) => {
      const [vector] = await model.embed([text], 'query');
      const hits = await first.storage.memories.searchVector({
        vector: vector as Float32Array,
        model: model.modelId,
        owners,
        limit: 50,
      });
      return hits.map((hit) => hit.id);
    };
    const recalled = async (query: string) =>
      (await first.mneme.recall({ query, viewer: { userId: 'bo' }, topK: 20 })).hits.map((hit) => hit.memory.id);
    // Enough searches without a write for both caches to be read (32 for the codes, 4 for the owner index).
    for (let index = 0; index < 40; index++) await recalled(topics[index % topics.length] ?? '');
    for (let round = 0; round < 8; round++) {
      const text = `lighthouse keeper ${round} walrus ${round}7`;
      // The other connection writes a global memory: Bo finds it at once, by both legs.
      const written = await other.mneme.remember({ content: text });
      expect((await vectorHits(text, bo))[0]).toBe(written.id);
      expect((await recalled(`walrus ${round}7`))[0]).toBe(written.id);
      // The other connection's recalls touch what they find (which may reorder them): Bo sees the same memories.
      const sorted = async (query: string) => (await recalled(query)).sort((a, b) => a - b);
      const before = await sorted(`walrus ${round}7 lighthouse`);
      await other.mneme.recall({ query: `walrus ${round}7 lighthouse`, viewer: {}, topK: 10 });
      expect(await sorted(`walrus ${round}7 lighthouse`)).toEqual(before);
      if (round % 2 === 0) {
        // Moved into a room Bo is not in by the other connection: Bo finds it by neither leg.
        await other.storage.memories.moveTo(
          written.id,
          { scope: 'room', channelId: 'ops' },
          { at: Date.parse('2024-06-02T00:00:00Z'), actor: null, reason: 'test: moved to its speaker' },
        );
        expect(await vectorHits(text, bo)).not.toContain(written.id);
        expect(await recalled(`walrus ${round}7`)).not.toContain(written.id);
      } else {
        // Forgotten by the other connection: found by nobody.
        await other.mneme.forget(written.id);
        expect(await vectorHits(text, bo)).not.toContain(written.id);
        expect(await recalled(`walrus ${round}7`)).not.toContain(written.id);
        expect(await vectorHits(text, visibleOwners({ userId: 'ann' }))).not.toContain(written.id);
      }
    }
    // A global memory of the first store moved away by the other connection: gone from Bo's recalls too.
    const [someone] = await recalled('greyhound pixel sofa');
    expect(someone).toBeDefined();
    await other.storage.memories.moveTo(
      someone as number,
      { scope: 'room', channelId: 'ops' },
      { at: Date.parse('2024-06-02T00:00:00Z'), actor: null, reason: 'test: moved' },
    );
    expect(await recalled('greyhound pixel sofa')).not.toContain(someone);
  });
});
