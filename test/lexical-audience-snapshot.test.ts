import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ownerKey, visibleOwners } from '../src/core/scope.js';
import type { Viewer } from '../src/core/types.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/storage.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

// The full-text leg's audience snapshot (ADR 25, 2026-12-02, session 10): a connection that searches holds the owner
// index in memory while nothing changed it. Two engines on one file: `reader` holds it from its first search, `writer`
// (another connection, another process in production) and the reader itself write between its recalls. Each recall's
// hits are the viewer's only, and the reader's full-text search answers as a third connection that never holds it.

const folder = mkdtempSync(join(tmpdir(), 'mneme-audience-e2e-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
const storages: Storage[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
  for (const storage of storages.splice(0)) await storage.close();
});

const ANA: Viewer = { userId: 'ana' };
const BEN: Viewer = { userId: 'ben' };
const EVERYONE: Viewer = {};
const VIEWERS = [ANA, BEN, EVERYONE];

async function world() {
  const path = join(folder, `world-${engines.length}-${Date.now()}.db`);
  const writer = await openMaintenanceEngine({ path });
  const reader = await openMaintenanceEngine({ path, textSnapshotAfter: 0 });
  const reference = createSqliteStorage({ path, textSnapshotAfter: -1 });
  engines.push(writer, reader);
  storages.push(reference);
  const seed = [
    ['ana', 'ana keeps a kestrel in the barn'],
    ['ana', 'the kestrel of ana hunts at dusk'],
    ['ben', 'ben saw a kestrel over the dune'],
    ['ben', 'ben counts wrens and one kestrel'],
    [null, 'a kestrel is a small falcon'],
    [null, 'wrens nest low in the hedge'],
  ] as const;
  const ids: number[] = [];
  for (const [user, content] of seed) {
    const memory = await writer.mneme.remember(
      user === null ? { content } : { content, scope: 'personal', userId: user },
    );
    ids.push(memory.id);
  }
  return { writer, reader, reference, ids };
}

/** What `viewer` recalls of `query` through the reader (touching): ids, each checked to be the viewer's to see. */
async function recalled(reader: MaintenanceEngine, viewer: Viewer, query = 'kestrel'): Promise<number[]> {
  reader.clock.advance(1000);
  const result = await reader.mneme.recall({ query, viewer, topK: 20 });
  const owners = visibleOwners(viewer);
  for (const hit of result.hits) expect(owners).toContain(ownerKey(hit.memory.scope, hit.memory));
  return result.hits.map((hit) => hit.memory.id).sort((left, right) => left - right);
}

/** The reader's full-text search (by its snapshot) answers as the reference connection's (by the SQL join), for every viewer. */
async function agree(reader: MaintenanceEngine, reference: Storage): Promise<void> {
  for (const viewer of VIEWERS) {
    for (const includeFaded of [false, true]) {
      for (const terms of [['kestrel'], ['kestrel', 'wren'], ['falcon', 'dusk', 'dune']]) {
        const search = { terms, owners: visibleOwners(viewer), limit: 50, includeFaded };
        expect(await reader.storage.memories.searchText(search)).toEqual(await reference.memories.searchText(search));
      }
    }
  }
}

describe('the full-text leg holds the owner index only while nothing changed it (ADR 25, session 10)', () => {
  it("a second connection's forget, restore, edit, purge and new memory are seen by the next recall of the first, for every viewer", async () => {
    const { writer, reader, reference, ids } = await world();
    const [anaKeeps, anaHunts, benSaw, , falcon] = ids as [number, number, number, number, number];
    expect(await recalled(reader, ANA)).toEqual(expect.arrayContaining([anaKeeps, anaHunts, falcon]));
    expect(await recalled(reader, BEN)).not.toContain(anaKeeps);
    await agree(reader, reference);

    await writer.mneme.forget(anaKeeps);
    expect(await recalled(reader, ANA)).not.toContain(anaKeeps);
    await agree(reader, reference);
    await writer.mneme.restore(anaKeeps);
    expect(await recalled(reader, ANA)).toContain(anaKeeps);
    await agree(reader, reference);
    await writer.mneme.update({ id: anaHunts, content: 'the falcon of ana hunts at dusk' });
    expect(await recalled(reader, ANA)).not.toContain(anaHunts);
    expect(await recalled(reader, ANA, 'falcon dusk')).toContain(anaHunts);
    await agree(reader, reference);

    const added = await writer.mneme.remember({
      content: 'ben names his kestrel Ash',
      scope: 'personal',
      userId: 'ben',
    });
    expect(await recalled(reader, BEN)).toContain(added.id);
    expect(await recalled(reader, ANA)).not.toContain(added.id);
    expect(await recalled(reader, EVERYONE)).not.toContain(added.id);
    await agree(reader, reference);

    await writer.mneme.purgeUser('ben');
    expect(await recalled(reader, BEN)).not.toContain(benSaw);
    expect(await recalled(reader, BEN)).not.toContain(added.id);
    await agree(reader, reference);
    // The purged memories' ids given again (the highest id is taken again): to ana's new memory.
    const again = await writer.mneme.remember({
      content: 'ana feeds the kestrel at noon',
      scope: 'personal',
      userId: 'ana',
    });
    expect(await recalled(reader, ANA)).toContain(again.id);
    expect(await recalled(reader, BEN)).not.toContain(again.id);
    await agree(reader, reference);
  });

  it("the reader's own writes of every kind are seen by its next recall, and a faded memory its recall revives is searched as active", async () => {
    const { reader, reference, ids } = await world();
    const [anaKeeps, , benSaw] = ids as [number, number, number];
    expect(await recalled(reader, ANA)).toContain(anaKeeps);
    const added = await reader.mneme.remember({ content: 'ana rings the kestrel', scope: 'personal', userId: 'ana' });
    expect(await recalled(reader, ANA)).toContain(added.id);
    expect(await recalled(reader, BEN)).not.toContain(added.id);
    await agree(reader, reference);
    await reader.mneme.forget(added.id);
    expect(await recalled(reader, ANA)).not.toContain(added.id);
    await agree(reader, reference);
    await reader.mneme.update({ id: anaKeeps, content: 'ana keeps a wren in the barn' });
    expect(await recalled(reader, ANA)).not.toContain(anaKeeps);
    await agree(reader, reference);
    await reader.mneme.purgeUser('ben');
    expect(await recalled(reader, BEN)).not.toContain(benSaw);
    await agree(reader, reference);

    // Faded (archived by decay, still searchable with includeFaded): a recall finds it and its touch revives it.
    const context = { at: reader.clock.now(), actor: 'test' };
    await reader.storage.memories.archive([anaKeeps], context, { fade: true });
    const active = { terms: ['wren'], owners: visibleOwners(ANA), limit: 50, includeFaded: false };
    expect((await reader.storage.memories.searchText(active)).map((hit) => hit.id)).not.toContain(anaKeeps);
    await agree(reader, reference);
    expect(await recalled(reader, ANA, 'wren barn')).toContain(anaKeeps);
    const [revived] = await reader.storage.memories.get([anaKeeps]);
    expect(revived?.fadedAt).toBeNull();
    expect((await reader.storage.memories.searchText(active)).map((hit) => hit.id)).toContain(anaKeeps);
    await agree(reader, reference);
  });
});
