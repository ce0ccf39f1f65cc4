import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { globalMemory } from '../src/storage/global-memory.fixture.js';
import { openSqliteDatabase, writeSqlite } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { wordCountDifferences } from '../src/storage/sqlite/sqlite-word-counts.fixture.js';

const folder = mkdtempSync('/tmp/wt-attack9-words-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const context = { at: Date.parse('2024-06-15T12:00:00.000Z'), actor: 'attack9' };

/**
 * Held (wt-attack9): the insert's owner-key count by the row number a connection remembers (15acd3b), with two
 * connections writing the same owner keys, purging them (a row deleted at zero memories, its number taken by
 * another key) and a rolled-back batch, in a random interleaving: the counts equal a recount after every step.
 */
describe('attack9: owner-key counts by remembered row numbers, two connections', () => {
  it('(held) equal a recount through interleaved inserts, purges and rollbacks on two connections', async () => {
    const path = join(folder, 'two.db');
    const first = createSqliteStorage({ path });
    const second = createSqliteStorage({ path });
    const raw = new Database(path);
    const random = createSeededRandom(99);
    const users = ['cat', 'dee', 'eve'];
    try {
      for (let step = 0; step < 160; step++) {
        const storage = random.below(2) === 0 ? first : second;
        const user = users[random.below(users.length)] as string;
        const action = random.below(10);
        if (action < 6) {
          await storage.memories.insert(
            [
              globalMemory(`${user} counts herons ${step} times`, {
                scope: 'personal',
                owner: `user:${user}`,
                userId: user,
              }),
            ],
            context,
          );
        } else if (action < 8) {
          await storage.memories.purgeUser(user);
        } else {
          // A batch that makes the user's row (or counts into it) and is rolled back.
          await expect(
            storage.memories.insert(
              [
                globalMemory(`${user} counts kestrels`, { scope: 'personal', owner: `user:${user}`, userId: user }),
                globalMemory('in a missing topic', { scope: 'session', owner: 'session:nope', topicId: 'nope' }),
              ],
              context,
            ),
          ).rejects.toMatchObject({ code: 'NOT_FOUND' });
        }
        expect(wordCountDifferences(raw), `step ${step}`).toEqual([]);
        const rows = raw.prepare('SELECT owner, memories FROM memory_word_owners ORDER BY owner').all();
        const recount = raw
          .prepare(
            `SELECT owner, count(*) AS memories FROM memories WHERE owner LIKE 'user:%' AND (archived_at IS NULL)
             GROUP BY owner ORDER BY owner`,
          )
          .all();
        expect(rows, `step ${step}`).toEqual(recount);
      }
    } finally {
      raw.close();
      await first.close();
      await second.close();
    }
  });

  it('(held) every write leaves the connection at synchronous FULL: a deferred one, one that throws, one inside another', () => {
    const database = openSqliteDatabase({ path: join(folder, 'sync.db') });
    try {
      database.exec('CREATE TABLE notes (text TEXT)');
      const add = database.prepare<[string]>('INSERT INTO notes (text) VALUES (?)');
      const level = () => database.pragma('synchronous', { simple: true });
      expect(level()).toBe(2);
      writeSqlite(database, 'a touch', () => add.run('touched'), { deferred: true });
      expect(level()).toBe(2);
      expect(() =>
        writeSqlite(
          database,
          'a failing touch',
          () => {
            add.run('undone');
            throw new Error('boom');
          },
          { deferred: true },
        ),
      ).toThrow(/boom/);
      expect(level()).toBe(2);
      writeSqlite(database, 'a durable write', () => {
        expect(level()).toBe(2);
        writeSqlite(database, 'a touch inside it', () => add.run('inner'), { deferred: true });
        add.run('outer');
      });
      expect(level()).toBe(2);
      writeSqlite(database, 'a remember after', () => {
        expect(level()).toBe(2);
        add.run('remembered');
      });
      expect(database.prepare('SELECT text FROM notes ORDER BY rowid').pluck().all()).toEqual([
        'touched',
        'inner',
        'outer',
        'remembered',
      ]);
    } finally {
      database.close();
    }
  });
});
