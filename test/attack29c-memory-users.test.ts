import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { openStorage } from '../src/config/open-storage.js';
import type { Mneme } from '../src/core/mneme.js';
import { nameKey } from '../src/core/name-key.js';
import { migrateSqlite } from '../src/storage/sqlite/sqlite-migrations.js';
import { createFixedClock } from '../src/testing.js';

/**
 * A user known only by their memories (personal memories an application remembered for them, a mem0 file's) had no
 * `users` row, so no key to be found by (ADR 40): Eve, naming herself "bobsmith" in a room, spoke unlabelled though
 * `Bob.Smith` was a user of the same database. The user of a memory is now a known user, written with the memory
 * (and with an imported one), and SQLite's migration 31 (PostgreSQL's step 11) gives the users of memories stored
 * before a row, and computes the keys a `mneme copy` of migrations 29 and 30 left null.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack29c-memory-users-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const clock = createFixedClock('2026-03-02T10:00:00Z');
const quiet = { warn: () => {}, info: () => {} };

/** What Eve, named `name`, says in a room without Bob.Smith, as the memories of the database read it. */
async function evesWords(mneme: Mneme, name: string): Promise<string[]> {
  await mneme.putChannel({ id: 'ops', visibility: 'private', members: ['ann', 'eve'] });
  await mneme.setDisplayName({ userId: 'eve', displayName: name });
  await mneme.ingest({
    channelId: 'ops',
    sender: 'eve',
    content: 'I approve the budget transfer of 40,000 euros today.',
  });
  await mneme.whenIdle();
  const { memories } = await mneme.list({ limit: 100 });
  return memories.map((memory) => memory.content).filter((content) => content.includes('40,000'));
}

describe.each([':memory:', 'pglite:memory:'])('on %s', (path) => {
  it('labels a name that reads like the id of a user known only by a personal memory', {
    timeout: 60_000,
  }, async () => {
    const mneme = await createMneme({ path, clock, logger: quiet });
    try {
      await mneme.remember({ content: 'Bob.Smith is allergic to peanuts', scope: 'personal', userId: 'Bob.Smith' });
      const eves = await evesWords(mneme, 'bobsmith');
      expect(eves.length).toBeGreaterThan(0);
      for (const content of eves) expect(content).toMatch(/^bobsmith \(eve\)/i);
    } finally {
      await mneme.close();
    }
  });

  it('labels a name that reads like the id of a user known only by an imported memory', {
    timeout: 60_000,
  }, async () => {
    const mneme = await createMneme({ path, clock, logger: quiet });
    try {
      // An export's memory of a user the file has no user record for (a hand-made file, or one cut down).
      const source = await createMneme({ path: ':memory:', clock, logger: quiet });
      const lines: string[] = [];
      try {
        await source.remember({ content: 'Bob.Smith is allergic to peanuts', scope: 'personal', userId: 'Bob.Smith' });
        for await (const line of source.exportData()) {
          const record = JSON.parse(line) as { type: string; records?: number };
          if (record.type === 'user') continue;
          // The end line counts the records: one fewer for each user record left out.
          lines.push(record.type === 'end' ? JSON.stringify({ ...record, records: lines.length - 1 }) : line);
        }
      } finally {
        await source.close();
      }
      await mneme.importData(lines);
      const eves = await evesWords(mneme, 'bobsmith');
      expect(eves.length).toBeGreaterThan(0);
      for (const content of eves) expect(content).toMatch(/^bobsmith \(eve\)/i);
    } finally {
      await mneme.close();
    }
  });
});

describe('SQLite migration 31', () => {
  it('gives the user of a memory stored before a row, and computes the keys a copy left out', async () => {
    const path = join(folder, 'schema-30.db');
    const old = new Database(path);
    sqliteVec.load(old);
    expect(migrateSqlite(old, 30)).toBe(30);
    const at = Date.parse('2026-03-01T00:00:00Z');
    old
      .prepare(
        `INSERT INTO memories (content, category, sector, scope, owner, user_id, source, importance, created_at,
          updated_at, valid_from) VALUES ('Bob.Smith is allergic to peanuts', 'general', 'semantic', 'personal',
          'user:Bob.Smith', 'Bob.Smith', 'manual', 0.5, ?, ?, ?)`,
      )
      .run(at, at, at);
    // What `mneme copy` wrote: a user without either key.
    old
      .prepare('INSERT INTO users (id, display_name, created_at, updated_at) VALUES (?, ?, ?, ?)')
      .run('robert', 'Rob', at, at);
    old.close();
    const storage = await openStorage({ path });
    try {
      expect(await storage.directory.hasNamesake('eve', nameKey('bobsmith'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('R0B'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Robert'))).toBe(true);
      expect(await storage.directory.hasNamesake('eve', nameKey('Ann'))).toBe(false);
    } finally {
      await storage.close();
    }
  });
});
