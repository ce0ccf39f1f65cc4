import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import type { NewMemory } from '../src/storage/memory-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';

// Attack (session 10, wt-attack10): the related-memory search of extraction is given the owner word counts its
// caller's `termCounts` just read (`SqliteOwnerWords.countedBefore`, `searchText` with `postingsAtMost`), while
// this connection changed no row and no other connection committed. A commit by another process between the
// count and the search (the batch's section is not held yet at its first message: other calls run between
// them) must make the search count again: its BM25 weights are then those of the memories it searches.
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack10-counted-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const context = { at: Date.parse('2024-06-15T12:00:00.000Z'), actor: 'test' };

function personal(content: string, userId: string): NewMemory {
  return globalMemory(content, { scope: 'personal', owner: `user:${userId}`, userId });
}

describe("attack10: the counts a related-memory search reuses from its caller's count", () => {
  it("are read again after another connection's commit between the count and the search", async () => {
    const path = join(folder, 'other-commit.db');
    const first = createSqliteStorage({ path });
    const second = createSqliteStorage({ path });
    try {
      await first.memories.insert(
        [
          personal('Ann saw a kestrel over the dune', 'ann'),
          personal('Ann keeps herons and a kestrel feather', 'ann'),
          globalMemory('the heron of the pond'),
          personal('Bob saw a kestrel too', 'bob'),
        ],
        context,
      );
      const owners = ['global', 'user:ann'];
      const terms = ['kestrel', 'heron'];
      const search = { terms, owners, limit: 10 };
      expect((await first.memories.termCounts(terms, { owners, exactUpTo: 50 })).counts).toEqual([2, 2]);
      // Another process writes Ann's memories between the count and the search.
      await second.memories.insert(
        Array.from({ length: 6 }, (_, index) => personal(`Ann counted kestrel number ${index} at dusk`, 'ann')),
        context,
      );
      const reused = await first.memories.searchText({ ...search, postingsAtMost: 50 });
      const fresh = await first.memories.searchText(search);
      expect(reused).toEqual(fresh);
      expect(reused).toHaveLength(9);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('are read again for another owner list than the one counted', async () => {
    const path = join(folder, 'other-owners.db');
    const storage = createSqliteStorage({ path });
    try {
      await storage.memories.insert(
        [
          personal('Ann saw a kestrel over the dune', 'ann'),
          personal('Ann keeps a kestrel feather', 'ann'),
          personal('Ann saw a kestrel again', 'ann'),
          personal('Bob saw a kestrel and a heron', 'bob'),
          globalMemory('the heron of the pond'),
        ],
        context,
      );
      const terms = ['kestrel', 'heron'];
      await storage.memories.termCounts(terms, { owners: ['global', 'user:ann'], exactUpTo: 50 });
      const bob = { terms, owners: ['global', 'user:bob'], limit: 10 };
      const reused = await storage.memories.searchText({ ...bob, postingsAtMost: 50 });
      expect(reused).toEqual(await storage.memories.searchText(bob));
      expect(reused).toHaveLength(2);
    } finally {
      await storage.close();
    }
  });
});
