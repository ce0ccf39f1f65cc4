import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { latestSchemaVersion, sqliteMigrations } from '../src/storage/sqlite/sqlite-migrations.js';

const entry = pathToFileURL(resolve(import.meta.dirname, '../dist/index.js')).href;
const folder = mkdtempSync(join(tmpdir(), 'mneme-race-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const ROUNDS = 4;
const PROCESSES = 8;

/** Opens and closes `path` with the built library in a process of its own; resolves with its exit code and output. */
function openInChild(path: string): Promise<{ code: number; output: string }> {
  const script = `const { createMneme } = await import(${JSON.stringify(entry)});
    const mneme = await createMneme({ path: process.argv[1] });
    await mneme.close();`;
  return new Promise((done) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, path], (error, stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

describe('opening one new database file from many processes at once', () => {
  it('migrates it once: every process opens it, and each step is recorded once', async () => {
    expect(existsSync(resolve(import.meta.dirname, '../dist/index.js')), 'run `npm run build` first').toBe(true);
    for (let round = 0; round < ROUNDS; round++) {
      const path = join(folder, `round-${round}.db`);
      const results = await Promise.all(Array.from({ length: PROCESSES }, () => openInChild(path)));
      expect(results.filter((result) => result.code !== 0)).toEqual([]);
      const database = new Database(path, { readonly: true });
      try {
        const steps = database
          .prepare<[], { version: number }>('SELECT version FROM schema_migrations ORDER BY version')
          .all()
          .map((row) => row.version);
        expect(steps).toEqual(sqliteMigrations.map((migration) => migration.version));
        expect(steps.at(-1)).toBe(latestSchemaVersion);
        expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
      } finally {
        database.close();
      }
    }
    // 32 processes each start Node and open the file: tens of seconds on two shared, loaded cores.
  }, 180_000);
});
