import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack17b-foreign-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/**
 * attack17b: `--db` naming another application's SQLite file (a slip of the path) was taken for a new mneme
 * database: `mneme stats` added mneme's ninety-odd tables to it and turned it to WAL mode, exit 0; one with a
 * table named like one of mneme's was turned to WAL and refused with "table memories already exists".
 */
describe('a --db that is the SQLite database of another application', () => {
  it('is refused with one line and exit 7 by reads, writes and init, and the file is left as it was', async () => {
    const path = join(folder, 'notes.db');
    const other = new Database(path);
    other.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('buy milk')");
    other.close();
    const before = sha256(path);
    for (const argv of [['stats'], ['add', 'Ann likes tea'], ['init']]) {
      const result = await runCli(path, argv);
      expect({ argv, code: result.code, stdout: result.stdout }).toEqual({ argv, code: 7, stdout: '' });
      expect(result.stderr).toMatch(/^mneme: [^\n]*not a mneme database[^\n]*\n$/);
      expect(sha256(path)).toBe(before);
      expect([existsSync(`${path}-wal`), existsSync(`${path}-shm`)]).toEqual([false, false]);
    }
  });
});
