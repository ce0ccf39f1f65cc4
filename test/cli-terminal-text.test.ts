import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-terminal-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const ESC = '\u001b';
/** Stored text that a terminal would act on: clear the screen, an OSC 8 link, a carriage return over the line, a CSI. */
const hostile = `Ann likes tea ${ESC}[2J${ESC}]8;;https://example.invalid/${ESC}\\click here${ESC}]8;;${ESC}\\\rOwned\u009b31m`;

/** The control characters of a text but line breaks and tabs, by code. */
const controls = (text: string) =>
  [...text]
    .map((character) => character.charCodeAt(0))
    .filter((code) => (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f));

/**
 * The CLI printed memory text, names and error messages as stored, so escape sequences in them (from any message a
 * user sent) were run by the terminal of whoever listed memories: a cleared screen, a disguised link, a line written
 * over. Human-readable output now shows each control character as an escape; --json stays exact JSON.
 */
describe('the CLI output for people', () => {
  it('shows the control characters of stored text as escapes, and --json keeps the text exact', async () => {
    const db = join(folder, 'memories.db');
    const added = await runCli(db, ['--json', 'add', hostile, '--user', 'ann']);
    expect(added.code, added.stderr).toBe(0);
    const id = String((JSON.parse(added.stdout) as { id: number }).id);
    await runCli(db, ['ingest', '-'], {
      stdin: (await import('node:stream')).Readable.from([
        `${JSON.stringify({ channelId: 'lobby', sender: 'ann', senderName: 'Ann', content: hostile })}\n`,
      ]),
    });
    for (const argv of [
      ['get', id],
      ['list'],
      ['history', id],
      ['search', 'tea', '--user', 'ann'],
      ['turns', '--channel', 'lobby'],
    ]) {
      const run = await runCli(db, argv);
      expect(run.code, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
      if (argv[0] !== 'history') expect(run.stdout, argv.join(' ')).toContain('likes tea');
      expect(controls(run.stdout), argv.join(' ')).toEqual([]);
    }
    const shown = (await runCli(db, ['get', id])).stdout;
    expect(shown).toContain('\\x1b[2J');
    expect(shown).toContain('\\x1b]8;;https://example.invalid/');
    expect(shown).toContain('\\rOwned\\u009b31m');
    const json = await runCli(db, ['--json', 'get', id]);
    expect((JSON.parse(json.stdout) as { content: string }).content).toBe(hostile);
    const refused = await runCli(db, ['channels', 'get', `nowhere${ESC}]0;pwned${ESC}\\`]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('nowhere\\x1b]0;pwned');
    expect(refused.stderr).not.toContain(ESC);
  }, 60_000);
});
