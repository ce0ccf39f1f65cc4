import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-missing-input-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('mneme ingest and import of a file that cannot be read', () => {
  it.each(['ingest', 'import'])('%s refuses it before creating the database', async (command) => {
    const database = join(folder, `${command}.db`);
    const missing = await runCli(database, [command, join(folder, 'nothing.jsonl')], { create: false });
    expect(missing).toMatchObject({ code: 3, stdout: '' });
    expect(missing.stderr).toBe(
      `mneme: cannot read ${join(folder, 'nothing.jsonl')}: check the path, or use - to read standard input\n`,
    );
    const dir = join(folder, `${command}-dir`);
    mkdirSync(dir);
    expect((await runCli(database, [command, dir], { create: false })).code).toBe(2);
    expect(existsSync(database)).toBe(false);
  });
});
