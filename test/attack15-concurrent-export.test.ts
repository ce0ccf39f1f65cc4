import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack15-export-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The lines of an export file, checked whole: a header first, an end last that counts the records between. */
function wholeExport(path: string): { user: string | null; records: number } {
  const lines = readFileSync(path, 'utf8').split('\n');
  expect(lines.pop()).toBe('');
  const parsed = lines.map((line) => JSON.parse(line) as { type: string; user?: string | null; records?: number });
  expect(parsed[0]?.type).toBe('header');
  expect(parsed.filter((record) => record.type === 'header')).toHaveLength(1);
  expect(parsed.at(-1)).toEqual({ type: 'end', records: lines.length - 2 });
  expect(parsed.filter((record) => record.type === 'end')).toHaveLength(1);
  return { user: parsed[0]?.user ?? null, records: lines.length - 2 };
}

/**
 * Attack finding (wt-attack15): `mneme export --out <file>` wrote `<file>.partial` and renamed it. Two
 * exports to one file at once (an overlapping cron job, a retry) wrote into the same `.partial`: the one
 * that renamed first reported success for a file the other kept writing into, which then held pieces of
 * both exports, and the other failed with a rename error.
 */
describe('two exports to one --out file at once', () => {
  it('leave one whole export there, each exit 0, and no temporary file', async () => {
    const database = join(folder, 'source.db');
    const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
    for (let batch = 0; batch < 20; batch++) {
      await mneme.ingestMany(
        Array.from({ length: 100 }, (_, index) => ({
          channelId: `room-${batch % 4}`,
          sender: batch % 2 === 0 ? 'ann' : 'bob',
          content: `message ${batch}-${index} about the garden and its ${'lovely '.repeat(index % 9)}roses`,
        })),
      );
    }
    await mneme.whenIdle();
    await mneme.close();
    const out = join(folder, 'backup.jsonl');
    // Two different exports (everything, and ann's), so a file holding pieces of both cannot pass for either.
    const runs = await Promise.all([
      runCli(database, ['--json', 'export', '--out', out]),
      runCli(database, ['--json', 'export', '--user', 'ann', '--out', out]),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const written = wholeExport(out);
    const reported = runs.map((run) => (JSON.parse(run.stdout) as { lines: number }).lines - 2);
    expect(reported).toContain(written.records);
    expect(readdirSync(folder).sort()).toEqual(['backup.jsonl', 'source.db']);
  }, 120_000);
});
