import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-ingest-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };
const hash = (digit: string) => digit.repeat(64);

/**
 * Attack finding (wt-attack15): `mneme ingest --resume` read the file's recorded progress once, at its
 * start, and each batch then overwrote it. Two runs of the same file at once (a retry started while the
 * first still ran, two cron jobs) both started after the same line and appended every line twice, both
 * exiting 0, and the record then said the file was done.
 */
describe('two runs of mneme ingest --resume of one file at once', () => {
  it('append each line once: a run whose file progress moved under it stops with exit 4 and writes nothing more', async () => {
    const database = join(folder, 'race.db');
    const file = join(folder, 'race.jsonl');
    const lines = Array.from({ length: 1500 }, (_, index) =>
      JSON.stringify({ channelId: 'general', sender: 'ann', content: `line number ${index} of the shared file` }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    expect((await runCli(database, ['init'])).code).toBe(0);
    const runs = await Promise.all([
      runCli(database, ['--json', 'ingest', file, '--resume', '--no-progress']),
      runCli(database, ['--json', 'ingest', file, '--resume', '--no-progress']),
    ]);
    for (const run of runs) {
      expect([0, 4], run.stderr).toContain(run.code);
      if (run.code === 4) expect(run.stderr).toMatch(/another run is ingesting it/);
    }
    const stats = await runCli(database, ['--json', 'stats']);
    expect(JSON.parse(stats.stdout).messages).toBe(1500);
    // What the record says is what is stored: a resume after both appends nothing.
    const again = await runCli(database, ['--json', 'ingest', file, '--resume', '--no-progress']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ resumedAfter: 1500, messages: 0 });
  }, 120_000);

  it.each([
    ['SQLite', () => join(folder, `engine-${Math.random().toString(36).slice(2)}.db`)],
    ['PGlite', () => 'pglite:memory:'],
  ])(
    'refuses (CONFLICT) a batch whose file record is not at the line it expects, writing none of it (%s)',
    async (_name, path) => {
      const mneme = await createMneme({ path: path(), logger: quiet });
      try {
        const say = (content: string) => ({ channelId: 'general', sender: 'ann', content });
        await mneme.ingestMany([say('the first line of the file')], {
          file: { path: '/data/in.jsonl', line: 1, prefixSha256: hash('a'), after: 0 },
        });
        const refused = await mneme
          .ingestMany([say('the first line again, from a second run')], {
            file: { path: '/data/in.jsonl', line: 1, prefixSha256: hash('a'), after: 0 },
          })
          .catch((error: unknown) => error);
        expect(isMnemeError(refused, 'CONFLICT'), String(refused)).toBe(true);
        expect((await mneme.turns({ channelId: 'general' })).map((message) => message.content)).toEqual([
          'the first line of the file',
        ]);
        await mneme.ingestMany([say('the second line of the file')], {
          file: { path: '/data/in.jsonl', line: 2, prefixSha256: hash('b'), after: 1 },
        });
        expect(await mneme.ingestProgress('/data/in.jsonl')).toMatchObject({ line: 2, prefixSha256: hash('b') });
      } finally {
        await mneme.close();
      }
    },
    60_000,
  );
});
