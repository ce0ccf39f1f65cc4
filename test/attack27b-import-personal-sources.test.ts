import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import { runCli } from './cli-harness.js';
import { type ExportRecord, expectImportRefused, exportRecords, writeExportFile } from './export-file-fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack27b-personal-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/** The records with `change` applied to the memory whose content matches `content`. */
function changeMemory(
  records: readonly ExportRecord[],
  content: RegExp,
  change: Partial<ExportRecord>,
): ExportRecord[] {
  let found = false;
  const changed = records.map((record) => {
    if (record.type !== 'memory' || !content.test(String(record.content))) return record;
    found = true;
    return { ...record, ...change };
  });
  if (!found) throw new Error(`no memory says ${content}`);
  return changed;
}

/**
 * Attack finding (wt-b, attack 27b): an import checked the audience of every memory it brought against the channels
 * it cites (attack 18), but left personal memories alone, as an audience change does (the speaker's own). A file
 * whose memory extracted from Bob's words in his direct channel with Carol was made personal to Ann (its `userId`
 * changed) was imported as it said, and Ann recalled Bob's salary from a conversation she never could read; a
 * personal memory of Ann built on Bob's personal memory likewise. A personal memory now cites only messages of
 * channels its user could read (a member, a public channel, or one they spoke in: a member removed keeps what they
 * said) and is built only on memories of its user or that its user sees; any other stops the import with its line.
 */
describe('an export whose personal memory comes from what its user could not see', () => {
  it('is refused with its line, exit 2 and nothing imported, where the true file imports', async () => {
    const source = join(folder, 'source.db');
    const mneme = await createMneme({ path: source, logger: quiet });
    await mneme.putChannel({ id: 'dm-bob-carol', visibility: 'direct', members: ['bob', 'carol'] });
    await mneme.putChannel({ id: 'lobby', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.putChannel({ id: 'board', visibility: 'private', members: ['ann', 'dan'] });
    await mneme.ingestExchange({
      channelId: 'dm-bob-carol',
      userId: 'bob',
      userName: 'Bob',
      userMessage: 'I prefer tea over coffee and my salary is 90k',
      assistantReply: 'Noted.',
    });
    await mneme.ingest({ channelId: 'lobby', sender: 'ann', senderName: 'Ann', content: 'I prefer jasmine tea' });
    await mneme.ingest({ channelId: 'board', sender: 'ann', senderName: 'Ann', content: 'I prefer walking to work' });
    await mneme.whenIdle();
    // Ann leaves the board: what she said there stays hers.
    await mneme.putChannel({ id: 'board', members: ['dan'] });
    await mneme.close();
    const file = join(folder, 'full.jsonl');
    const records = await exportRecords(source, file);
    const bobs = records.find((record) => record.type === 'memory' && /salary/.test(String(record.content)));
    expect(bobs).toMatchObject({ scope: 'personal', userId: 'bob' });

    const cases: Array<[string, ExportRecord[], RegExp]> = [
      [
        'cites',
        changeMemory(records, /salary/, { userId: 'ann' }),
        /memory \d+ is personal to ann but cites message \d+ of channel dm-bob-carol, which ann could not read/,
      ],
      [
        'built-on',
        changeMemory(records, /jasmine/, { sourceIds: [bobs?.id] }),
        /memory \d+ is personal to ann but is built on memory \d+ \(personal to bob\), which ann does not see/,
      ],
    ];
    for (const [name, crafted, message] of cases) {
      await expectImportRefused(join(folder, `${name}.db`), writeExportFile(folder, `${name}.jsonl`, crafted), message);
    }

    const whole = join(folder, 'whole.db');
    const restored = await runCli(whole, ['import', file]);
    expect(restored.code, restored.stderr).toBe(0);
    const annSees = await runCli(whole, ['--json', '--as', 'ann', 'list']);
    expect(annSees.stdout).toContain('walking to work');
    expect(annSees.stdout).not.toContain('salary');
  }, 60_000);
});

describe('the library import on PGlite of a personal memory made from a direct channel of others', () => {
  it('is refused as bad input inside its transaction and leaves the database empty', async () => {
    const sourceEngine = await createMneme({ path: 'pglite:memory:', logger: quiet });
    const target = await createMneme({ path: 'pglite:memory:', logger: quiet });
    try {
      await sourceEngine.putChannel({ id: 'dm-bob-carol', visibility: 'direct', members: ['bob', 'carol'] });
      await sourceEngine.putChannel({ id: 'lobby', visibility: 'private', members: ['ann', 'bob'] });
      await sourceEngine.ingest({
        channelId: 'dm-bob-carol',
        sender: 'bob',
        senderName: 'Bob',
        content: 'I prefer tea and my salary is 90k',
      });
      await sourceEngine.ingest({
        channelId: 'lobby',
        sender: 'ann',
        senderName: 'Ann',
        content: 'I prefer jasmine tea',
      });
      await sourceEngine.whenIdle();
      const lines: string[] = [];
      for await (const line of sourceEngine.exportData()) lines.push(line);
      const crafted = lines.map((line) => {
        const record = JSON.parse(line) as ExportRecord;
        return record.type === 'memory' && /salary/.test(String(record.content))
          ? JSON.stringify({ ...record, userId: 'ann' })
          : line;
      });
      expect(crafted).not.toEqual(lines);
      const error = await target.importData(crafted).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(isMnemeError(error) && error.code).toBe('INVALID_INPUT');
      expect(String((error as Error).message)).toMatch(
        /is personal to ann but cites message \d+ of channel dm-bob-carol/,
      );
      expect((await target.list({ limit: 10 })).memories).toEqual([]);
      expect(await target.importData(lines)).toMatchObject({ messages: 2 });
    } finally {
      await sourceEngine.close();
      await target.close();
    }
  }, 60_000);
});
