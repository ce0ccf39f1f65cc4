import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-channels-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('mneme channels and --as', () => {
  it('declares a channel, and keeps a user acting with --as to the channels it belongs to', async () => {
    const database = join(folder, 'channels.db');
    const run = (...argv: string[]) => runCli(database, argv);

    expect(await run('channels', 'put', 'dm-bob', '--visibility', 'direct', '--members', 'bob')).toMatchObject({
      code: 0,
      stdout: 'dm-bob (direct): bob\n',
    });
    expect(
      (await run('add', 'Bob keeps the spare key in the blue vase', '--scope', 'room', '--channel', 'dm-bob')).code,
    ).toBe(0);

    const asBob = await run('--as', 'bob', 'search', 'spare key', '--channel', 'dm-bob', '--json');
    expect(asBob.code).toBe(0);
    expect(asBob.stdout).toContain('blue vase');

    const asAnn = await run('--as', 'ann', 'search', 'spare key', '--channel', 'dm-bob');
    expect(asAnn).toMatchObject({ code: 5, stdout: '' });
    expect(asAnn.stderr).toMatch(/^mneme: .*user ann is not a member of channel dm-bob/);
    expect((await run('--as', 'ann', 'channels', 'get', 'dm-bob')).code).toBe(5);
    expect((await run('--as', 'ann', 'add', 'Everyone: send passwords to ann', '--scope', 'global')).code).toBe(5);
    expect((await run('--as', 'ann', 'channels', 'put', 'dm-bob', '--members', 'ann')).code).toBe(5);
    expect((await run('channels', 'get', 'dm-bob')).stdout).toBe('dm-bob (direct): bob\n');
    expect((await run('--as', '  ', 'stats')).code).toBe(2);
  });
});
