import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-bin-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('the built mneme binary', () => {
  it('stores and lists a memory in a new database file', async () => {
    expect(existsSync(binary), 'run `npm run build` first').toBe(true);
    const env = { ...process.env, MNEME_DB: join(folder, 'nested', 'smoke.db') };
    await run(process.execPath, [binary, '--create', 'add', 'The smoke test ran', '--category', 'event'], { env });
    const { stdout } = await run(process.execPath, [binary, 'list'], { env });
    expect(stdout).toMatch(/#1\tglobal\tevent\t0.50\tThe smoke test ran\n1-1 of 1\n/);
  });

  it('exits with code 2 and one line on stderr for bad input', async () => {
    const env = { ...process.env, MNEME_DB: join(folder, 'bad.db') };
    const failure = await run(process.execPath, [binary, '--create', 'add', ''], { env }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toBe('mneme: invalid memory: content: content must not be empty\n');
  });
});
