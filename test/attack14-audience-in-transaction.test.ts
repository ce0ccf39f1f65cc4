import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3, { type Database as SqliteDatabase } from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import {
  insertOwnedMemory,
  AUDIENCE_OWNERS as OWNERS,
  type AudienceOwnerName as OwnerName,
} from '../src/storage/sqlite/owned-memory.fixture.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { latestSchemaVersion, migrateSqlite } from '../src/storage/sqlite/sqlite-migrations.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';
import { createSqliteVisibleRanking, type SqliteVisibleRanking } from '../src/storage/sqlite/sqlite-visible-ranking.js';

/**
 * wt-attack14: the full-text leg's audience snapshot used inside the connection's own write transactions, each
 * such search stamped in the transaction so that a rollback drops it (ADR 25, 2026-12-03, session 14), attacked at
 * the storage level: nested savepoints rolled back in every order with searches between, better-sqlite3's nested
 * transaction functions, a whole transaction rolled back from inside a statement (`RAISE(ROLLBACK)`, from a trigger
 * of the caller's or one on the ranking's own temporary tables, so inside the search itself), a statement failing
 * with SQLITE_FULL, the snapshot first read inside a transaction that rolls back, another connection committing
 * during a deferred transaction, a ranking made while a transaction is open, a read-only file. After each step the
 * held search answers as the SQL join (a ranking with `snapshotAfter: -1` on the same connection), with the asked
 * owners' searchable memories only.
 */
const at = Date.parse('2024-06-15T12:00:00.000Z');
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack14-'));
const opened: SqliteDatabase[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) if (database.open) database.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;

function open(path = join(folder, `tx-${files++}.db`)): SqliteDatabase {
  const database = openSqliteDatabase({ path });
  opened.push(database);
  return database;
}

function insertInto(database: SqliteDatabase, name: OwnerName, content: string): number {
  return insertOwnedMemory(database, OWNERS[name], content);
}

function seed(database: SqliteDatabase, count = 32): void {
  const names = Object.keys(OWNERS) as OwnerName[];
  for (let index = 0; index < count; index++) {
    insertInto(database, names[index % names.length] as OwnerName, `a kestrel ${index % 3 ? 'and a wren' : ''}`);
  }
}

function rankings(database: SqliteDatabase, snapshotAfter = 0) {
  return {
    held: createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter }),
    reference: createSqliteVisibleRanking(database, createSqliteOwnerWords(database), { snapshotAfter: -1 }),
  };
}

const asked = [
  ['user:ana'],
  ['user:ben'],
  ['room:deck'],
  ['global'],
  ['user:ana', 'global'],
  ['user:ben', 'room:deck'],
];

/** Every search by the snapshot answers as the SQL join, with the owners' searchable memories only. */
function agree(
  database: SqliteDatabase,
  held: SqliteVisibleRanking,
  reference: SqliteVisibleRanking,
  step: string,
  mustHold = true,
) {
  for (const owners of asked) {
    for (const includeFaded of [false, true]) {
      for (const rare of [['kestrel'], ['wren', 'kestrel']]) {
        const search = { rare, common: [], owners, limit: 500, includeFaded };
        const hits = held.search(search);
        if (mustHold) expect(held.lastSearchHeld(), step).toBe(true);
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
          expect(owners, `${step}: memory ${hit.id} of ${row?.owner}`).toContain(row?.owner);
          expect(row?.archived === null || (includeFaded && row?.faded !== null)).toBe(true);
        }
      }
    }
  }
}

/** The memories of `owners` holding "kestrel" as the held ranking finds them (ids). */
function kestrels(ranking: SqliteVisibleRanking, owners: string[]): number[] {
  return ranking
    .search({ rare: ['kestrel'], common: [], owners, limit: 500, includeFaded: false })
    .map((hit) => hit.id);
}

function moveTo(database: SqliteDatabase, id: number, name: OwnerName): void {
  const [scope, user, owner] = OWNERS[name];
  database.prepare('UPDATE memories SET scope = ?, user_id = ?, owner = ? WHERE id = ?').run(scope, user, owner, id);
}

const firstOf = (database: SqliteDatabase, owner: string) =>
  database
    .prepare<[string], number>('SELECT id FROM memories WHERE owner = ? AND archived_at IS NULL ORDER BY id LIMIT 1')
    .pluck()
    .get(owner) as number;

