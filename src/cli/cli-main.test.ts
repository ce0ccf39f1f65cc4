import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';
import { main } from './cli-main.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let databases = 0;

/** Runs the CLI in-process against its own database file. */
function cli(database = join(folder, `cli-${databases++}.db`)) {
  return (...argv: string[]) => runCli(database, argv);
}

describe('the mneme CLI', () => {
  it('adds, gets, lists, updates, forgets, restores and shows the history of a memory', async () => {
    const run = cli();
    const added = await run(
      'add',
      'Oz prefers dark mode',
      '--scope',
      'personal',
      '--user',
      'oz',
      '--category',
      'preference',
      '--importance',
      '0.8',
      '--json',
    );
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const memory = JSON.parse(added.stdout);
    expect(memory).toMatchObject({ content: 'Oz prefers dark mode', scope: 'personal', userId: 'oz', importance: 0.8 });

    const shown = await run('get', String(memory.id));
    expect(shown.stdout).toContain(`#${memory.id} [personal:oz] preference (importance 0.80)`);
    expect(shown.stdout).toContain('Oz prefers dark mode');

    const listed = await run('list', '--user', 'oz');
    expect(listed.stdout).toMatch(new RegExp(`#${memory.id}\\tpersonal:oz\\tpreference\\t0.80\\tOz prefers dark mode`));
    expect(listed.stdout).toContain('1-1 of 1');

    const updated = await run('update', String(memory.id), '--content', 'Oz prefers light mode', '--pin', '--json');
    expect(JSON.parse(updated.stdout)).toMatchObject({ content: 'Oz prefers light mode', pinned: true });

    expect((await run('forget', String(memory.id), '--reason', 'asked to')).stdout).toBe(`forgot #${memory.id}\n`);
    expect((await run('list')).stdout).toBe('no memories\n');
    expect((await run('list', '--archived', 'only', '--json')).stdout).toContain('Oz prefers light mode');
    expect((await run('restore', String(memory.id))).code).toBe(0);

    const history = await run('history', String(memory.id));
    expect(history.stdout).toMatch(/v1 .* create by cli/);
    expect(history.stdout).toMatch(
      /v2 .* update by cli\n {2}content: "Oz prefers dark mode" -> "Oz prefers light mode"; pinned: false -> true/,
    );
    expect(history.stdout).toMatch(/v3 .* archive by cli \(asked to\)/);
    expect(history.stdout).toMatch(/v4 .* restore by cli/);

    const stats = await run('stats', '--json');
    expect(JSON.parse(stats.stdout)).toMatchObject({ active: 1, pinned: 1, byScope: { personal: 1 } });
  });

  it('prints one clear line on stderr and exits non-zero on bad input, writing nothing', async () => {
    const run = cli();
    const refusals: Array<[string[], number, RegExp]> = [
      [['add', '   '], 2, /^mneme: invalid memory: content: content must not be empty\n$/],
      [['add', 'x', '--scope', 'personal'], 2, /userId: scope personal needs userId/],
      [['add', 'x', '--scope', 'planet'], 2, /argument 'planet' is invalid. Allowed choices are personal, room/],
      [
        ['add', 'x', '--importance', 'high'],
        2,
        /^mneme: option '--importance <0..1>' argument 'high' is invalid. expected a number/,
      ],
      [['add', 'x', '--scope', 'session', '--topic', 't1'], 2, /session memories come from conversation extraction/],
      [['get', '42'], 3, /^mneme: memory 42 does not exist\n$/],
      [['get', 'forty-two'], 2, /id must be a positive integer/],
      [['update', '1'], 2, /nothing to update/],
      [['forget', '9'], 3, /memory 9 does not exist/],
      [['list', '--limit', 'lots'], 2, /argument 'lots' is invalid. expected a whole number from 1 to 500/],
      [['frobnicate'], 2, /unknown command 'frobnicate'/],
    ];
    for (const [argv, code, message] of refusals) {
      const result = await run(...argv);
      expect(result.code, argv.join(' ')).toBe(code);
      expect(result.stderr, argv.join(' ')).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect((await run('stats', '--json')).stdout).toContain('"total": 0');
  });

  it('refuses an empty or blank id argument of every command that takes one: exit 2, one line, nothing written', async () => {
    const run = cli();
    // Each command with its id argument in the place of `id`.
    const commands = (id: string) => [
      ['get', id],
      ['update', id, '--content', 'x'],
      ['forget', id],
      ['restore', id],
      ['history', id],
      ['channels', 'get', id],
      ['channels', 'put', id],
      ['keys', 'revoke', id],
    ];
    for (const argv of [...commands(''), ...commands('  ')]) {
      const result = await run(...argv);
      expect(result, argv.join(' ')).toMatchObject({ code: 2, stdout: '' });
      expect(result.stderr, argv.join(' ')).toMatch(
        /^mneme: [^\n]*(must not be empty|must be a positive integer)[^\n]*\n$/,
      );
    }
    expect((await run('stats', '--json')).stdout).toContain('"total": 0');
  });

  it('uses MNEME_DB when --db is not given', async () => {
    const database = join(folder, 'from-env.db');
    let stdout = '';
    const io = {
      stdout: (text: string) => (stdout += text),
      stderr: () => {},
      env: { MNEME_DB: database, MNEME_EMBEDDER: 'none' },
    };
    expect(await main(['--create', 'add', 'stored via the environment'], io)).toBe(0);
    stdout = '';
    await main(['--db', database, 'list', '--json'], { ...io, env: { MNEME_EMBEDDER: 'none' } });
    expect(JSON.parse(stdout).memories[0].content).toBe('stored via the environment');
  });
});
