import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { insertOwnedMemory } from '../src/storage/sqlite/owned-memory.fixture.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';
import { createSqliteVisibleRanking, type SqliteVisibleRanking } from '../src/storage/sqlite/sqlite-visible-ranking.js';

/**
 * wt-attack13b: the full-text leg's audience snapshot brought up to date with its own connection's writes (temporary
 * triggers recording the memories changed; ADR 25, 2026-12-03, session 13), attacked at the storage level: schema
 * changes of the connection holding it, savepoints, statements failing half-way, a store growing from nothing, ids
 * below the lowest, a far id, `VACUUM`, `INSERT OR REPLACE`, two connections each writing between the other's
 * searches. After each write the held search answers as the SQL join (snapshotAfter -1) with the owners' memories only.
 */
const at = Date.parse('2024-06-15T12:00:00.000Z');
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack13b-'));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) if (database.open) database.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;

const OWNERS = {
  ana: ['personal', 'ana', 'user:ana'],
  ben: ['personal', 'ben', 'user:ben'],
  global: ['global', null, 'global'],
} as const;
type OwnerName = keyof typeof OWNERS;

function open(path = join(folder, `own-${files++}.db`)): Database.Database {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  return database;
}

function insertInto(database: Database.Database, name: OwnerName, content: string, id: number | null = null): number {
  return insertOwnedMemory(database, OWNERS[name], content, id);
}

function seed(database: Database.Database, count = 30): void {
  const names = Object.keys(OWNERS) as OwnerName[];
  for (let index = 0; index < count; index++) {
    insertInto(database, names[index % names.length] as OwnerName, `a kestrel ${index % 4 ? 'and a wren' : ''}`);
  }
}

function rankings(database: Database.Database) {
  return {
    held: createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter: 0 }),
    reference: createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter: -1 }),
  };
}

const asked = [['user:ana'], ['user:ben'], ['global'], ['user:ana', 'global'], ['user:ben', 'global']];

/** Every search by the snapshot answers as the SQL join, with the owners' searchable memories only. */
function agree(database: Database.Database, held: SqliteVisibleRanking, reference: SqliteVisibleRanking, step = '') {
  for (const owners of asked) {
    for (const includeFaded of [false, true]) {
      for (const rare of [['kestrel'], ['wren', 'kestrel']]) {
        const search = { rare, common: [], owners, limit: 500, includeFaded };
        const hits = held.search(search);
        expect(held.lastSearchHeld(), step).toBe(true);
        expect(hits, `${step}: ${owners.join(',')} ${includeFaded} ${rare.join(' ')}`).toEqual(
          reference.search(search),
        );
        for (const hit of hits) {
          const row = database
            .prepare<[number], { owner: string; archived: number | null; faded: number | null }>(
              'SELECT owner, archived_at AS archived, faded_at AS faded FROM memories WHERE id = ?',
            )
            .get(hit.id);
          expect(row, `${step}: memory ${hit.id} exists`).toBeDefined();
          expect(owners).toContain(row?.owner);
          expect(row?.archived === null || (includeFaded && row?.faded !== null)).toBe(true);
        }
      }
    }
  }
}

/** Rebuilds `memories` on `database` (a new table, the rows copied, the old one dropped, the new one renamed, its indexes and triggers made again): the way a migration changes a table SQLite cannot alter. */
function rebuildMemories(database: Database.Database): void {
  const table = database.prepare<[], string>("SELECT sql FROM sqlite_master WHERE name = 'memories'").pluck().get();
  const others = database
    .prepare<[], string>(
      "SELECT sql FROM main.sqlite_master WHERE tbl_name = 'memories' AND type IN ('index', 'trigger') AND sql IS NOT NULL",
    )
    .pluck()
    .all();
  database.pragma('foreign_keys = OFF');
  database.transaction(() => {
    database.exec((table as string).replace(/memories/, 'memories_rebuilt'));
    database.exec('INSERT INTO memories_rebuilt SELECT * FROM memories');
    database.exec('DROP TABLE memories');
    database.exec('ALTER TABLE memories_rebuilt RENAME TO memories');
    for (const sql of others) database.exec(sql);
  })();
  database.pragma('foreign_keys = ON');
}

