import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';
import { storesIn } from './data-from-before.js';
import { type ExportRecord, expectImportRefused, exportRecords, writeExportFile } from './export-file-fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-import-ids-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/** A true export of a small database: Ann and Bob in the lobby, Ann's exchange with the assistant. */
async function trueExport(): Promise<ExportRecord[]> {
  const source = join(folder, 'source.db');
  const mneme = await createMneme({ path: source, logger: quiet });
  await mneme.putChannel({ id: 'lobby', visibility: 'private', members: ['ann', 'bob'] });
  await mneme.ingestExchange({
    channelId: 'lobby',
    userId: 'ann',
    userName: 'Ann',
    userMessage: 'I moved to the night shift this month',
    assistantReply: 'Noted, good luck with the nights.',
  });
  await mneme.remember({ content: 'Ann likes oat milk in her coffee', userId: 'ann' });
  await mneme.whenIdle();
  await mneme.close();
  return exportRecords(source, join(folder, 'full.jsonl'));
}

/**
 * Every face trims the ids it is given and refuses mneme's own actors as users (ADR 38), through the shared schemas;
 * `mneme import` took the ids of an export file as they were: a user " ann" became a user of her own beside ann, whom
 * no other face could name, and a file could make `assistant` a member, a user with a display name or the sender of
 * user messages. Such a file is now refused with its line, exit 2 and nothing imported, on both stores.
 */
describe.each(storesIn(folder))('an import on %s', (store, pathOf) => {
  it('refuses an id with white space around it or a reserved id as a user, naming the line', async () => {
    const records = await trueExport();
    const annUser = records.find((record) => record.type === 'user' && record.id === 'ann');
    const annMessage = records.find((record) => record.type === 'message' && record.senderId === 'ann');
    const member = records.find((record) => record.type === 'membership' && record.userId === 'bob');
    expect(annUser && annMessage && member).toBeTruthy();
    const change = (target: ExportRecord | undefined, fields: Partial<ExportRecord>) =>
      records.map((record) => (record === target ? { ...record, ...fields } : record));
    const cases: Array<[string, ExportRecord[], RegExp]> = [
      ['user', change(annUser, { id: ' ann' }), /" ann" begins or ends with white space/],
      ['sender', change(annMessage, { senderId: 'ann\t' }), /"ann\\t" begins or ends with white space/],
      ['member', change(member, { userId: 'bob ' }), /"bob " begins or ends with white space/],
      ['reserved-user', change(annUser, { id: 'assistant' }), /user "assistant" is reserved/],
      ['reserved-member', change(member, { userId: 'maintenance' }), /the member "maintenance" is reserved/],
      [
        'reserved-sender',
        records.map((record) =>
          record.type === 'message' && record.role === 'user' ? { ...record, senderId: 'assistant' } : record,
        ),
        /the sender "assistant" is reserved: .*\(it sends only assistant replies\)/,
      ],
    ];
    // One target for every refused file: nothing is imported, so each starts from the same empty database.
    const target = pathOf('refused-target');
    for (const [name, crafted, message] of cases) {
      await expectImportRefused(target, writeExportFile(folder, `${store}-${name}.jsonl`, crafted), message);
    }
    const whole = await runCli(pathOf('whole'), ['import', writeExportFile(folder, `${store}-whole.jsonl`, records)]);
    expect(whole.code, whole.stderr).toBe(0);
  }, 120_000);

  it('refuses a mem0 memory of a reserved user, as a personal memory of that user is refused', async () => {
    const file = join(folder, `${store}-mem0.json`);
    writeFileSync(file, JSON.stringify([{ id: 'm1', memory: 'Likes tea in the morning', user_id: 'maintenance' }]));
    const target = pathOf('mem0-target');
    const imported = await runCli(target, ['import', '--from', 'mem0', file]);
    expect(imported.code, imported.stderr).toBe(2);
    expect(imported.stderr).toMatch(/userId "maintenance" is reserved/);
  }, 60_000);
});
