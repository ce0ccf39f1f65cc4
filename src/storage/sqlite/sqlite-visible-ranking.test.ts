import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../../bench/seeded-random.js';
import { globalMemory } from '../global-memory.fixture.js';
import {
  insertOwnedMemory,
  AUDIENCE_OWNERS as OWNERS,
  type AudienceOwnerName as OwnerName,
} from './owned-memory.fixture.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { createSqliteMemoryStore } from './sqlite-memory-store.js';
import { createSqliteOwnerWords } from './sqlite-owner-words.js';
import { createSqliteVectorIndex } from './sqlite-vector-index.js';
import { createSqliteVisibleRanking, type SqliteVisibleRanking } from './sqlite-visible-ranking.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');

describe('SQLite visible ranking', () => {
  it('searches again after its first search ran in a transaction that was rolled back', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run('a kestrel over the field');
      insert.run('a kestrel, another kestrel');
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const search = () =>
        ranking.search({ rare: ['kestrel'], common: [], owners: ['global'], limit: 10, includeFaded: false });
      // A batch (extraction's, ADR 19) searches inside its transaction, then fails: rolled back.
      database.exec('BEGIN IMMEDIATE');
      const inside = search();
      database.exec('ROLLBACK');
      expect(inside.map((hit) => hit.id)).toEqual([2, 1]);
      expect(search()).toEqual(inside);
    } finally {
      database.close();
    }
  });

  it('keeps the best of many found memories as a full sort by score then id would, ties to the lower id', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      // Memories of three lengths and three frequencies of the word, many alike (equal scores).
      const shapes = ['a kestrel', 'a kestrel over the long field', 'kestrel kestrel kestrel'];
      for (let index = 0; index < 120; index++) insert.run(`${shapes[(index * 7) % 3]} ${index % 2 ? 'dune' : ''}`);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const search = (limit: number) =>
        ranking.search({ rare: ['kestrel', 'dune'], common: [], owners: ['global'], limit, includeFaded: false });
      const all = search(1000);
      expect(all).toHaveLength(120);
      const sorted = [...all].sort((left, right) => right.score - left.score || left.id - right.id);
      expect(all).toEqual(sorted);
      for (const limit of [0, 1, 5, 7, 40, 119, 120]) expect(search(limit)).toEqual(sorted.slice(0, limit));
      expect(new Set(all.map((hit) => hit.score)).size).toBeLessThan(10);
    } finally {
      database.close();
    }
  });

  it('ranks a memory whose id or length does not fit a packed word row (id 2^32 or more, length 2^21 or more) by BM25 all the same', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[number | null, string]>(`INSERT INTO memories
          (id, content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, ?, NULL, 'fact', 'semantic', 'global', NULL, 'global', 'manual', 0.5, ${at}, ${at}, ${at})`);
      insert.run(null, 'a kestrel over the field');
      insert.run(null, 'kestrel kestrel');
      for (let index = 0; index < 4; index++) insert.run(null, 'a wren in the hedge');
      insert.run(2 ** 32 + 5, 'one kestrel and a small wren');
      // A length past 2^21 tokens (the column as a copy could hold it; content is at most 10,000 characters).
      database.prepare('UPDATE memories SET tokens = ? WHERE id = 2').run(2 ** 21 + 3);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const hits = ranking.search({
        rare: ['kestrel'],
        common: [],
        owners: ['global'],
        limit: 10,
        includeFaded: false,
      });
      // BM25 over the owner's 7 memories of 33 tokens (the word counts, which the UPDATE left alone).
      const average = 33 / 7;
      const idf = Math.log((7 - 3 + 0.5) / (3 + 0.5));
      const bm25 = (times: number, length: number) =>
        (idf * (times * 2.2)) / (times + 1.2 * (1 - 0.75 + (0.75 * length) / average));
      expect(hits.map((hit) => hit.id)).toEqual([1, 2 ** 32 + 5, 2]);
      expect(hits.map((hit) => hit.score)).toEqual([bm25(1, 5), bm25(1, 6), bm25(2, 2 ** 21 + 3)]);
    } finally {
      database.close();
    }
  });

  it('finds the same memories in the same order seeking each occurrence by id alone (seekById), and none of an owner not asked', () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const insert = database.prepare<[string, string, string | null, string]>(`INSERT INTO memories
          (content, search_context, category, sector, scope, user_id, owner, source, importance, valid_from,
           created_at, updated_at)
        VALUES (?, NULL, 'fact', 'semantic', ?, ?, ?, 'manual', 0.5, ${at}, ${at}, ${at})`);
      const owners = [
        ['personal', 'ana', 'user:ana'],
        ['personal', 'ben', 'user:ben'],
        ['room', null, 'room:deck'],
        ['global', null, 'global'],
      ] as const;
      const texts = ['a kestrel', 'kestrel and wren', 'wren wren kestrel over the dune', 'a dune', 'the long dune'];
      for (let index = 0; index < 80; index++) {
        const [scope, user, owner] = owners[(index * 3) % owners.length] as (typeof owners)[number];
        insert.run(`${texts[index % texts.length]} ${index % 7 === 0 ? 'kestrel' : ''}`, scope, user, owner);
      }
      insert.run('a kestrel ben keeps', 'personal', 'ben', 'user:ben');
      // Archived, faded (archived and faded: ADR 9) and active memories of every owner.
      database.exec(`UPDATE memories SET archived_at = ${at} WHERE id % 5 = 0;
        UPDATE memories SET archived_at = ${at}, faded_at = ${at} WHERE id % 11 = 0`);
      const ranking = createSqliteVisibleRanking(database, createSqliteOwnerWords(database));
      const asked = [
        ['user:ana', 'room:deck', 'global'],
        ['user:ben', 'room:deck', 'global'],
        ['user:ana'],
        ['global'],
      ];
      for (const ownersAsked of asked) {
        for (const includeFaded of [false, true]) {
          for (const rare of [['kestrel'], ['kestrel', 'wren'], ['dune', 'wren', 'kestrel']]) {
            const search = (seekById: boolean) =>
              ranking.search({ rare, common: [], owners: ownersAsked, limit: 200, includeFaded, seekById });
            const bySeek = search(true);
            expect(bySeek).toEqual(search(false));
            expect(bySeek.length).toBeGreaterThan(0);
            const found = database
              .prepare<[string], { owner: string; archived: number | null; faded: number | null }>(
                `SELECT owner, archived_at AS archived, faded_at AS faded FROM memories
                  WHERE id IN (SELECT value FROM json_each(?))`,
              )
              .all(JSON.stringify(bySeek.map((hit) => hit.id)));
            for (const row of found) {
              expect(ownersAsked).toContain(row.owner);
              expect(row.archived === null || (includeFaded && row.faded !== null)).toBe(true);
            }
          }
        }
      }
    } finally {
      database.close();
    }
  });
});

