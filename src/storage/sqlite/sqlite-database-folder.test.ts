import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from './sqlite-database.js';

const run = promisify(execFile);
const built = new URL('../../../dist/storage/sqlite/sqlite-database.js', import.meta.url).href;
const folder = mkdtempSync(join(tmpdir(), 'mneme-sqlite-folder-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Opens `path` with the built module (`npm test` builds first) in a child process, killed after 10 s. */
async function openInChild(path: string): Promise<{ code: number | null; stdout: string; killed: boolean }> {
  const script = `
    import { openSqliteDatabase } from ${JSON.stringify(built)};
    try { openSqliteDatabase({ path: ${JSON.stringify(path)} }).close(); console.log('opened'); }
    catch (error) { console.log(error.code + ': ' + error.message); }`;
  try {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { timeout: 10_000 });
    return { code: 0, stdout, killed: false };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; killed?: boolean };
    return { code: failed.code ?? null, stdout: failed.stdout ?? '', killed: failed.killed === true };
  }
}

describe('opening a SQLite database whose folder is missing', () => {
  it('creates the missing folders, however deep', () => {
    const path = join(folder, 'a', 'b', 'c', 'mneme.db');
    openSqliteDatabase({ path }).close();
    expect(existsSync(path)).toBe(true);
  });

  it('fails with STORE_FAILED saying so when its folder is a file', () => {
    const file = join(folder, 'a-file');
    writeFileSync(file, 'not a folder');
    expect(() => openSqliteDatabase({ path: join(file, 'mneme.db') })).toThrow(
      expect.objectContaining({ code: 'STORE_FAILED', message: `${file} is not a folder` }),
    );
    expect(() => openSqliteDatabase({ path: join(file, 'deeper', 'mneme.db') })).toThrow(
      expect.objectContaining({
        code: 'STORE_FAILED',
        message: `cannot create the folder ${join(file, 'deeper')}: a part of its path is a file, not a folder`,
      }),
    );
  });

  it.skipIf(process.platform !== 'linux')(
    'fails with STORE_FAILED when a folder cannot be created, instead of hanging (recursive mkdir under /proc loops)',
    async () => {
      const opened = await openInChild('/proc/mneme-no-such-folder/x.db');
      expect(opened.killed).toBe(false);
      expect(opened.stdout).toMatch(/^STORE_FAILED: cannot create the folder \/proc\/mneme-no-such-folder/);
    },
    30_000,
  );
});
