import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';
import { type ExportRecord, expectImportRefused, exportRecords, writeExportFile } from './export-file-fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack26b-import-dup-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/** `records` with a copy of the last record of `type` (changed by `change`) right after it. */
function twice(records: readonly ExportRecord[], type: string, change: Partial<ExportRecord> = {}): ExportRecord[] {
  const index = records.findLastIndex((record) => record.type === type);
  const copy = { ...(records[index] as ExportRecord), ...change };
  return [...records.slice(0, index + 1), copy, ...records.slice(index + 1)];
}

/**
 * Attack finding (wt-b, attack 26b): an export file that holds one row twice was imported as the store happened to
 * take it. A second channel, policy version or memory version number failed the import as a failure of the database
 * (exit 7, SQLite's or PostgreSQL's own words about a unique constraint); a second user, membership, link or
 * watermark was imported, the report counting it twice, and of two watermarks of one channel the later kept: a
 * watermark set back made the restored database extract again the messages whose memories the file holds. Such a
 * file is now refused as bad input: exit 2, the line and the row named, nothing imported.
 */
describe('an export file that holds a row twice', () => {
  it('is refused with its line, exit 2, and nothing imported', async () => {
    const source = join(folder, 'source.db');
    const mneme = await createMneme({ path: source, logger: quiet });
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['ann', 'eve'] });
    await mneme.ingestExchange({
      channelId: 'lobby',
      userId: 'eve',
      userName: 'Eve',
      userMessage: 'I prefer tea over coffee in the morning',
      assistantReply: 'Noted.',
    });
    await mneme.whenIdle();
    const [first, second] = (await mneme.list({ limit: 2 })).memories;
    await mneme.close();
    const file = join(folder, 'full.jsonl');
    const records = await exportRecords(source, file);
    const link = { type: 'link', sourceId: first?.id, targetId: second?.id, linkType: 'semantic', strength: 0.9 };
    const withLink = [
      ...records.slice(0, records.findLastIndex((record) => record.type === 'memory') + 1),
      { ...link, createdAt: '2026-01-05T09:01:00.000Z' },
      ...records.slice(records.findLastIndex((record) => record.type === 'memory') + 1),
    ];
    const memoryWithVersionTwice = records.map((record) =>
      record.type === 'memory' && record.id === first?.id
        ? { ...record, versions: [...(record.versions as unknown[]), ...(record.versions as unknown[])] }
        : record,
    );

    const cases: Array<[string, ExportRecord[], RegExp]> = [
      ['policy', twice(records, 'policy', { preset: 'salience' }), /a second record of policy version 1/],
      ['channel', twice(records, 'channel', { visibility: 'private' }), /a second record of channel lobby/],
      ['membership', twice(records, 'membership'), /a second record of the membership of eve in channel lobby/],
      ['user', twice(records, 'user', { displayName: 'Mallory' }), /a second record of user eve/],
      [
        'watermark',
        twice(records, 'watermark', { watermark: 0 }),
        /a second record of the extraction watermark of 'lobby'/,
      ],
      ['link', twice(withLink, 'link'), /a second record of the semantic link from memory/],
      ['version', memoryWithVersionTwice, /the memory holds its version 1 twice/],
    ];
    for (const [name, crafted, message] of cases) {
      await expectImportRefused(
        join(folder, `${name}.db`),
        writeExportFile(folder, `${name}.jsonl`, crafted),
        message,
        /the file holds each row once; nothing was imported\n$|twice; nothing was imported\n$/,
      );
    }
    const whole = await runCli(join(folder, 'whole.db'), ['import', writeExportFile(folder, 'whole.jsonl', withLink)]);
    expect(whole.code, whole.stderr).toBe(0);
  }, 60_000);
});
