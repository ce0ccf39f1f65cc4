import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, expect, it } from 'vitest';
import { ownerKey } from '../../core/scope.js';
import { globalMemory } from '../global-memory.fixture.js';
import type { NewMemory } from '../memory-store.js';
import { createSqliteStorage } from './sqlite-storage.js';
import { createSqliteUserNames } from './sqlite-user-names.js';

/**
 * A user who renames themselves leaves their old name to be labelled in the memories that call them by it (ADR 44).
 * The rename read every memory that names the user and looked for the name in its text, holding the write lock: about
 * 100 ms for 5,000 memories, each time a user key renamed itself. Only the memories whose text can hold the name are
 * read now (the text index finds its words in any case; the spelling finds it glued to a sign the index reads as part
 * of a word).
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-speaker-labels-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const at = Date.parse('2026-03-02T10:00:00Z');

/** A fact of Eve's, without a vector. */
function personal(content: string): NewMemory {
  return globalMemory(content, {
    scope: 'personal',
    owner: ownerKey('personal', { userId: 'eve' }),
    userId: 'eve',
    source: 'extraction',
  });
}

it('reads only the memories whose text can hold the name a user leaves', async () => {
  const path = join(folder, 'rename.db');
  const storage = createSqliteStorage({ path });
  await storage.directory.putUser({ id: 'eve', displayName: 'Dana' }, at);
  const holding = ['DANA prefers tea', 'Dana-approved invoices only', 'Ask 🙂Dana about the lease'];
  const others = Array.from({ length: 20 }, (_, index) => `Prefers item number ${index} on Tuesdays`);
  const written = await storage.memories.insert([...holding, ...others].map(personal), { at, actor: 'tester' });
  await storage.close();
  // Every statement the rename runs, as the connection runs it.
  const ran: string[] = [];
  const database = new Database(path, { verbose: (sql) => ran.push(String(sql)) });
  sqliteVec.load(database);
  const names = createSqliteUserNames(database);
  database.transaction(() => names.put({ id: 'eve', displayName: 'Dora' }, at + 1))();
  const read = database.prepare<[number], { content: string }>('SELECT content FROM memories WHERE id = ?');
  const contents = written.map((memory) => read.get(memory.id)?.content);
  database.close();
  expect(contents).toEqual([
    'Dana (eve) prefers tea',
    'Dana (eve)-approved invoices only',
    'Ask 🙂Dana (eve) about the lease',
    ...others,
  ]);
  expect(ran.filter((sql) => /^SELECT \* FROM memories WHERE id = /.test(sql))).toHaveLength(holding.length);
});
