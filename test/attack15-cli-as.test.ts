import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-as-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };

/**
 * Attack finding (wt-attack15): `--as <user>` ("runs it with that user's rights instead of the
 * administrator's") was silently ignored by the commands that open the database themselves. `mneme --as ann
 * mcp` (the README: a session with `--user` "has that user's rights, as `mneme --as <user>`") served an
 * administrator session: the model read the store-wide stats and wrote global memories; `--as ann copy`
 * copied everything, `--as ann serve` served every scope. They now refuse it: exit 2 and one line.
 */
describe('--as on a command that does not run as a user', () => {
  it('is refused before anything is opened or served (mcp, serve, proxy, copy)', () => {
    const database = join(folder, 'as.db');
    expect(spawnSync(process.execPath, [mnemeBinary, '--db', database, 'init'], { env }).status).toBe(0);
    for (const argv of [
      ['mcp'],
      ['serve', '--port', '0'],
      ['proxy', '--upstream', 'http://127.0.0.1:9/v1', '--port', '0'],
      ['copy', '--from', database, '--to', join(folder, 'copy.db')],
    ]) {
      const run = spawnSync(process.execPath, [mnemeBinary, '--db', database, '--as', 'ann', ...argv], {
        env,
        input: '',
        timeout: 20_000,
        encoding: 'utf8',
      });
      expect(run.status, `${argv[0]}: ${run.stderr}`).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^mneme: --as .+\n$/);
    }
    expect(existsSync(join(folder, 'copy.db'))).toBe(false);
  }, 120_000);

  it('still runs the engine commands as the user, and mcp --user is the way to a user session', async () => {
    const database = join(folder, 'user.db');
    expect(
      (await runCli(database, ['--as', 'ann', 'add', 'Ann keeps bees', '--scope', 'personal', '--user', 'ann'])).code,
    ).toBe(0);
    expect((await runCli(database, ['--as', 'ann', 'stats'])).code).toBe(5);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [mnemeBinary, '--db', database, 'mcp', '--user', 'ann'],
      env,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mneme-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const stats = (await client.callTool({ name: 'stats', arguments: {} })) as { isError?: boolean };
      expect(stats.isError).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);
});
