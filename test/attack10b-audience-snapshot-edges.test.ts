import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { insertOwnedMemory } from '../src/storage/sqlite/owned-memory.fixture.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteOwnerWords } from '../src/storage/sqlite/sqlite-owner-words.js';
import { createSqliteVisibleRanking, type SqliteVisibleRanking } from '../src/storage/sqlite/sqlite-visible-ranking.js';

/**
 * wt-attack10b: the edges of the full-text leg's audience snapshot (ADR 25, 2026-12-02, session 10), each against the
 * SQL join of a ranking that never holds it, on the same connection: ids at and past 2^26, ids too sparse, a length
 * of 2^21, a savepoint rolled back, VACUUM and a checkpoint by either connection, another connection's write
 * transaction open while the snapshot is read and committed after, another's commit between a search and the touch
 * (`unchangedBy`), and a touch that follows a write of its own connection.
 */
const folder = mkdtempSync('/tmp/wt-attack10b-edges-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
const at = Date.parse('2024-06-15T12:00:00.000Z');
const OWNERS = { ana: ['personal', 'ana', 'user:ana'], ben: ['personal', 'ben', 'user:ben'] } as const;
let files = 0;

function insertInto(
  database: Database.Database,
  name: keyof typeof OWNERS,
  content: string,
  id: number | null = null,
): number {
  return insertOwnedMemory(database, OWNERS[name], content, id);
}

function world() {
  const path = join(folder, `edges-${files++}.db`);
  const reader = openSqliteDatabase({ path });
  const other = openSqliteDatabase({ path });
  opened.push(reader, other);
  for (let index = 0; index < 30; index++) {
    insertInto(other, index % 2 ? 'ana' : 'ben', `${index % 3 ? 'osprey' : 'osprey osprey over the marsh'} ${index}`);
  }
  const held = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: 0 });
  const join_ = createSqliteVisibleRanking(reader, createSqliteOwnerWords(reader), { snapshotAfter: -1 });
  return { reader, other, held, join: join_ };
}

/** `who`'s hits for osprey by the snapshot ranking, checked against the join and against the rows' owners and states. */
function ospreys(reader: Database.Database, held: SqliteVisibleRanking, join_: SqliteVisibleRanking, who: string) {
  const search = { rare: ['osprey'], common: [], owners: [who], limit: 500, includeFaded: false };
  const hits = held.search(search);
  expect(hits).toEqual(join_.search(search));
  const rows = reader
    .prepare<[string], { owner: string; archived: number | null }>(
      'SELECT owner, archived_at AS archived FROM memories WHERE id IN (SELECT value FROM json_each(?))',
    )
    .all(JSON.stringify(hits.map((hit) => hit.id)));
  expect(rows).toHaveLength(hits.length);
  for (const row of rows) expect([row.owner, row.archived]).toEqual([who, null]);
  return hits.map((hit) => hit.id).sort((left, right) => left - right);
}

