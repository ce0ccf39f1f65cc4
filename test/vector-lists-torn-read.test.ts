import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';
import { TRAINING_STEPS } from '../src/storage/sqlite/sqlite-vector-lists.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-torn-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const DIMENSIONS = 128;

/**
 * The database as the lists see it, with one hook: `between` runs once, just before the `at`th call (from 1) of a
 * function of the database or of a statement it prepared, standing for another process that commits at that point.
 * Every call counts, whatever its name (`get`, `all`, `iterate`, `pluck`, `prepare`...), so a test that tries every
 * `at` from 1 to the calls a search makes puts the commit between every two of its statements, whichever tables
 * they read and in whatever order (session 9 read the owners by `get` instead of `all`, and a hook on `all` alone
 * never fired again; its reads of the ids before the owners made a hook after the first owners' read tear nothing).
 */
function interrupted(database: Database.Database, at: number, between: () => void) {
  let calls = 0;
  const tick = () => {
    calls++;
    if (calls === at) between();
  };
  const wrap = <T extends object>(target: T, prepared: boolean): T => {
    const proxy: T = new Proxy(target, {
      get(inner, key) {
        const value = Reflect.get(inner, key, inner);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          tick();
          const result = (value as (...a: unknown[]) => unknown).apply(inner, args);
          // A statement's configuration (`pluck()`, `raw()`...) returns the statement: the hooked one.
          if (result === inner) return proxy;
          return !prepared && key === 'prepare' ? wrap(result as Database.Statement, true) : result;
        };
      },
    });
    return proxy;
  };
  return { database: wrap(database, false), calls: () => calls };
}

function build(database: Database.Database, index: SqliteVectorIndex) {
  while (database.transaction(() => index.indexStep()).immediate());
}

/** Where a memory's code lies in the lists' vec0 table: its chunk, partition and slot. */
function where(database: Database.Database, id: number) {
  return database
    .prepare<[number], { chunk: number; part: number; slot: number }>(
      'SELECT c.chunk_id AS chunk, c.partition00 AS part, r.chunk_offset AS slot FROM memory_vector_list_bits_rowids r JOIN memory_vector_list_bits_chunks c ON c.chunk_id = r.chunk_id WHERE r.rowid = ?',
    )
    .get(id);
}

describe('the lists read into memory for linking (found by an attack, 2026-12-01)', () => {
  it("never answers Bob's neighbour search with Alice's memory when another process commits while the codes are read", () => {
    const path = join(folder, 'torn.db');
    const random = createSeededRandom(7);
    const gaussian = () => Float32Array.from({ length: DIMENSIONS }, () => random.normal());
    const options = { listMinVectors: 50, listSnapshotAfter: Number.POSITIVE_INFINITY };
    // 160 vectors of several owners (global and Bob's: 80, above the lists' minimum), then, in one list and band,
    // Alice's memory 5000, Bob's memory 5001 and Carol's 5002, all much like v: three slots side by side of one
    // chunk (Carol's keeps it when the other two leave: sqlite-vec deletes a chunk left empty).
    const writing = openSqliteDatabase({ path });
    writing.pragma('synchronous = OFF');
    const writer = createSqliteVectorIndex(writing, options);
    writer.configure({ model: 'm', dimensions: DIMENSIONS });
    const owners = ['global', 'user:alice', 'user:bob', 'user:carol'];
    writing.transaction(() => {
      for (let id = 1; id <= 160; id++)
        writer.put(id, owners[id % owners.length] ?? 'global', { model: 'm', vector: gaussian() });
    })();
    const v = gaussian();
    const near = (shift: number) => ({ model: 'm', vector: v.map((x) => x + shift) });
    // Alice's memory 5000 once its text is edited: still near v (cosine about 0.98), in another band.
    const turned = gaussian();
    const edited = { model: 'm', vector: v.map((x, index) => x + 0.2 * (turned[index] ?? 0)) };
    writing.transaction(() => {
      writer.put(5000, 'user:alice', near(1e-3));
      writer.put(5001, 'user:bob', near(0));
      writer.put(5002, 'user:carol', near(-2e-3));
    })();
    build(writing, writer);
    const slots = () => [where(writing, 5000), where(writing, 5001)];
    const before = slots();
    expect(where(writing, 5002)).toEqual({ ...before[0], slot: 2 });

    /**
     * Another process, in one transaction: Alice's memory 5000 is edited (its code moves to another band), Bob's
     * 5001 is forgotten, then Bob's new memory 6000 and Alice's new memory 6001, both much like v, take the two
     * slots they left (sqlite-vec gives a freed slot to the next insert): Bob's where Alice's was, and Alice's where
     * Bob's was. A read of a chunk's ids before the commit and its owners after it (or the other way round) gives
     * Bob an id of Alice's, of a memory much like v: 5000 or 6001.
     */
    const commit = () =>
      writing.transaction(() => {
        writer.put(5000, 'user:alice', edited);
        writer.remove([5001]);
        writer.put(6000, 'user:bob', near(-1e-3));
        writer.put(6001, 'user:alice', near(2e-3));
      })();
    /** The store as before the commit again (the same slots: 5000 and 5001 take back the two 6000 and 6001 leave). */
    const undo = () =>
      writing.transaction(() => {
        writer.remove([6000, 6001]);
        writer.put(5000, 'user:alice', near(1e-3));
        writer.put(5001, 'user:bob', near(0));
      })();

    const reading = openSqliteDatabase({ path });
    /** Bob's neighbours of v, the commit made before the `at`th call of the search (never: Infinity), then undone. */
    const search = (at: number) => {
      const hooked = interrupted(reading, at, commit);
      // The reading process reads the lists' codes into memory at its first neighbour search.
      const index = createSqliteVectorIndex(hooked.database, { listMinVectors: 50, listSnapshotAfter: 0 });
      const hits = index.searchNear(v, 'm', ['global', 'user:bob'], 10, 0.9).map((hit) => hit.id);
      if (at > hooked.calls()) return { hits, calls: hooked.calls() };
      if (at === 1) {
        // The premise: the slots are taken again crosswise, and 5000 is elsewhere.
        expect([where(writing, 6000), where(writing, 6001)]).toEqual(before);
        expect(where(writing, 5000)).not.toEqual(before[0]);
      }
      undo();
      return { hits, calls: hooked.calls() };
    };

    try {
      const whole = search(Number.POSITIVE_INFINITY);
      expect(whole.hits).toEqual([5001]);
      // Bob may see global and his own memories: before the commit 5001, after it 6000 (or neither when the commit
      // forgot 5001 after the codes were read, before its vector was), never Alice's 5000 or 6001.
      const seen = new Set<string>();
      for (let at = 1; at <= whole.calls; at++) {
        const { hits } = search(at);
        expect({ at, hits }).toEqual({ at, hits: expect.toBeOneOf([[5001], [6000], []]) });
        seen.add(JSON.stringify(hits));
      }
      // The commit landed before the search read anything (6000) and after it had read the codes (5001, or nothing
      // once the forgotten 5001 had no vector to rank), and each was undone.
      expect(seen.has('[6000]') && seen.size > 1).toBe(true);
      expect(slots()).toEqual(before);
    } finally {
      reading.close();
      writing.close();
    }
  });
});