describe('SQLite visible ranking: the audience snapshot (ADR 25, session 10)', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-audience-'));
  const opened: Database.Database[] = [];
  afterEach(() => {
    for (const database of opened.splice(0)) database.close();
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  let files = 0;

  /** Two connections to one new file (a reader that searches, and another), 60 memories of four owner keys. */
  function twoConnections() {
    const path = join(folder, `audience-${files++}.db`);
    const reader = openSqliteDatabase({ path });
    const other = openSqliteDatabase({ path });
    opened.push(reader, other);
    const texts = ['a kestrel', 'kestrel and wren', 'wren wren kestrel over the dune', 'a dune', 'the long dune'];
    const names = Object.keys(OWNERS) as OwnerName[];
    for (let index = 0; index < 60; index++) {
      const text = `${texts[index % texts.length]} ${index % 7 === 0 ? 'kestrel' : ''}`;
      insertInto(other, names[(index * 3) % names.length] as OwnerName, text);
    }
    other.exec(`UPDATE memories SET archived_at = ${at} WHERE id % 9 = 0;
      UPDATE memories SET archived_at = ${at}, faded_at = ${at} WHERE id % 13 = 0`);
    return { reader, other };
  }

  function insertInto(database: Database.Database, name: OwnerName, content: string, id: number | null = null): number {
    return insertOwnedMemory(database, OWNERS[name], content, id);
  }

  const asked = [['user:ana', 'room:deck', 'global'], ['user:ben', 'global'], ['user:ana'], ['global'], ['user:zoe']];
  const words = [['kestrel'], ['kestrel', 'wren'], ['dune', 'wren', 'kestrel']];

  /** Every search by the snapshot (`held`) answers as the SQL join (`reference`), and only with memories of the owners asked. */
  function agree(reader: Database.Database, held: SqliteVisibleRanking, reference: SqliteVisibleRanking): void {
    for (const owners of asked) {
      for (const includeFaded of [false, true]) {
        for (const rare of words) {
          const search = { rare, common: [], owners, limit: 200, includeFaded };
          const hits = held.search(search);
          expect(held.lastSearchHeld()).toBe(true);
          expect(hits).toEqual(reference.search(search));
          expect(reference.lastSearchHeld()).toBe(false);
          const found = reader
            .prepare<[string], { owner: string; archived: number | null; faded: number | null }>(
              `SELECT owner, archived_at AS archived, faded_at AS faded FROM memories
                WHERE id IN (SELECT value FROM json_each(?))`,
            )
            .all(JSON.stringify(hits.map((hit) => hit.id)));
          expect(found).toHaveLength(hits.length);
          for (const row of found) {
            expect(owners).toContain(row.owner);
            expect(row.archived === null || (includeFaded && row.faded !== null)).toBe(true);
          }
        }
      }
    }
  }

  /** The ids `owners` find for `kestrel` by the snapshot. */
  function kestrels(held: SqliteVisibleRanking, owners: string[], includeFaded = false): number[] {
    return held
      .search({ rare: ['kestrel'], common: [], owners, limit: 500, includeFaded })
      .map((hit) => hit.id)
      .sort((left, right) => left - right);
  }

  /** Every kind of write to a memory, in turn, by `writer`; after each, both searches agree. */
  function writeEveryKind(
    writer: Database.Database,
    reader: Database.Database,
    held: SqliteVisibleRanking,
    reference: SqliteVisibleRanking,
  ): void {
    agree(reader, held, reference);
    // Added: found at once, by its owner only.
    const added = insertInto(writer, 'ana', 'a kestrel ana just saw');
    expect(kestrels(held, ['user:ana'])).toContain(added);
    expect(kestrels(held, ['user:ben', 'global'])).not.toContain(added);
    agree(reader, held, reference);
    // Archived (forgotten), then faded, then restored.
    writer.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(added);
    expect(kestrels(held, ['user:ana'])).not.toContain(added);
    agree(reader, held, reference);
    writer.prepare(`UPDATE memories SET faded_at = ${at} WHERE id = ?`).run(added);
    expect(kestrels(held, ['user:ana'])).not.toContain(added);
    expect(kestrels(held, ['user:ana'], true)).toContain(added);
    agree(reader, held, reference);
    writer.prepare('UPDATE memories SET archived_at = NULL, faded_at = NULL WHERE id = ?').run(added);
    expect(kestrels(held, ['user:ana'])).toContain(added);
    agree(reader, held, reference);
    // Moved to another owner key.
    writer
      .prepare("UPDATE memories SET scope = 'personal', user_id = 'ben', owner = 'user:ben' WHERE id = ?")
      .run(added);
    expect(kestrels(held, ['user:ana'])).not.toContain(added);
    expect(kestrels(held, ['user:ben'])).toContain(added);
    agree(reader, held, reference);
    // Its text (its length and the word's frequency) changed.
    writer
      .prepare('UPDATE memories SET content = ? WHERE id = ?')
      .run('kestrel kestrel kestrel in a long, long field', added);
    agree(reader, held, reference);
    // Purged, and its id given to another owner's new memory (the highest id is taken again).
    writer.prepare('DELETE FROM memories WHERE id = ?').run(added);
    expect(kestrels(held, ['user:ben'])).not.toContain(added);
    agree(reader, held, reference);
    expect(insertInto(writer, 'deck', 'the deck kestrel', added)).toBe(added);
    expect(kestrels(held, ['user:ben'])).not.toContain(added);
    expect(kestrels(held, ['room:deck'])).toContain(added);
    agree(reader, held, reference);
    // Many at once, in one transaction.
    writer.transaction(() => {
      writer.exec(`UPDATE memories SET archived_at = ${at} WHERE id % 4 = 1 AND archived_at IS NULL`);
      writer.exec("UPDATE memories SET owner = 'global', scope = 'global', user_id = NULL WHERE id % 5 = 2");
      for (let index = 0; index < 5; index++) insertInto(writer, 'ben', `kestrel wren ${index}`);
    })();
    agree(reader, held, reference);
  }

  it("answers as the SQL join after every kind of write by another connection between two searches (forget, fade, restore, move, edit, purge, add), never with another owner's memory", () => {
    const { reader, other } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 0 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    writeEveryKind(other, reader, held, reference);
  });

  it('answers as the SQL join after every kind of write by its own connection, inside its write transactions too', () => {
    const { reader } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 0 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    writeEveryKind(reader, reader, held, reference);
    // Every kind of write again, each inside one write transaction of the connection's (extraction's batch).
    reader.exec('BEGIN IMMEDIATE');
    writeEveryKind(reader, reader, held, reference);
    reader.exec('COMMIT');
    agree(reader, held, reference);
    // Inside a write transaction the snapshot sees the transaction's own writes, and not once it rolled back.
    reader.exec('BEGIN IMMEDIATE');
    const added = insertInto(reader, 'ana', 'a kestrel not committed');
    expect(kestrels(held, ['user:ana'])).toContain(added);
    expect(held.lastSearchHeld()).toBe(true);
    reader.exec('ROLLBACK');
    expect(kestrels(held, ['user:ana'])).not.toContain(added);
    agree(reader, held, reference);
  });

  it("drops what a search in a write transaction brought into the snapshot when the transaction or a savepoint rolls back: a moved memory never shown to its new owner's viewer, nor hidden from its own", () => {
    const { reader } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 0 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    agree(reader, held, reference);
    const moved = kestrels(held, ['user:ana'])[0] as number;
    const move = reader.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?");
    const movedTo = (owner: string) => kestrels(held, [owner]).includes(moved);
    // The whole transaction rolled back after a search inside it saw the move.
    reader.exec('BEGIN IMMEDIATE');
    move.run(moved);
    expect([movedTo('user:ana'), movedTo('user:ben'), held.lastSearchHeld()]).toEqual([false, true, true]);
    reader.exec('ROLLBACK');
    expect([movedTo('user:ana'), movedTo('user:ben')]).toEqual([true, false]);
    agree(reader, held, reference);
    // Rolled back to a savepoint, the transaction going on: searched again inside it, then committed.
    reader.exec('BEGIN IMMEDIATE');
    const added = insertInto(reader, 'deck', 'a deck kestrel before the savepoint');
    reader.exec('SAVEPOINT step');
    move.run(moved);
    expect([movedTo('user:ana'), movedTo('user:ben')]).toEqual([false, true]);
    reader.exec('ROLLBACK TO step');
    reader.exec('RELEASE step');
    expect([movedTo('user:ana'), movedTo('user:ben')]).toEqual([true, false]);
    expect(kestrels(held, ['room:deck'])).toContain(added);
    agree(reader, held, reference);
    reader.exec('COMMIT');
    expect([movedTo('user:ana'), movedTo('user:ben')]).toEqual([true, false]);
    expect(kestrels(held, ['room:deck'])).toContain(added);
    agree(reader, held, reference);
    // Committed: the snapshot kept through the commit (no read again) answers as the join.
    reader.exec('BEGIN IMMEDIATE');
    move.run(moved);
    expect(movedTo('user:ben')).toBe(true);
    reader.exec('COMMIT');
    expect([movedTo('user:ana'), movedTo('user:ben'), held.lastSearchHeld()]).toEqual([false, true, true]);
    agree(reader, held, reference);
  });

  it('records no changed memory before it read a snapshot, and answers as the join when the transaction that read the first one rolls back', () => {
    const { reader } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 1 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    const recorded = reader.prepare<[], number>('SELECT count(*) FROM temp.mneme_audience_changes').pluck();
    // A connection that only writes (an import) keeps no record of its writes.
    for (let index = 0; index < 50; index++) insertInto(reader, 'ben', `kestrel ${index}`);
    expect(recorded.get()).toBe(0);
    // The first snapshot read inside a write transaction, which then rolls back with the start of the record.
    const moved = kestrels(reference, ['user:ana'])[0] as number;
    reader.exec('BEGIN IMMEDIATE');
    expect([kestrels(held, ['global']), held.lastSearchHeld()]).toEqual([kestrels(reference, ['global']), false]);
    expect([kestrels(held, ['global']), held.lastSearchHeld()]).toEqual([kestrels(reference, ['global']), true]);
    insertInto(reader, 'ana', 'an ana kestrel');
    expect(recorded.get()).toBe(1);
    reader.exec('ROLLBACK');
    expect(recorded.get()).toBe(0);
    // Unrecorded (the record was rolled back), the move must not reach a snapshot read before it.
    reader.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?").run(moved);
    expect(recorded.get()).toBe(0);
    for (let search = 0; search < 3; search++) {
      expect(kestrels(held, ['user:ana'])).toEqual(kestrels(reference, ['user:ana']));
      expect(kestrels(held, ['user:ben'])).toEqual(kestrels(reference, ['user:ben']));
    }
    expect(kestrels(held, ['user:ben'])).toContain(moved);
    expect(held.lastSearchHeld()).toBe(true);
    // Holding a snapshot read outside a transaction, its writes are recorded until the next search.
    insertInto(reader, 'deck', 'a deck kestrel');
    expect(recorded.get()).toBe(1);
    agree(reader, held, reference);
    expect(recorded.get()).toBe(0);
  });

  it('answers as the SQL join through random writes, searches, commits and rollbacks of its own write transactions and savepoints', () => {
    const { reader, other } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 3 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    const random = createSeededRandom(14);
    const names = Object.keys(OWNERS) as OwnerName[];
    const ids = () => reader.prepare<[], number>('SELECT id FROM memories').pluck().all();
    const any = () => {
      const all = ids();
      return all[random.below(all.length)] ?? 1;
    };
    const writes: Array<(writer: Database.Database) => void> = [
      (writer) => insertInto(writer, names[random.below(names.length)] as OwnerName, `kestrel wren ${random.below(9)}`),
      (writer) => {
        const [scope, user, owner] = OWNERS[names[random.below(names.length)] as OwnerName];
        writer
          .prepare('UPDATE memories SET scope = ?, user_id = ?, owner = ? WHERE id = ?')
          .run(scope, user, owner, any());
      },
      (writer) => writer.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(any()),
      (writer) => writer.prepare(`UPDATE memories SET archived_at = ${at}, faded_at = ${at} WHERE id = ?`).run(any()),
      (writer) => writer.prepare('UPDATE memories SET archived_at = NULL, faded_at = NULL WHERE id = ?').run(any()),
      (writer) => writer.prepare('UPDATE memories SET content = ? WHERE id = ?').run('kestrel kestrel dune', any()),
      (writer) => writer.prepare('DELETE FROM memories WHERE id = ?').run(any()),
    ];
    let inTransaction = false;
    const savepoints: string[] = [];
    let heldInside = 0;
    let rolledBack = 0;
    for (let step = 0; step < 600; step++) {
      const roll = random.below(20);
      if (roll < 8) {
        (writes[random.below(writes.length)] as (writer: Database.Database) => void)(reader);
      } else if (roll < 13) {
        const search = {
          rare: words[random.below(words.length)] as string[],
          common: [],
          owners: asked[random.below(asked.length)] as string[],
          limit: 200,
          includeFaded: random.below(2) === 1,
        };
        expect(held.search(search)).toEqual(reference.search(search));
        if (inTransaction && held.lastSearchHeld()) heldInside++;
      } else if (roll === 13 && !inTransaction) {
        reader.exec('BEGIN IMMEDIATE');
        inTransaction = true;
      } else if (roll === 14 && inTransaction) {
        savepoints.push(`s${step}`);
        reader.exec(`SAVEPOINT s${step}`);
      } else if (roll === 15 && savepoints.length > 0) {
        const name = savepoints.pop() as string;
        if (random.below(2) === 0) {
          reader.exec(`ROLLBACK TO ${name}`);
          rolledBack++;
        }
        reader.exec(`RELEASE ${name}`);
      } else if (roll === 16 && inTransaction) {
        const commit = random.below(2) === 0;
        reader.exec(commit ? 'COMMIT' : 'ROLLBACK');
        if (!commit) rolledBack++;
        inTransaction = false;
        savepoints.length = 0;
      } else if (roll === 17 && !inTransaction) {
        (writes[random.below(writes.length)] as (writer: Database.Database) => void)(other);
      }
    }
    if (inTransaction) reader.exec('COMMIT');
    for (const owners of asked) expect(kestrels(held, owners, true)).toEqual(kestrels(reference, owners, true));
    // The snapshot answered searches inside the transactions, and some were rolled back: tested where it is used.
    expect(heldInside).toBeGreaterThan(20);
    expect(rolledBack).toBeGreaterThan(5);
  });

  it("is read after the quiet searches, kept through its own connection's writes and another's (brought up to date), and read later after it was dropped unused", () => {
    const { reader, other } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 2 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    const heldAfter = () => {
      kestrels(held, ['global']);
      return held.lastSearchHeld();
    };
    // Two quiet searches, then the snapshot.
    expect([heldAfter(), heldAfter(), heldAfter(), heldAfter()]).toEqual([false, false, true, true]);
    const touch = reader.prepare('UPDATE memories SET access_count = access_count + 1 WHERE id IN (1, 2, 3)');
    held.unchangedBy(() => touch.run());
    expect(heldAfter()).toBe(true);
    // The same write not told to be a touch, and writes of what the owner index holds: kept, up to date.
    touch.run();
    expect(heldAfter()).toBe(true);
    const found = kestrels(held, ['global']);
    const first = found[0] as number;
    reader.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(first);
    const added = insertInto(reader, 'global', 'a global kestrel');
    expect(kestrels(held, ['global'])).toEqual([...found.slice(1), added]);
    expect(held.lastSearchHeld()).toBe(true);
    agree(reader, held, reference);
    // Another connection's commits (ADR 27): a touch changes nothing the snapshot holds, an archive and a new memory
    // are brought in from the record of changed memories; kept.
    other.exec('UPDATE memories SET access_count = access_count + 1 WHERE id = 4');
    expect(heldAfter()).toBe(true);
    const before = kestrels(held, ['global']);
    other.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(before[0]);
    const addedByOther = insertInto(other, 'global', 'a kestrel of the other connection');
    expect(kestrels(held, ['global'])).toEqual([...before.slice(1), addedByOther]);
    expect(held.lastSearchHeld()).toBe(true);
    agree(reader, held, reference);
    // More memories changed by another connection than the record brings it up to date with: dropped, and read again
    // after 2 quiet searches (it served enough to pay back); dropped again after fewer, the next one is read after 4.
    const manyByOther = (first: number) =>
      other.transaction(() => {
        for (let index = first; index < first + 4_097; index++) insertInto(other, 'deck', `dune ${index}`);
      })();
    manyByOther(0);
    expect([heldAfter(), heldAfter(), heldAfter(), heldAfter()]).toEqual([false, false, true, true]);
    manyByOther(5_000);
    expect([heldAfter(), heldAfter(), heldAfter(), heldAfter(), heldAfter(), heldAfter()]).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
    ]);
    // More memories changed by its own writes than a search brings it up to date with: read again.
    reader.transaction(() => {
      for (let index = 0; index < 4_097; index++) insertInto(reader, 'ben', `kestrel ${index}`);
    })();
    expect(heldAfter()).toBe(false);
    expect(kestrels(held, ['user:ben'])).toEqual(kestrels(reference, ['user:ben']));
  });

  it("brings the snapshot up to date with its own writes in the search's read transaction while another connection holds the write lock, and not with a write rolled back", () => {
    const { reader, other } = twoConnections();
    const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 0 });
    const reference = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
    agree(reader, held, reference);
    const added = insertInto(reader, 'ana', 'an ana kestrel');
    other.exec('BEGIN IMMEDIATE');
    try {
      expect(kestrels(held, ['user:ana'])).toContain(added);
      expect(held.lastSearchHeld()).toBe(true);
    } finally {
      other.exec('ROLLBACK');
    }
    // A move to another owner, rolled back with the record of it: the snapshot keeps the memory where it is.
    expect(() =>
      reader.transaction(() => {
        reader.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?").run(added);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(kestrels(held, ['user:ana'])).toContain(added);
    expect(kestrels(held, ['user:ben'])).not.toContain(added);
    expect(held.lastSearchHeld()).toBe(true);
    agree(reader, held, reference);
  });
});

