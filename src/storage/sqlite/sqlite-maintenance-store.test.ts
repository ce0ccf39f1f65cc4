import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from '../../../test/maintenance-engine.js';
import { ErrorCode } from '../../core/errors.js';
import { ownerKey } from '../../core/scope.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import type { NewMemory } from '../memory-store.js';
import { openSqliteDatabase } from './sqlite-database.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-maintenance-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const model = createFakeEmbeddingModel({ dimensions: 32 });
const at = Date.parse('2024-06-01T10:00:00.000Z');
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

/** An engine on its own database file, so that a second connection can add triggers to it. */
async function openOnFile() {
  const path = join(folder, `maintenance-${files++}.db`);
  const engine = await openMaintenanceEngine({ path, embedder: model, start: '2024-06-01T10:00:00.000Z' });
  engines.push(engine);
  const addTrigger = (sql: string) => {
    const raw = openSqliteDatabase({ path });
    raw.exec(sql);
    raw.close();
  };
  return { ...engine, path, addTrigger };
}

async function twoNearDuplicates(engine: MaintenanceEngine) {
  const viewer = { userId: 'oz' };
  const first = await engine.mneme.remember({
    content: 'Oz prefers dark mode in the editor',
    scope: 'personal',
    ...viewer,
  });
  const second = await engine.mneme.remember({
    content: 'Oz prefers dark mode in editors',
    scope: 'personal',
    ...viewer,
  });
  return { first, second, viewer };
}

async function mergedMemory(content: string): Promise<NewMemory> {
  const [vector] = await model.embed([content], 'document');
  return {
    content,
    category: 'fact',
    sector: 'semantic',
    scope: 'global',
    owner: ownerKey('global', {}),
    userId: null,
    channelId: null,
    projectId: null,
    topicId: null,
    source: 'consolidation',
    importance: 0.5,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    embedding: vector ? { model: model.modelId, vector } : null,
  };
}

