import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-cli-import-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const mem0File = new URL('./fixtures/mem0-export.json', import.meta.url).pathname;
const refusal = (line: number) =>
  `mneme: line ${line}: not a mneme-export file: its first line must be the header ` +
  '({"type":"header","format":"mneme-export",...}, as mneme export writes it); ' +
  "a mem0 export is imported with --from mem0 (importData(lines, { from: 'mem0' })); nothing was imported\n";

/** README, Export and import: `mneme import --from mem0 mem0.json`; left without --from, the file is read as mneme's. */
describe('mneme import of a file that is not a mneme export', () => {
  it('says a mem0 export needs --from mem0, for the pretty-printed JSON and the JSON lines of mem0, and imports nothing', async () => {
    const items = (JSON.parse(readFileSync(mem0File, 'utf8')) as { results: unknown[] }).results;
    const lines = join(folder, 'mem0.jsonl');
    writeFileSync(lines, `\n${items.map((item) => JSON.stringify(item)).join('\n')}\n`);
    for (const [file, line] of [
      [mem0File, 1],
      [lines, 2],
    ] as const) {
      const database = join(folder, `${line}.db`);
      const run = await runCli(database, ['import', file]);
      expect(run).toEqual({ code: 2, stdout: '', stderr: refusal(line) });
      expect((await runCli(database, ['--json', 'stats'])).stdout).toContain('"total": 0');
      const retried = await runCli(database, ['import', '--from', 'mem0', file]);
      expect(retried.code).toBe(0);
      expect(retried.stdout).toContain(`${items.length} memories`);
    }
  });

  it('still names the version of a mneme export it cannot read', async () => {
    const source = join(folder, 'source.db');
    expect((await runCli(source, ['add', 'Kept for the export'])).code).toBe(0);
    const exported = await runCli(source, ['export']);
    const newer = exported.stdout.replace('"version":1', '"version":5');
    const file = join(folder, 'newer.jsonl');
    writeFileSync(file, newer);
    const run = await runCli(join(folder, 'target.db'), ['import', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^mneme: line 1: invalid header: version: this mneme reads mneme-export versions 1 to 4 only/,
    );
  });
});