describe("attack13b: the audience snapshot through its own connection's writes (storage)", () => {
  it('answers as the SQL join after its own connection rebuilt the memories table (the temporary triggers dropped with it)', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    rebuildMemories(database);
    // The next search finds the temporary triggers gone: by the join, the snapshot dropped, the triggers made again.
    held.search({ rare: ['kestrel'], common: [], owners: ['global'], limit: 500, includeFaded: false });
    expect(held.lastSearchHeld()).toBe(false);
    agree(database, held, reference, 'rebuilt');
    // Written after the rebuild: an ana memory moved to ben, and a new ana memory.
    const moved = database
      .prepare<[], number>("SELECT id FROM memories WHERE owner = 'user:ana' LIMIT 1")
      .pluck()
      .get();
    database.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?").run(moved);
    const added = insertInto(database, 'ana', 'a new kestrel of ana');
    agree(database, held, reference, 'moved and added');
    const ana = held.search({ rare: ['kestrel'], common: [], owners: ['user:ana'], limit: 500, includeFaded: false });
    expect(ana.map((hit) => hit.id)).not.toContain(moved);
    expect(ana.map((hit) => hit.id)).toContain(added);
  });

  it('keeps to a bounded size when its own connection writes a memory under a far id, and answers as the join', () => {
    const database = open();
    seed(database, 12);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const before = process.memoryUsage().arrayBuffers;
    const far = insertInto(database, 'ana', 'a far kestrel', 2 ** 26 - 5);
    const hits = held.search({ rare: ['kestrel'], common: [], owners: ['user:ana'], limit: 50, includeFaded: false });
    expect(hits.map((hit) => hit.id)).toContain(far);
    // Held whole, the arrays of ids up to 2^26 would take 512 MiB.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 2 ** 20);
    expect(
      held.search({ rare: ['kestrel'], common: [], owners: ['user:ana'], limit: 50, includeFaded: false }),
    ).toEqual(
      reference.search({ rare: ['kestrel'], common: [], owners: ['user:ana'], limit: 50, includeFaded: false }),
    );
  });

  it('answers as the join after savepoints released and rolled back, and a statement failing half-way', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    // A savepoint as the transaction, one inside it rolled back, then released.
    database.exec('SAVEPOINT outer_one');
    const kept = insertInto(database, 'ana', 'a kestrel kept');
    database.exec('SAVEPOINT inner_one');
    database.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?").run(kept);
    insertInto(database, 'ben', 'a kestrel rolled back');
    database.exec('ROLLBACK TO inner_one');
    database.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = 2`).run();
    database.exec('RELEASE outer_one');
    agree(database, held, reference, 'savepoints');
    // A statement that moves some memories, then fails (NOT NULL) and is undone whole; the transaction goes on.
    database.transaction(() => {
      expect(() =>
        database.exec(`UPDATE memories SET owner = CASE WHEN id < 20 THEN 'user:ben' ELSE NULL END`),
      ).toThrow();
      insertInto(database, 'global', 'a global kestrel');
    })();
    agree(database, held, reference, 'failed statement');
    // A transaction that fails after its writes: rolled back with the record of them.
    expect(() =>
      database.transaction(() => {
        database.exec("UPDATE memories SET owner = 'global', scope = 'global', user_id = NULL");
        throw new Error('half-way');
      })(),
    ).toThrow('half-way');
    agree(database, held, reference, 'rolled back');
  });

  it('grows from an empty store, and answers as the join when a memory below the lowest searchable one is restored', () => {
    const path = join(folder, `empty-${files++}.db`);
    const database = open(path);
    const other = open(path);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'empty');
    const first = insertInto(database, 'ana', 'the first kestrel');
    agree(database, held, reference, 'first');
    for (let index = 0; index < 40; index++) insertInto(database, index % 2 ? 'ben' : 'global', `kestrel ${index}`);
    agree(database, held, reference, 'grown');
    // The lowest ids archived, then another connection's commit: the snapshot is read again, from id 6.
    database.exec(`UPDATE memories SET archived_at = ${at} WHERE id <= 5`);
    agree(database, held, reference, 'archived');
    other.exec('UPDATE memories SET access_count = access_count + 1 WHERE id = 7');
    agree(database, held, reference, 'read again above the archived');
    database.prepare('UPDATE memories SET archived_at = NULL WHERE id = ?').run(first);
    agree(database, held, reference, 'restored below the lowest');
    database.exec(`UPDATE memories SET faded_at = ${at} WHERE id = 3`);
    agree(database, held, reference, 'faded below the lowest');
  });

  it("answers as the join after its own VACUUM, INSERT OR REPLACE of a memory's id, and a purged id taken again", () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    database.exec('DELETE FROM memories WHERE id > 25');
    database.exec('VACUUM');
    agree(database, held, reference, 'vacuum');
    expect(insertInto(database, 'ben', 'a kestrel of ben under a purged id')).toBe(26);
    agree(database, held, reference, 'id taken again');
    const [scope, user, owner] = OWNERS.ben;
    database
      .prepare(`INSERT OR REPLACE INTO memories
        (id, content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
         created_at, updated_at)
        VALUES (1, 'kestrel replaced', NULL, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`)
      .run(scope, user, owner);
    agree(database, held, reference, 'replaced');
  });

  it("answers as the join on two connections each writing between the other's searches", () => {
    const path = join(folder, `two-${files++}.db`);
    const one = open(path);
    const two = open(path);
    seed(one);
    const first = rankings(one);
    const second = rankings(two);
    for (let turn = 0; turn < 6; turn++) {
      agree(one, first.held, first.reference, `one ${turn}`);
      agree(two, second.held, second.reference, `two ${turn}`);
      const [writer, name] = turn % 2 ? [one, 'ana' as const] : [two, 'ben' as const];
      const added = insertInto(writer, name, `kestrel turn ${turn}`);
      writer
        .prepare("UPDATE memories SET owner = 'global', scope = 'global', user_id = NULL WHERE id = ?")
        .run(turn + 1);
      writer.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(added - 3);
    }
    agree(one, first.held, first.reference, 'one last');
    agree(two, second.held, second.reference, 'two last');
  });
});
