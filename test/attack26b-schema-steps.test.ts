import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { isMnemeError } from '../src/core/errors.js';
import { migratePostgres, postgresMigrations } from '../src/storage/postgres/postgres-migrations.js';
import { createPgliteDatabase } from '../src/storage/postgres/postgres-pglite-database.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { sqliteMigrations } from '../src/storage/sqlite/sqlite-migrations.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack26b-steps-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The steps a SQLite file records, by number. */
function sqliteSteps(path: string): Array<{ version: number; name: string }> {
  const raw = new Database(path, { readonly: true });
  try {
    return raw
      .prepare<[], { version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')
      .all();
  } finally {
    raw.close();
  }
}

/**
 * Attack finding (wt-b, attack 26b): builds of mneme on branches numbered their schema steps each on its own, and the
 * merges renumbered them: on the main line SQLite's step 24 was three different steps, PostgreSQL's step 4 was
 * "external message ids unique per sender" at 9cb74d6 before it became the word counts, and a13da5c recorded the
 * vector index as SQLite's step 11 with no step 10. A database one of those builds migrated was read by its highest
 * number alone: PostgreSQL's took step 4 as applied and opened without the word counts, every search then failing
 * with relation "memory_words" does not exist; SQLite's left out this mneme's step 24 (the vector residuals) without a
 * word, or failed with "table vector_owners already exists". Each is now refused at open by its step's number and
 * name (STORE_INCOMPATIBLE, exit 7), one line saying what to do, the database unchanged.
 */
describe('a database migrated by a build that numbered its schema steps otherwise', () => {
  it('is refused at open on SQLite, with one line naming the step, and left as it was', async () => {
    // As 8473e27 left a file: steps 1 to 23 as now, and its own step 24.
    const renumbered = join(folder, 'step-24.db');
    openSqliteDatabase({ path: renumbered, migrateTo: 23 }).close();
    const raw = new Database(renumbered);
    raw
      .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (24, ?, 0)')
      .run('message citations of an insert that gives its length written by the insert');
    raw.close();
    // As a13da5c left one: steps 1 to 9, and the vector index recorded as step 11.
    const skipped = join(folder, 'step-11.db');
    openSqliteDatabase({ path: skipped, migrateTo: 9 }).close();
    const other = new Database(skipped);
    other.exec(
      'CREATE TABLE vector_owners (id INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, vectors INTEGER NOT NULL)',
    );
    other
      .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (11, ?, 0)')
      .run('a binary-quantised vector index over owner buckets, with float32 slices to rank by (ADR 9)');
    other.close();

    for (const [path, line] of [
      [
        renumbered,
        /^mneme: this database's schema step 24 is "message citations of an insert that gives its length written by the insert", where this mneme's is "the signs of each listed vector off its list centroid": .*export it \(mneme export\) and import the file into a new database with this one\n$/,
      ],
      [
        skipped,
        /^mneme: this database has no schema step 10 \("the policy a database runs under: its preset and settings, every version kept"\) below its step 11: .*import the file into a new database with this one\n$/,
      ],
    ] as const) {
      const before = sqliteSteps(path);
      const opened = await runCli(path, ['stats'], { create: false });
      expect(opened.code).toBe(7);
      expect(opened.stderr).toMatch(line);
      expect(sqliteSteps(path)).toEqual(before);
    }
  });

  it('is refused at open on PostgreSQL (PGlite), instead of opening without the word counts every search needs', async () => {
    const path = `pglite:${join(folder, 'step-4')}`;
    // As 9cb74d6 left a database: steps 1 to 3 as now, and the external ids' step as its step 4.
    const database = await createPgliteDatabase(path);
    await migratePostgres(database, 3);
    const externalIds = postgresMigrations.find((step) => step.name === 'external message ids unique per sender');
    await database.exec(externalIds?.sql ?? '');
    await database.query(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (4, 'external message ids unique per sender', 0)",
    );
    await database.close();

    const opened = await runCli(path, ['search', 'anything'], { create: false });
    expect(opened.code).toBe(7);
    expect(opened.stderr).toMatch(
      /^mneme: this database's schema step 4 is "external message ids unique per sender", where this mneme's is "word counts per owner key, for statistics over what a viewer may see": /,
    );
    const reopened = await createPgliteDatabase(path);
    try {
      const error = await migratePostgres(reopened).catch((caught: unknown) => caught);
      expect(isMnemeError(error, 'STORE_INCOMPATIBLE')).toBe(true);
      const { rows } = await reopened.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(rows.map((row) => row.version)).toEqual([1, 2, 3, 4]);
    } finally {
      await reopened.close();
    }
  }, 60_000);

  it('still opens and migrates a database whose steps are all those of this mneme', async () => {
    const path = join(folder, 'current.db');
    openSqliteDatabase({ path, migrateTo: 20 }).close();
    openSqliteDatabase({ path }).close();
    expect(sqliteSteps(path)).toEqual(sqliteMigrations.map(({ version, name }) => ({ version, name })));
  });
});
