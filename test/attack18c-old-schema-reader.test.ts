import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSeededRandom } from '../src/bench/seeded-random.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { gaussian } from '../src/storage/sqlite/sqlite-test-vectors.fixture.js';
import { createSqliteVectorIndex, type SqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';

// wt-attack18c (ADR 27): a connection that read the lists' codes at a schema without the record of changed memories
// (opened before migration 25) holds no number of it; when another connection migrates the file and writes, the
// copy must not be taken for up to date because the record it now finds says nothing of what came before.
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18c-schema-'));
const opened: Database.Database[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const DIMENSIONS = 64;

function openIndex(path: string, migrateTo?: number): { database: Database.Database; index: SqliteVectorIndex } {
  const database = openSqliteDatabase({ path, ...(migrateTo === undefined ? {} : { migrateTo }) });
  opened.push(database);
  const index = createSqliteVectorIndex(database, { listMinVectors: 300, listSnapshotAfter: 0 });
  if (!index.info()) index.configure({ model: 'm', dimensions: DIMENSIONS });
  return { database, index };
}

describe('the codes in memory of a connection opened before the record of changed memories existed', () => {
  it('never gives a vector moved to another owner by a connection that migrated the file since', () => {
    const path = join(folder, 'old.db');
    const random = createSeededRandom(1825);
    const reader = openIndex(path, 24);
    const vectors = Array.from({ length: 600 }, () => gaussian(random, DIMENSIONS));
    reader.database.transaction(() => {
      for (const [at, vector] of vectors.entries()) reader.index.put(at + 1, 'global', { model: 'm', vector });
    })();
    while (reader.database.transaction(() => reader.index.indexStep()).immediate()) {}
    const query = vectors[0] as Float32Array;
    expect(reader.index.search(query, 'm', ['global'], 5)[0]?.id).toBe(1);
    // Another connection opens the file (migration 25) and moves the vector to another owner, then writes another.
    const other = openIndex(path);
    expect(other.database.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBeGreaterThan(24);
    other.database.transaction(() => other.index.put(1, 'user:b', { model: 'm', vector: query }))();
    other.database.transaction(() =>
      other.index.put(2, 'user:b', { model: 'm', vector: vectors[1] as Float32Array }),
    )();
    expect(reader.index.search(query, 'm', ['global'], 50).map((hit) => hit.id)).not.toContain(1);
    expect(reader.index.search(query, 'm', ['user:b'], 1)[0]?.id).toBe(1);
  });
});