describe("SQLite full-text search of some owners' memories", () => {
  it('runs no full-text statement for a search whose words no memory the owners may see holds, and finds nothing', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const store = createSqliteMemoryStore(database, createSqliteVectorIndex(database));
      await store.insert(
        [
          globalMemory('a kestrel over the field'),
          globalMemory('a heron by the pond', { scope: 'personal', owner: 'user:bob', userId: 'bob' }),
        ],
        { at, actor: null },
      );
      // Every statement the store prepares from here on; the full-text ones name the index's table.
      const prepared: string[] = [];
      const prepare = database.prepare.bind(database);
      database.prepare = ((sql: string) => {
        prepared.push(sql);
        return prepare(sql);
      }) as typeof database.prepare;
      const fullText = () => prepared.filter((sql) => /memories_fts(?!_)|memories_fts_instances/.test(sql));
      // "heron" is only in bob's memory, "qv0" in none: alice's viewer (and a word no memory holds) finds nothing.
      for (const terms of [['heron'], ['qv0'], ['heron', 'qv0']]) {
        expect(await store.searchText({ terms, owners: ['global', 'user:alice'], limit: 10 })).toEqual([]);
      }
      expect(fullText()).toEqual([]);
      // A held word is searched as before (and the recorder sees the statements it prepares).
      const found = await store.searchText({
        terms: ['heron', 'kestrel'],
        owners: ['global', 'user:alice'],
        limit: 10,
      });
      expect(found.map((hit) => hit.id)).toEqual([1]);
      expect(fullText().length).toBeGreaterThan(0);
      expect(
        (await store.searchText({ terms: ['heron'], owners: ['global', 'user:bob'], limit: 10 })).map((hit) => hit.id),
      ).toEqual([2]);
    } finally {
      database.close();
    }
  });
});