describe('attack10b: the audience snapshot at its edges', () => {
  it('ids at 2^26 - 1 are held, at 2^26 and when too sparse fall back to the join, with the same answers', () => {
    const { reader, other, held, join: join_ } = world();
    ospreys(reader, held, join_, 'user:ana');
    expect(held.lastSearchHeld()).toBe(true);
    const top = insertInto(other, 'ana', 'osprey at the top', 2 ** 26 - 1);
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(top);
    expect(ospreys(reader, held, join_, 'user:ben')).not.toContain(top);
    // Held? Its ids span 2^26 with 31 memories: too sparse (over 4 a memory past the first million): the join.
    expect(held.lastSearchHeld()).toBe(false);
    other.prepare('DELETE FROM memories WHERE id = ?').run(top);
    const past = insertInto(other, 'ben', 'osprey past the top', 2 ** 26);
    expect(ospreys(reader, held, join_, 'user:ben')).toContain(past);
    expect(ospreys(reader, held, join_, 'user:ana')).not.toContain(past);
    expect(held.lastSearchHeld()).toBe(false);
    other.prepare('DELETE FROM memories WHERE id = ?').run(past);
    // Just dense enough (ids to 2^20 + 4 x count): held, and the highest found by its owner only.
    const edge = insertInto(other, 'ana', 'osprey at the edge', 2 ** 20 + 4 * 31);
    for (let turn = 0; turn < 40; turn++) ospreys(reader, held, join_, 'user:ben');
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(edge);
    expect(held.lastSearchHeld()).toBe(true);
    expect(ospreys(reader, held, join_, 'user:ben')).not.toContain(edge);
    // Archived by the reader itself: gone from the next search.
    reader.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(edge);
    expect(ospreys(reader, held, join_, 'user:ana')).not.toContain(edge);
  });

  it('a length of 2^21 or more falls back to the join; a length just below is held, with the same scores', () => {
    const { reader, other, held, join: join_ } = world();
    const long = insertInto(other, 'ana', 'osprey long');
    other.prepare('UPDATE memories SET tokens = ? WHERE id = ?').run(2 ** 21 - 1, long);
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(long);
    expect(held.lastSearchHeld()).toBe(true);
    other.prepare('UPDATE memories SET tokens = ? WHERE id = ?').run(2 ** 21, long);
    for (let turn = 0; turn < 3; turn++) expect(ospreys(reader, held, join_, 'user:ana')).toContain(long);
    expect(held.lastSearchHeld()).toBe(false);
    expect(ospreys(reader, held, join_, 'user:ben')).not.toContain(long);
  });

  it('a savepoint rolled back, VACUUM and checkpoints by either connection leave the answers the join gives', () => {
    const { reader, other, held, join: join_ } = world();
    const before = ospreys(reader, held, join_, 'user:ana');
    expect(held.lastSearchHeld()).toBe(true);
    reader.exec('BEGIN; SAVEPOINT s');
    const added = insertInto(reader, 'ana', 'osprey not kept');
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(added);
    reader.exec('ROLLBACK TO s; RELEASE s; COMMIT');
    expect(ospreys(reader, held, join_, 'user:ana')).toEqual(before);
    for (const database of [reader, other]) {
      database.exec('VACUUM');
      expect(ospreys(reader, held, join_, 'user:ana')).toEqual(before);
      database.pragma('wal_checkpoint(TRUNCATE)');
      expect(ospreys(reader, held, join_, 'user:ana')).toEqual(before);
    }
    // After a VACUUM of the other connection, its next write is still seen.
    other.exec('VACUUM');
    ospreys(reader, held, join_, 'user:ana');
    const fresh = insertInto(other, 'ana', 'osprey after the vacuum');
    other.pragma('wal_checkpoint(TRUNCATE)');
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(fresh);
    expect(held.lastSearchHeld()).toBe(true);
  });

  it("another connection's write transaction open while the snapshot is read, committed after: seen at the next search", () => {
    const { reader, other, held, join: join_ } = world();
    const ana = { rare: ['osprey'], common: [], owners: ['user:ana'], limit: 500, includeFaded: false };
    const [kept = 0, moved = 0] = join_.search(ana).map((hit) => hit.id);
    other.exec('BEGIN IMMEDIATE');
    other.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(kept);
    other.prepare("UPDATE memories SET owner = 'user:ben', user_id = 'ben' WHERE id = ?").run(moved);
    const added = insertInto(other, 'ana', 'osprey in flight');
    // The reader's first searches, its snapshot read, while the other's transaction is open.
    for (let turn = 0; turn < 3; turn++) expect(ospreys(reader, held, join_, 'user:ana')).toContain(kept);
    expect(held.lastSearchHeld()).toBe(true);
    other.exec('COMMIT');
    const after = ospreys(reader, held, join_, 'user:ana');
    expect(after).toContain(added);
    expect(after).not.toContain(kept);
    expect(after).not.toContain(moved);
    expect(ospreys(reader, held, join_, 'user:ben')).toContain(moved);
  });

  it("a touch (unchangedBy) after another connection's commit, or after a write of its own, keeps no stale snapshot", () => {
    const { reader, other, held, join: join_ } = world();
    const touch = reader.prepare(
      'UPDATE memories SET access_count = access_count + 1 WHERE archived_at IS NULL AND id < 4',
    );
    const [first = 0] = ospreys(reader, held, join_, 'user:ana');
    // Another's forget commits between the search and the touch (recall's order: search, then touch).
    other.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(first);
    held.unchangedBy(() => touch.run());
    expect(ospreys(reader, held, join_, 'user:ana')).not.toContain(first);
    // The touch in the same transaction as a write of its own, before it and after it.
    const added = reader.transaction(() => {
      const id = insertInto(reader, 'ana', 'osprey then touch');
      held.unchangedBy(() => touch.run());
      return id;
    })();
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(added);
    const second = reader.transaction(() => {
      held.unchangedBy(() => touch.run());
      return insertInto(reader, 'ana', 'touch then osprey');
    })();
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(second);
    // A touch rolled back with the write after it.
    expect(() =>
      reader.transaction(() => {
        held.unchangedBy(() => touch.run());
        reader.prepare(`UPDATE memories SET archived_at = ${at} WHERE id = ?`).run(second);
        throw new Error('failed write');
      })(),
    ).toThrow('failed write');
    expect(ospreys(reader, held, join_, 'user:ana')).toContain(second);
  });
});