describe('the SQLite maintenance store', () => {
  it('archives an original only once the merged memory that replaces it is written', async () => {
    const engine = await openOnFile();
    const { first, second } = await twoNearDuplicates(engine);
    engine.addTrigger(`CREATE TRIGGER archive_only_after_merge BEFORE UPDATE OF archived_at ON memories
      WHEN NEW.archived_at IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM memories merged, json_each(merged.source_ids) source
        WHERE merged.source = 'consolidation' AND merged.archived_at IS NULL AND source.value = OLD.id)
      BEGIN SELECT RAISE(ABORT, 'an original was archived before its merged memory existed'); END`);
    const bystander = await engine.mneme.remember({ content: 'Oz has a cat' });
    await expect(engine.mneme.forget(bystander.id)).rejects.toThrow(/before its merged memory existed/);

    const report = await engine.mneme.maintain({ tasks: ['consolidate'] });
    expect(report.consolidate).toMatchObject({ clusters: 1, merged: 2 });
    const archived = await engine.mneme.list({ archived: 'only' });
    expect(archived.memories.map((memory) => memory.id).sort()).toEqual([first.id, second.id]);
  });

  it('leaves the originals visible, with their vectors, when the merge fails halfway', async () => {
    const engine = await openOnFile();
    const { first, second, viewer } = await twoNearDuplicates(engine);
    // The merged memory is written first; archiving the first original then fails, as a crash would.
    engine.addTrigger(`CREATE TRIGGER crash_while_archiving BEFORE UPDATE OF archived_at ON memories
      WHEN NEW.archived_at IS NOT NULL
      BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`);

    await expect(engine.mneme.maintain({ tasks: ['consolidate'] })).rejects.toMatchObject({
      code: ErrorCode.StoreFailed,
      message: expect.stringContaining('disk I/O error'),
    });
    const visible = await engine.mneme.list({ viewer, archived: 'include' });
    expect(visible.memories.map((memory) => [memory.id, memory.archivedAt, memory.source])).toEqual([
      [second.id, null, 'manual'],
      [first.id, null, 'manual'],
    ]);
    const [vector] = await model.embed([first.content], 'query');
    const hits = await engine.storage.memories.searchVector({
      vector: vector ?? new Float32Array(),
      model: model.modelId,
      owners: ['user:oz'],
      limit: 5,
    });
    expect(hits.map((hit) => hit.id).sort()).toEqual([first.id, second.id]);
    expect((await engine.mneme.history(first.id)).map((version) => version.action)).toEqual(['create']);
    expect(await engine.mneme.links(first.id)).toEqual([]);
    expect((await engine.mneme.stats()).total).toBe(2);
  });

  it('writes a merged memory as insert writes the same memory: every column, its full-text row and its vector', async () => {
    const { storage, path } = await openOnFile();
    const [original] = await storage.memories.insert([await mergedMemory('Oz sails')], { at, actor: null });
    const memory: NewMemory = {
      ...(await mergedMemory('Oz sails on Sundays')),
      sourceIds: [original?.id ?? 0],
      sourceMessageIds: [3],
      searchContext: 'Ann: when do you sail?',
      searchContextMessageId: 3,
    };
    const [inserted] = await storage.memories.insert([memory], { at, actor: null });
    const { merged } = await storage.maintenance.merge(memory, [original?.id ?? 0], { at, actor: null });

    const raw = new Database(path, { readonly: true });
    sqliteVec.load(raw);
    const written = (id: number) => {
      const { id: _, ...columns } =
        raw.prepare<[number], Record<string, unknown>>('SELECT * FROM memories WHERE id = ?').get(id) ?? {};
      return {
        columns,
        fullText: raw.prepare('SELECT content, search_context FROM memories_fts WHERE rowid = ?').get(id),
        vector: {
          bits: raw
            .prepare('SELECT bits, bucket, owner_id FROM memory_vector_bits WHERE memory_id = ?')
            .get(BigInt(id)),
          slices: raw
            .prepare('SELECT key - ? AS slice, vector, norm2 FROM memory_vector_slices WHERE key BETWEEN ? AND ?')
            .all(id * 64, id * 64, id * 64 + 63),
        },
      };
    };
    const fromInsert = written(inserted?.id ?? 0);
    const fromMerge = written(merged.id);
    raw.close();
    expect(fromInsert.columns).toMatchObject({
      search_context: 'Ann: when do you sail?',
      search_context_message_id: 3,
    });
    expect(fromInsert.vector.bits).toBeDefined();
    expect(fromInsert.vector.slices).not.toEqual([]);
    expect(fromMerge).toEqual(fromInsert);
  });

  it('refuses a merge whose original was archived meanwhile, writing nothing', async () => {
    const engine = await openMaintenanceEngine({ embedder: model });
    engines.push(engine);
    const [a, b] = await engine.storage.memories.insert(
      [await mergedMemory('alpha beta'), await mergedMemory('alpha beta gamma')],
      { at, actor: null },
    );
    await engine.storage.memories.archive([b?.id ?? 0], { at, actor: 'someone' });
    await expect(
      engine.storage.maintenance.merge(await mergedMemory('alpha beta gamma'), [a?.id ?? 0, b?.id ?? 0], {
        at,
        actor: 'maintenance',
      }),
    ).rejects.toMatchObject({ code: ErrorCode.Conflict });
    expect((await engine.mneme.stats()).total).toBe(2);
    expect(await engine.storage.maintenance.latestMemoryId()).toBe(b?.id);
  });

  it('reads vectors a page at a time, and only those of the indexed model', async () => {
    const engine = await openMaintenanceEngine({ embedder: model });
    engines.push(engine);
    const [withVector, without] = await engine.storage.memories.insert(
      [await mergedMemory('kestrel'), { ...(await mergedMemory('no vector')), embedding: null }],
      { at, actor: null },
    );
    const ids = [withVector?.id ?? 0, without?.id ?? 0];
    const vectors = await engine.storage.maintenance.vectors(ids, model.modelId);
    const [expected] = await model.embed(['kestrel'], 'document');
    expect([...vectors.keys()]).toEqual([withVector?.id]);
    expect([...(vectors.get(withVector?.id ?? 0) ?? [])]).toEqual([...(expected ?? [])]);
    expect((await engine.storage.maintenance.vectors(ids, 'another-model')).size).toBe(0);
    expect((await engine.storage.maintenance.recentWithVectors(model.modelId, 10)).map((memory) => memory.id)).toEqual([
      withVector?.id,
    ]);
  });

  it('lists decay candidates without pinned or archived memories', async () => {
    const engine = await openMaintenanceEngine();
    engines.push(engine);
    const [plain, pinned, archived] = await engine.storage.memories.insert(
      [
        { ...(await mergedMemory('plain')), embedding: null },
        { ...(await mergedMemory('pinned')), embedding: null, pinned: true },
        { ...(await mergedMemory('archived')), embedding: null },
      ],
      { at, actor: null },
    );
    await engine.storage.memories.archive([archived?.id ?? 0], { at, actor: null });
    expect(pinned?.pinned).toBe(true);
    expect(await engine.storage.maintenance.decayCandidates(0, 10)).toEqual([
      {
        id: plain?.id,
        strength: 1,
        salience: 1,
        importance: 0.5,
        pinned: false,
        lastAccessedAt: null,
        createdAt: '2024-06-01T10:00:00.000Z',
        decayedAt: null,
      },
    ]);
    expect(await engine.storage.maintenance.decayCandidates(plain?.id ?? 0, 10)).toEqual([]);
  });
  it('reads due memories through one index on the rule once decay built it, which another rule replaces, in pages that give each once', async () => {
    const engine = await openOnFile();
    const day = 24 * 60 * 60 * 1000;
    const inserted = await engine.storage.memories.insert(
      await Promise.all([0, 1, 2, 3].map(async (i) => ({ ...(await mergedMemory(`memory ${i}`)), embedding: null }))),
      { at, actor: null },
    );
    const ids = inserted.map((memory) => memory.id);
    await engine.storage.memories.touch(
      [1, 0.5, 0.2, 0.05].map((strength, i) => ({ id: ids[i] ?? 0, strength })),
      at,
    );
    const fades = { kind: 'fades', signal: 'strength', perDay: 0.5, below: 0.1, graceMs: 0 } as const;
    const indexes = () => {
      const raw = openSqliteDatabase({ path: engine.path });
      const names = raw
        .prepare<[], string>("SELECT name FROM sqlite_master WHERE name LIKE 'memories_decay_due_%' ORDER BY name")
        .pluck()
        .all();
      raw.close();
      return names;
    };
    const read = async (rule: Parameters<typeof engine.storage.maintenance.dueForDecay>[0], until: number) => {
      const seen: number[] = [];
      let after: { due: number; id: number } | null = null;
      for (;;) {
        const page = await engine.storage.maintenance.dueForDecay(rule, until, after, 1);
        const last = page.at(-1);
        if (!last) return seen;
        seen.push(...page.map((memory) => memory.id));
        after = { due: last.due, id: last.id };
      }
    };
    // Halving a day from 1, 0.5 and 0.2: below 0.1 after log2(10), log2(5) and 1 days; 0.05 is below already.
    // A read builds nothing (`stats` reads beside other writers and on read-only files): it scans until decay indexes.
    expect(await read(fades, at + 3.3 * day)).toEqual([ids[3], ids[2], ids[1]]);
    expect(indexes()).toEqual([]);
    await engine.storage.maintenance.indexDecayDue?.(fades);
    expect(await read(fades, at)).toEqual([ids[3]]);
    expect(await read(fades, at + 1.01 * day)).toEqual([ids[3], ids[2]]);
    expect(await read(fades, at + 3.3 * day)).toEqual([ids[3], ids[2], ids[1]]);
    const first = indexes();
    expect(first).toHaveLength(1);
    // Another half-life is another rule: its own index, built over the stored memories, replaces the first.
    const slower = { ...fades, perDay: 0.75 };
    await engine.storage.maintenance.indexDecayDue?.(slower);
    expect(await read(slower, at + 3.3 * day)).toEqual([ids[3], ids[2]]);
    expect(indexes()).toHaveLength(1);
    expect(indexes()).not.toEqual(first);
    // The index follows every write: a retrieval moves a memory's due time on, with no code of its own.
    await engine.storage.memories.touch([{ id: ids[2] ?? 0, strength: 1 }], at + 3 * day);
    expect(await read(slower, at + 3.3 * day)).toEqual([ids[3]]);
    await engine.storage.memories.archive([ids[3] ?? 0], { at, actor: null });
    expect(await read(slower, at + 3.3 * day)).toEqual([]);
    expect(await read({ kind: 'every', periodMs: 7 * day }, at + 7 * day)).toEqual([ids[0], ids[1]]);
  });
});
