import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { visibleOwners } from '../src/core/scope.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { crashTest } from './kill-mid-write.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * wt-attack18c (ADR 27): the record of changed memories numbers its entries one past the largest, so the entries of a
 * writer killed mid-transaction are given again to the next writer. A process writes entries in a transaction that
 * never commits (memories moved to Ann, their vectors listed again under her) and is killed with SIGKILL; then
 * another connection forgets one memory and moves another into a room, its entries taking those numbers. A third
 * connection, which held both copies all along, must give Bo neither, and still give him the memories the killed
 * writer had moved.
 */
const { folder, built, isBuilt, killMidWrite } = crashTest('attack18c-killed');
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

const mover = `
  const { openSqliteDatabase } = await import(${JSON.stringify(built('storage/sqlite/sqlite-database.js'))});
  const { createSqliteVectorIndex } = await import(${JSON.stringify(built('storage/sqlite/sqlite-vector-index.js'))});
  const database = openSqliteDatabase({ path: process.argv[1] });
  const index = createSqliteVectorIndex(database, { listMinVectors: 300 });
  const { model } = index.info();
  const ids = database.prepare("SELECT id FROM memories WHERE owner = 'global' ORDER BY id LIMIT 60").pluck().all();
  database.exec('BEGIN IMMEDIATE');
  for (const id of ids) {
    database.prepare("UPDATE memories SET scope = 'personal', owner = 'user:ann', user_id = 'ann' WHERE id = ?").run(id);
    const vector = index.vectors([id]).get(id);
    if (vector) index.put(id, 'user:ann', { model, vector });
    process.stdout.write('moved\\n');
  }
  setInterval(() => {}, 1000);
`;

describe('recall beside a writer killed mid-transaction, whose record numbers another writer takes', () => {
  it('gives Bo neither what the next writer forgot or moved away nor less than the killed writer left', {
    timeout: 180_000,
  }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'killed.db');
    const model = createFakeEmbeddingModel();
    const options = { embedder: model, path, vectorListMinVectors: 300, textSnapshotAfter: 4 } as const;
    const first = await openMaintenanceEngine(options);
    engines.push(first);
    const topics = ['garden tomatoes basil', 'cello quartet sunday', 'lisbon trip may', 'greyhound pixel sofa'];
    for (let index = 0; index < 400; index++) {
      await first.mneme.remember({ content: `${topics[index % topics.length]} note ${index % 13} item${index}` });
    }
    while (await first.storage.maintenance.indexStep()) {}
    const bo = visibleOwners({ userId: 'bo' });
    const vectorHits = async (text: string) => {
      const [vector] = await model.embed([text], 'query');
      const hits = await first.storage.memories.searchVector({
        vector: vector as Float32Array,
        model: model.modelId,
        owners: bo,
        limit: 50,
      });
      return hits.map((hit) => hit.id);
    };
    const textHits = async (text: string) =>
      (await first.storage.memories.searchText({ terms: text.split(' '), owners: bo, limit: 100 })).map(
        (hit) => hit.id,
      );
    // Both copies held (32 searches for the codes, 4 for the owner index).
    for (let index = 0; index < 40; index++) {
      await vectorHits(topics[index % topics.length] ?? '');
      await textHits(topics[index % topics.length] ?? '');
    }
    await killMidWrite(mover, path, 0, 40);
    const other = await openMaintenanceEngine(options);
    engines.push(other);
    const [forgotten, moved] = [5, 9];
    await other.mneme.forget(forgotten);
    await other.storage.memories.moveTo(
      moved,
      { scope: 'room', channelId: 'ops' },
      { at: Date.parse('2024-06-02T00:00:00Z'), actor: null, reason: 'test: moved' },
    );
    for (const id of [forgotten, moved]) {
      const [memory] = await first.storage.memories.get([id]);
      const content = memory?.content ?? '';
      expect(await vectorHits(content)).not.toContain(id);
      expect(await textHits(content)).not.toContain(id);
    }
    // The killed writer's moves never happened: Bo still finds those memories (ids 1 to 4 among them).
    for (const id of [1, 2, 3, 4]) {
      const [memory] = await first.storage.memories.get([id]);
      const content = memory?.content ?? '';
      expect(memory?.scope).toBe('global');
      expect(await vectorHits(content)).toContain(id);
      expect(await textHits(content)).toContain(id);
    }
  });
});