describe('attack14: the audience snapshot inside its own connection’s write transactions (storage)', () => {
  it('answers as the join through nested savepoints rolled back in every order, searched between each step', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    const b = firstOf(database, 'user:ben');
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'ben');
    agree(database, held, reference, 'a to ben');
    database.exec('SAVEPOINT one');
    moveTo(database, b, 'ana');
    agree(database, held, reference, 'b to ana, in one');
    database.exec('SAVEPOINT two');
    moveTo(database, a, 'deck');
    database.exec(`UPDATE memories SET archived_at = ${at} WHERE id = ${b}`);
    agree(database, held, reference, 'a to deck, b archived, in two');
    database.exec('SAVEPOINT three');
    moveTo(database, a, 'global');
    agree(database, held, reference, 'a to global, in three');
    // Back to `three` (its move and the search after it undone), three still open.
    database.exec('ROLLBACK TO three');
    expect(kestrels(held, ['global'])).not.toContain(a);
    expect(kestrels(held, ['room:deck'])).toContain(a);
    agree(database, held, reference, 'rolled back to three');
    // Back to `two` without a search between: two's writes and the searches after them undone.
    database.exec('ROLLBACK TO two');
    expect(kestrels(held, ['room:deck'])).not.toContain(a);
    expect(kestrels(held, ['user:ben'])).toContain(a);
    expect(kestrels(held, ['user:ana'])).toContain(b);
    agree(database, held, reference, 'rolled back to two');
    // Back to `one`, then one's own write undone: b is ben's again.
    database.exec('ROLLBACK TO one');
    expect(kestrels(held, ['user:ana'])).not.toContain(b);
    expect(kestrels(held, ['user:ben'])).toEqual(expect.arrayContaining([a, b]));
    agree(database, held, reference, 'rolled back to one');
    // One's state written again, then undone again, then more writes in it, then released.
    moveTo(database, b, 'deck');
    agree(database, held, reference, 'b to deck');
    database.exec('ROLLBACK TO one');
    moveTo(database, a, 'ana');
    database.exec('RELEASE one');
    agree(database, held, reference, 'one released');
    database.exec('ROLLBACK');
    expect(kestrels(held, ['user:ana'])).toContain(a);
    expect(kestrels(held, ['user:ben'])).toContain(b);
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    agree(database, held, reference, 'transaction rolled back');
  });

  it('answers as the join when the search ran in a savepoint rolled back and the transaction then commits with no search between', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    database.exec('BEGIN IMMEDIATE');
    database.exec('SAVEPOINT step');
    moveTo(database, a, 'ben');
    expect(kestrels(held, ['user:ben'])).toContain(a);
    database.exec('ROLLBACK TO step');
    database.exec('RELEASE step');
    database.exec('COMMIT');
    // The next search runs outside any transaction, and finds the stamp the savepoint's rollback restored.
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    expect(kestrels(held, ['user:ana'])).toContain(a);
    agree(database, held, reference, 'committed');
  });

  it("answers as the join through better-sqlite3's nested transaction functions, an inner one failing and caught", () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    const b = firstOf(database, 'user:ben');
    const inner = database.transaction((id: number) => {
      moveTo(database, id, 'global');
      expect(kestrels(held, ['global'])).toContain(id);
      throw new Error('inner step failed');
    });
    database.transaction(() => {
      moveTo(database, b, 'deck');
      expect(() => inner(a)).toThrow('inner step failed');
      // The inner savepoint rolled back: a is ana's again, b still the room's.
      expect(kestrels(held, ['global'])).not.toContain(a);
      expect(kestrels(held, ['user:ana'])).toContain(a);
      expect(kestrels(held, ['room:deck'])).toContain(b);
      agree(database, held, reference, 'inside, after the inner failure');
      expect(() => inner(b)).toThrow('inner step failed');
    })();
    // Committed after an inner failure with no search after it.
    expect(kestrels(held, ['global'])).not.toContain(b);
    expect(kestrels(held, ['room:deck'])).toContain(b);
    agree(database, held, reference, 'committed');
    // The outer one failing too, after searches inside it.
    expect(() =>
      database.transaction(() => {
        moveTo(database, a, 'ben');
        expect(kestrels(held, ['user:ben'])).toContain(a);
        throw new Error('outer failed');
      })(),
    ).toThrow('outer failed');
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    agree(database, held, reference, 'outer rolled back');
  });

  it('answers as the join when a trigger of the caller’s rolls the whole transaction back from inside a statement (RAISE(ROLLBACK))', () => {
    const database = open();
    seed(database);
    database.exec(`CREATE TABLE boom (x INTEGER);
      CREATE TRIGGER boom_rolls_back BEFORE INSERT ON boom BEGIN SELECT RAISE(ROLLBACK, 'boom'); END;`);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'ben');
    const added = insertInto(database, 'ben', 'a kestrel ben never had');
    agree(database, held, reference, 'inside');
    expect(() => database.exec('INSERT INTO boom VALUES (1)')).toThrow('boom');
    expect(database.inTransaction).toBe(false);
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    expect(kestrels(held, ['user:ben'])).not.toContain(added);
    expect(kestrels(held, ['user:ana'])).toContain(a);
    agree(database, held, reference, 'rolled back by the trigger');
    // The same inside a savepoint of better-sqlite3's transaction function, the error caught outside it.
    expect(() =>
      database.transaction(() => {
        moveTo(database, a, 'deck');
        expect(kestrels(held, ['room:deck'])).toContain(a);
        database.exec('INSERT INTO boom VALUES (2)');
      })(),
    ).toThrow('boom');
    expect(kestrels(held, ['room:deck'])).not.toContain(a);
    agree(database, held, reference, 'rolled back by the trigger in a transaction function');
  });

  it('answers as the join when the search’s own writes (the record emptied, the stamp) fail and roll the transaction back', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    // The stamp's write fails, rolling the caller's transaction back, after the search patched the snapshot.
    database.exec(`CREATE TEMP TRIGGER attack_stamp BEFORE UPDATE ON mneme_audience_stamp
      WHEN (SELECT count(*) FROM temp.attack_armed) > 0 BEGIN SELECT RAISE(ROLLBACK, 'stamp refused'); END;
      CREATE TEMP TABLE attack_armed (x INTEGER);`);
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'ben');
    database.exec('INSERT INTO temp.attack_armed VALUES (1)');
    expect(() => kestrels(held, ['user:ben'])).toThrow('stamp refused');
    expect(database.inTransaction).toBe(false);
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    agree(database, held, reference, 'stamp refused');
    // The stamp's write silently skipped (RAISE(IGNORE)): the stamp never there, the snapshot not trusted.
    database.exec(`DROP TRIGGER temp.attack_stamp;
      CREATE TEMP TRIGGER attack_stamp BEFORE UPDATE ON mneme_audience_stamp
      WHEN (SELECT count(*) FROM temp.attack_armed) > 0 BEGIN SELECT RAISE(IGNORE); END;`);
    database.exec('BEGIN IMMEDIATE');
    database.exec('INSERT INTO temp.attack_armed VALUES (1)');
    moveTo(database, a, 'deck');
    expect(kestrels(held, ['room:deck'])).toContain(a);
    database.exec('ROLLBACK');
    expect(kestrels(held, ['room:deck'])).not.toContain(a);
    agree(database, held, reference, 'stamp skipped, rolled back');
    // The record's emptying fails inside the search (a snapshot held, brought up to date there).
    database.exec(`DROP TRIGGER temp.attack_stamp;
      CREATE TEMP TRIGGER attack_forget BEFORE DELETE ON mneme_audience_changes
      WHEN (SELECT count(*) FROM temp.attack_armed) > 0 BEGIN SELECT RAISE(ROLLBACK, 'forget refused'); END;`);
    database.exec('BEGIN IMMEDIATE');
    database.exec('INSERT INTO temp.attack_armed VALUES (1)');
    moveTo(database, a, 'global');
    expect(() => kestrels(held, ['global'])).toThrow('forget refused');
    expect(database.inTransaction).toBe(false);
    expect(kestrels(held, ['global'])).not.toContain(a);
    agree(database, held, reference, 'forget refused');
  });

  it('answers as the join when a write fails with SQLITE_FULL after a search inside the transaction', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    const pages = Number(database.pragma('page_count', { simple: true }));
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'ben');
    expect(kestrels(held, ['user:ben'])).toContain(a);
    database.pragma(`max_page_count = ${pages + 2}`);
    let full: unknown = null;
    try {
      for (let index = 0; index < 200; index++) insertInto(database, 'ana', `kestrel ${'x'.repeat(3000)} ${index}`);
    } catch (error) {
      full = error;
    }
    expect(String((full as { code?: string } | null)?.code)).toMatch(/SQLITE_FULL/);
    database.pragma('max_page_count = 1073741823');
    // Whether SQLite undid the statement or the whole transaction, the search answers as the join.
    agree(database, held, reference, 'after SQLITE_FULL');
    if (database.inTransaction) database.exec('ROLLBACK');
    expect(kestrels(held, ['user:ben'])).not.toContain(a);
    agree(database, held, reference, 'rolled back after SQLITE_FULL');
  });

  it('answers as the join when the snapshot is first read inside a transaction that then rolls back', () => {
    const database = open();
    seed(database);
    const { held, reference } = rankings(database, 2);
    const a = firstOf(database, 'user:ana');
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'ben');
    insertInto(database, 'deck', 'a deck kestrel not kept');
    const inside: boolean[] = [];
    for (let index = 0; index < 4; index++) {
      expect(kestrels(held, ['user:ben'])).toEqual(kestrels(reference, ['user:ben']));
      inside.push(held.lastSearchHeld());
    }
    // Read inside the transaction (the third quiet search).
    expect(inside).toEqual([false, false, true, true]);
    database.exec('ROLLBACK');
    for (let index = 0; index < 4; index++) {
      expect(kestrels(held, ['user:ben'])).not.toContain(a);
      expect(kestrels(held, ['user:ana'])).toContain(a);
    }
    agree(database, held, reference, 'rolled back');
  });

  it('answers as the join when another connection commits during its deferred transaction', () => {
    const path = join(folder, `deferred-${files++}.db`);
    const database = open(path);
    const other = open(path);
    seed(database);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'before');
    const a = firstOf(database, 'user:ana');
    const b = firstOf(database, 'user:ben');
    // A read transaction's searches see the file as it began; the other's commit is seen after it.
    database.exec('BEGIN');
    expect(kestrels(held, ['user:ana'])).toContain(a);
    moveTo(other, a, 'ben');
    expect(kestrels(held, ['user:ana'])).toContain(a);
    agree(database, held, reference, 'inside the read transaction');
    database.exec('COMMIT');
    expect(kestrels(held, ['user:ana'])).not.toContain(a);
    expect(kestrels(held, ['user:ben'])).toContain(a);
    agree(database, held, reference, 'after');
    // Begun before the other's commit, first read after it.
    database.exec('BEGIN');
    moveTo(other, b, 'deck');
    expect(kestrels(held, ['room:deck'])).toContain(b);
    agree(database, held, reference, 'first read after the other commit');
    database.exec('ROLLBACK');
    agree(database, held, reference, 'read transaction rolled back');
    // The other's commit between two write transactions of this connection, each searched.
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, b, 'ana');
    agree(database, held, reference, 'own write transaction');
    database.exec('COMMIT');
    moveTo(other, b, 'global');
    database.exec('BEGIN IMMEDIATE');
    expect(kestrels(held, ['user:ana'])).not.toContain(b);
    expect(kestrels(held, ['global'])).toContain(b);
    agree(database, held, reference, 'after the other, inside');
    database.exec('ROLLBACK');
  });

  it('answers as the join when made while a transaction is open (no temporary tables yet), then outside it', () => {
    const database = open();
    seed(database);
    database.exec('BEGIN IMMEDIATE');
    const { held, reference } = rankings(database);
    const a = firstOf(database, 'user:ana');
    moveTo(database, a, 'ben');
    agree(database, held, reference, 'inside, made there', false);
    expect(held.lastSearchHeld()).toBe(false);
    database.exec('ROLLBACK');
    agree(database, held, reference, 'outside');
    database.exec('BEGIN IMMEDIATE');
    moveTo(database, a, 'deck');
    agree(database, held, reference, 'inside, after the temporary tables were made');
    database.exec('ROLLBACK');
    agree(database, held, reference, 'rolled back');
  });

  it('is made on a connection opened read-only (its temporary tables made there), and searches it as the join', () => {
    const path = join(folder, `readonly-${files++}.db`);
    const writer = openSqliteDatabase({ path });
    seed(writer);
    moveTo(writer, firstOf(writer, 'user:ana'), 'ben');
    writer.close();
    const database = new BetterSqlite3(path, { readonly: true });
    opened.push(database);
    sqliteVec.load(database);
    expect(() => insertInto(database, 'ana', 'a kestrel')).toThrow(/readonly/i);
    const { held, reference } = rankings(database);
    agree(database, held, reference, 'read-only');
    database.exec('BEGIN');
    agree(database, held, reference, 'read-only, in a transaction');
    database.exec('COMMIT');
  });
  for (const number of [141, 142, 143, 144]) {
    it(`answers as the join through random writes, failing statements, RAISE(ROLLBACK), INSERT OR ROLLBACK, nested transaction functions, touches and another connection's commits (seed ${number})`, () => {
      const path = join(folder, `fuzz-${files++}.db`);
      const database = open(path);
      const other = open(path);
      seed(database, 8 + (number % 4) * 8);
      database.exec(`CREATE TABLE boom (x INTEGER);
        CREATE TRIGGER boom_rolls_back BEFORE INSERT ON boom BEGIN SELECT RAISE(ROLLBACK, 'boom'); END;`);
      const random = createSeededRandom(number);
      const { held, reference } = rankings(database, [0, 1, 3, 5][number % 4] as number);
      const names = Object.keys(OWNERS) as OwnerName[];
      const any = (writer: SqliteDatabase) => {
        const all = writer.prepare<[], number>('SELECT id FROM memories').pluck().all();
        return all[random.below(all.length)] ?? 1;
      };
      const writes: Array<(writer: SqliteDatabase) => void> = [
        (writer) =>
          insertInto(writer, names[random.below(names.length)] as OwnerName, `kestrel wren ${random.below(9)}`),
        (writer) => moveTo(writer, any(writer), names[random.below(names.length)] as OwnerName),
        (writer) => writer.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(any(writer)),
        (writer) =>
          writer.prepare(`UPDATE memories SET archived_at = ${at}, faded_at = ${at} WHERE id = ?`).run(any(writer)),
        (writer) =>
          writer.prepare('UPDATE memories SET archived_at = NULL, faded_at = NULL WHERE id = ?').run(any(writer)),
        (writer) =>
          writer.prepare('UPDATE memories SET content = ? WHERE id = ?').run('kestrel kestrel wren dune', any(writer)),
        (writer) => writer.prepare('DELETE FROM memories WHERE id = ?').run(any(writer)),
        // A statement that moves memories, then fails on a NOT NULL: undone whole, the transaction going on.
        (writer) => {
          const last = any(writer);
          const statement = `UPDATE memories SET owner = CASE WHEN id < ${last} THEN 'user:ben' ELSE NULL END,
            user_id = 'ben', scope = 'personal'`;
          if (writer.prepare('SELECT count(*) FROM memories').pluck().get() === 0) writer.exec(statement);
          else expect(() => writer.exec(statement)).toThrow(/NOT NULL|locked/);
        },
      ];
      // In a deferred transaction begun before another connection's commit, a write is refused (SQLITE_BUSY_SNAPSHOT).
      const busy = (error: unknown) => String((error as { code?: string }).code).startsWith('SQLITE_BUSY');
      const write = (writer: SqliteDatabase) => {
        try {
          (writes[random.below(writes.length)] as (writer: SqliteDatabase) => void)(writer);
        } catch (error) {
          if (!busy(error)) throw error;
        }
      };
      const search = (step: number) => {
        const asking = {
          rare: [['kestrel'], ['wren', 'kestrel'], ['dune']][random.below(3)] as string[],
          common: [],
          owners: asked[random.below(asked.length)] as string[],
          limit: 200,
          includeFaded: random.below(2) === 1,
          ...(random.below(6) === 0 ? { snapshot: false } : {}),
        };
        expect(held.search(asking), `step ${step}`).toEqual(reference.search(asking));
        if (database.inTransaction && held.lastSearchHeld()) heldInside++;
      };
      const savepoints: string[] = [];
      let heldInside = 0;
      let undone = 0;
      for (let step = 0; step < 900; step++) {
        const roll = random.below(24);
        if (roll < 7) write(database);
        else if (roll < 13) search(step);
        else if (roll === 13 && !database.inTransaction) {
          database.exec(random.below(3) === 0 ? 'BEGIN' : 'BEGIN IMMEDIATE');
          savepoints.length = 0;
        } else if (roll === 14) {
          savepoints.push(`s${step}`);
          database.exec(`SAVEPOINT s${step}`);
        } else if (roll === 15 && savepoints.length > 0 && database.inTransaction) {
          const name = savepoints.pop() as string;
          if (random.below(2) === 0) {
            database.exec(`ROLLBACK TO ${name}`);
            undone++;
          }
          database.exec(`RELEASE ${name}`);
        } else if (roll === 16 && database.inTransaction) {
          database.exec(random.below(2) === 0 ? 'COMMIT' : 'ROLLBACK');
          savepoints.length = 0;
        } else if (roll === 17 && database.inTransaction) {
          // The whole transaction rolled back from inside a statement.
          let error: unknown = null;
          try {
            database.exec('INSERT INTO boom VALUES (1)');
          } catch (thrown) {
            error = thrown;
          }
          if (!busy(error)) {
            expect(String(error)).toMatch('boom');
            expect(database.inTransaction).toBe(false);
            savepoints.length = 0;
            undone++;
          }
        } else if (roll === 18 && database.inTransaction) {
          // A conflict resolved by rolling the transaction back (an id already taken).
          const [scope, user, owner] = OWNERS[names[random.below(names.length)] as OwnerName];
          let error: unknown = null;
          try {
            database
              .prepare(`INSERT OR ROLLBACK INTO memories
                (id, content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
                 created_at, updated_at)
                VALUES (?, 'kestrel', NULL, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`)
              .run(any(database), scope, user, owner);
          } catch (thrown) {
            error = thrown;
          }
          expect(error).not.toBe(null);
          if (!busy(error)) {
            expect(database.inTransaction).toBe(false);
            savepoints.length = 0;
            undone++;
          }
        } else if (roll === 19) {
          // better-sqlite3's transaction function (a savepoint inside a transaction), failing after writes and a search.
          const fails = random.below(2) === 0;
          const work = database.transaction(() => {
            write(database);
            search(step);
            write(database);
            if (fails) throw new Error('step failed');
          });
          if (fails) {
            expect(() => work()).toThrow('step failed');
            undone++;
          } else work();
        } else if (roll === 20) {
          // Recall's touch.
          try {
            held.unchangedBy(() =>
              database.prepare('UPDATE memories SET access_count = access_count + 1 WHERE archived_at IS NULL').run(),
            );
          } catch (error) {
            if (!busy(error)) throw error;
          }
        } else if (roll >= 21) {
          // Another connection's commit: refused while this one holds the write lock.
          try {
            write(other);
          } catch (error) {
            expect(String((error as { code?: string }).code)).toMatch(/SQLITE_BUSY/);
          }
        }
      }
      if (database.inTransaction) database.exec('COMMIT');
      agree(database, held, reference, 'end', false);
      expect(heldInside).toBeGreaterThan(5);
      expect(undone).toBeGreaterThan(5);
    });
  }
  for (const from of [19, 20, 22]) {
    it(`answers as the join on a connection opened at schema ${from} whose ranking was made there, the same connection then migrated to the latest`, () => {
      const database = openSqliteDatabase({ path: join(folder, `migrate-${files++}.db`), migrateTo: from });
      opened.push(database);
      seed(database, 24);
      const { held, reference } = rankings(database);
      const temporary = () =>
        database
          .prepare<[], number>("SELECT count(*) FROM temp.sqlite_master WHERE name LIKE 'mneme_audience%'")
          .pluck()
          .get();
      // Made at once where the owner index has its columns (schema 20 on), at the first search otherwise.
      expect(temporary()).toBe(from >= 20 ? 5 : 0);
      if (from >= 20) agree(database, held, reference, `at ${from}`);
      expect(migrateSqlite(database)).toBe(latestSchemaVersion);
      const a = firstOf(database, 'user:ana');
      moveTo(database, a, 'ben');
      insertInto(database, 'deck', 'a deck kestrel after the migration');
      agree(database, held, reference, 'migrated', from >= 20);
      expect(temporary()).toBe(5);
      database.exec('BEGIN IMMEDIATE');
      moveTo(database, a, 'global');
      agree(database, held, reference, 'migrated, in a transaction');
      database.exec('ROLLBACK');
      expect(kestrels(held, ['user:ben'])).toContain(a);
      agree(database, held, reference, 'migrated, rolled back');
    });
  }
});