describe("linking's first pass over the lists when another process switches them to a new training", () => {
  it('still finds an older near-duplicate when the switch commits between the reads of the first pass', () => {
    const template = join(folder, 'switch.db');
    const random = createSeededRandom(11);
    const gaussian = () => Float32Array.from({ length: DIMENSIONS }, () => random.normal());
    const options = { listMinVectors: 50, listSnapshotAfter: Number.POSITIVE_INFINITY };
    const setup = openSqliteDatabase({ path: template });
    const writer = createSqliteVectorIndex(setup, options);
    writer.configure({ model: 'm', dimensions: DIMENSIONS });
    const owners = ['global', 'user:alice', 'user:bob', 'user:carol'];
    const v = gaussian();
    // Bob's memory 5001 and its older near-duplicate 5000, among 160 vectors of several owners about 8 topics (few
    // bands a list: few chunks to read).
    const topics = Array.from({ length: 8 }, () => gaussian());
    const about = (id: number) => {
      const noise = gaussian();
      return (topics[id % topics.length] ?? noise).map((x, index) => x + 0.3 * (noise[index] ?? 0));
    };
    setup.transaction(() => {
      for (let id = 1; id <= 160; id++)
        writer.put(id, owners[id % owners.length] ?? 'global', { model: 'm', vector: about(id) });
      writer.put(5000, 'user:bob', { model: 'm', vector: v });
      writer.put(5001, 'user:bob', { model: 'm', vector: v.map((x) => x + 1e-3) });
    })();
    build(setup, writer);
    // The lists are complete; a new training (as when the store has grown) has run to its last step.
    setup.prepare('UPDATE vector_list_state SET trained_vectors = 1 WHERE id = 1').run();
    const steps = () =>
      setup.prepare<[], number | null>('SELECT training_steps FROM vector_list_state WHERE id = 1').pluck().get();
    while (steps() !== TRAINING_STEPS - 1) setup.transaction(() => writer.indexStep()).immediate();
    setup.close();

    /** Linking's search for 5001's older neighbours, the switch to the new lists committed before the `at`th call. */
    const search = (at: number) => {
      const path = join(folder, `switch-${at}.db`);
      copyFileSync(template, path);
      const writing = openSqliteDatabase({ path });
      writing.pragma('synchronous = OFF');
      const reading = openSqliteDatabase({ path });
      try {
        const other = createSqliteVectorIndex(writing, options);
        // The switch: the lists of the new training replace the old ones, every vector to be assigned again.
        const hooked = interrupted(reading, at, () => writing.transaction(() => other.indexStep()).immediate());
        const index = createSqliteVectorIndex(hooked.database, { listMinVectors: 50, listSnapshotAfter: 0 });
        const [hits] = index.searchNearOlder(
          [{ vector: v.map((x) => x + 1e-3), owners: ['global', 'user:bob'], olderThan: 5001 }],
          'm',
          10,
          0.9,
        );
        if (at === Number.POSITIVE_INFINITY) {
          writing.transaction(() => other.indexStep()).immediate();
          expect(writing.prepare('SELECT watermark FROM vector_list_state').pluck().get()).toBe(0);
        }
        return { ids: (hits ?? []).map((hit) => hit.id), calls: hooked.calls() };
      } finally {
        reading.close();
        writing.close();
        for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
      }
    };

    const whole = search(Number.POSITIVE_INFINITY);
    expect(whole.ids).toEqual([5000]);
    for (let at = 1; at <= whole.calls; at++) expect({ at, ids: search(at).ids }).toEqual({ at, ids: [5000] });
  });
});
