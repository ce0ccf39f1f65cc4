import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-keys-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('mneme keys create --user', () => {
  it('refuses an empty user instead of creating an administrator key, and writes no key', async () => {
    const database = join(folder, 'keys.db');
    const run = (...argv: string[]) => runCli(database, argv);
    expect((await run('init')).code).toBe(0);

    for (const user of ['', '  ']) {
      const refused = await run('keys', 'create', '--label', 'ann app', '--user', user);
      expect(refused).toMatchObject({ code: 2, stdout: '' });
      expect(refused.stderr).toMatch(/^mneme: .*userId/);
    }
    expect((await run('keys', 'list')).stdout).toMatch(/^no API keys/);

    const bound = await run('keys', 'create', '--label', 'ann app', '--user', 'ann');
    expect(bound.code).toBe(0);
    expect(bound.stdout).toContain('bound to user ann');
  });
});

describe('mneme keys revoke', () => {
  it('refuses an empty or blank prefix as bad input in one line, and revokes no key', async () => {
    const database = join(folder, 'revoke.db');
    const run = (...argv: string[]) => runCli(database, argv);
    expect((await run('init')).code).toBe(0);
    expect((await run('keys', 'create', '--label', 'ops')).code).toBe(0);

    for (const prefix of ['', '  ']) {
      const refused = await run('keys', 'revoke', prefix);
      expect(refused).toMatchObject({ code: 2, stdout: '' });
      expect(refused.stderr).toMatch(/^mneme: .*prefix must not be empty[^\n]*\n$/);
    }
    const json = await run('--json', 'keys', 'revoke', '');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'INVALID_INPUT' } });

    expect((await run('keys', 'list')).stdout).toMatch(/\tadmin\tcreated /);
    expect((await run('keys', 'revoke', '000000000000')).code).toBe(3);
  });

  it('refuses a prefix that cannot be one as bad input, and takes a whole key for its prefix', async () => {
    const database = join(folder, 'revoke-shapes.db');
    const run = (...argv: string[]) => runCli(database, argv);
    expect((await run('init')).code).toBe(0);
    const created = await run('--json', 'keys', 'create', '--label', 'ops');
    const { key, prefix } = JSON.parse(created.stdout) as { key: string; prefix: string };
    // A prefix of digits only (about one key in 280) has no upper case of its own: it is then the prefix itself.
    const upper = prefix.toUpperCase() === prefix ? [] : [prefix.toUpperCase()];
    for (const wrong of ['ops', 'mneme_', `${prefix}x`, ...upper]) {
      const refused = await run('keys', 'revoke', wrong);
      expect(refused, wrong).toMatchObject({ code: 2, stdout: '' });
      expect(refused.stderr).toMatch(/^mneme: .*a key prefix is 12 hexadecimal characters[^\n]*\n$/);
    }
    expect((await run('keys', 'list')).stdout).not.toMatch(/revoked/);
    const revoked = await run('keys', 'revoke', key);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await run('keys', 'list')).stdout).toMatch(new RegExp(`^${prefix}\\tops\\tadmin\\trevoked `));
  });
});