describe("SQLite full-text search of some owners' memories, against the full-text statement (attack, session 12)", () => {
  it('finds every memory of the owners the full-text statement finds, whatever the word: none hidden by a count of 0', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const store = createSqliteMemoryStore(database, createSqliteVectorIndex(database));
      // Words where the stemmer in code and the index's porter tokenizer could part ("yy": `porterStem` gives
      // "sayi", the index "sai"), cases, diacritics, hyphens, digits, a token over 64 bytes, text not ASCII.
      const long = `x${'a'.repeat(70)}ing`;
      const texts = [
        'a meeting with Sayyed about the budget',
        'the toyyed crane and the flyy kite',
        'Café au lait, naïve résumé',
        'an e-mail to the co-op at 10am',
        `a long token ${long} here`,
        'running runners ran; generously generous',
        '東京 の 会議',
        'happyyying yyies ayying',
      ];
      await store.insert(
        texts.flatMap((text) => [
          globalMemory(text),
          globalMemory(text, { scope: 'personal', owner: 'user:bob', userId: 'bob' }),
        ]),
        { at, actor: null },
      );
      const statement = database
        .prepare<[string], number>(
          `SELECT f.rowid FROM memories_fts f JOIN memories m ON m.id = f.rowid
            WHERE memories_fts MATCH ? AND m.owner IN ('global', 'user:alice') AND m.archived_at IS NULL`,
        )
        .pluck();
      const terms = [
        'sayyed',
        'Sayyed',
        'toyyed',
        'flyy',
        'happyyying',
        'yyies',
        'ayying',
        'cafe',
        'Café',
        'naive',
        'e-mail',
        'co-op',
        '10am',
        long,
        'run',
        'running',
        'generous',
        '東京',
        'budget',
      ];
      for (const term of terms) {
        const expected = statement.all(`"${term.replaceAll('"', '""')}"`).sort((a, b) => a - b);
        const found = await store.searchText({ terms: [term], owners: ['global', 'user:alice'], limit: 100 });
        expect({ term, ids: found.map((hit) => hit.id).sort((a, b) => a - b) }).toEqual({ term, ids: expected });
        expect(expected.length, term).toBeGreaterThan(0);
      }
    } finally {
      database.close();
    }
  });

  it('finds what the full-text statement finds for a term the statement reads without its NUL characters', async () => {
    const database = openSqliteDatabase({ path: ':memory:' });
    try {
      const store = createSqliteMemoryStore(database, createSqliteVectorIndex(database));
      await store.insert([globalMemory('a kestrel over the field')], { at, actor: null });
      // The statement drops NUL (`ftsQuery`): "kes\0trel" is "kestrel" to it, and to the store without its counts.
      for (const term of ['kes\u0000trel', '\u0000kestrel', 'kestrel\u0000']) {
        expect(
          (await store.searchText({ terms: [term], owners: null, limit: 10 })).map((hit) => hit.id),
          JSON.stringify(term),
        ).toEqual([1]);
        expect(
          (await store.searchText({ terms: [term], owners: ['global'], limit: 10 })).map((hit) => hit.id),
          `${JSON.stringify(term)} among the owners`,
        ).toEqual([1]);
      }
    } finally {
      database.close();
    }
  });

  it('finds a memory another connection wrote after a search found none, and one a rolled-back delete hid', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-zero-counts-'));
    const path = join(folder, 'zero.db');
    const first = openSqliteDatabase({ path });
    const second = openSqliteDatabase({ path });
    try {
      const here = createSqliteMemoryStore(first, createSqliteVectorIndex(first));
      const there = createSqliteMemoryStore(second, createSqliteVectorIndex(second));
      const search = () => here.searchText({ terms: ['heron'], owners: ['global', 'user:alice'], limit: 10 });
      await here.insert([globalMemory('a kestrel over the field')], { at, actor: null });
      expect(await search()).toEqual([]);
      expect(await search()).toEqual([]);
      // Another connection (another process) writes alice's memory with the word: the counts read before are stale.
      const [heron] = await there.insert(
        [globalMemory('a heron by the pond', { scope: 'personal', owner: 'user:alice', userId: 'alice' })],
        { at, actor: null },
      );
      expect((await search()).map((hit) => hit.id)).toEqual([heron?.id]);
      // A delete inside a transaction this connection rolls back: the counts read inside it are not kept.
      first.exec('BEGIN IMMEDIATE');
      first.prepare('DELETE FROM memories WHERE id = ?').run(heron?.id);
      expect(await search()).toEqual([]);
      first.exec('ROLLBACK');
      expect((await search()).map((hit) => hit.id)).toEqual([heron?.id]);
      // Moved to bob by the other connection: alice's search finds nothing, bob's finds it.
      second.prepare("UPDATE memories SET owner = 'user:bob', user_id = 'bob' WHERE id = ?").run(heron?.id);
      expect(await search()).toEqual([]);
      expect(
        (await here.searchText({ terms: ['heron'], owners: ['global', 'user:bob'], limit: 10 })).map((hit) => hit.id),
      ).toEqual([heron?.id]);
    } finally {
      first.close();
      second.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
