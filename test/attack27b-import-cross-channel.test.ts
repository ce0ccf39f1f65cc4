import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';
import { type ExportRecord, expectImportRefused, exportRecords, writeExportFile } from './export-file-fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack27b-cross-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-b, attack 27b): ingest refuses a reply to a message of another channel, but an import took a
 * message whose `replyTo`, or a memory whose `searchContextMessageId` or exchange `chunk`, named a message of another
 * channel (a lobby message answering Bob's words in his direct channel, a lobby memory whose search context is one of
 * them): extraction and recall then read that message beside the lobby's. Such a file is now refused with its line.
 */
describe('an export whose reference names a message of another channel', () => {
  it('is refused with its line, exit 2 and nothing imported', async () => {
    const source = join(folder, 'source.db');
    const mneme = await createMneme({ path: source, logger: quiet });
    await mneme.putChannel({ id: 'dm-bob-carol', visibility: 'direct', members: ['bob', 'carol'] });
    await mneme.putChannel({ id: 'lobby', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.ingestExchange({
      channelId: 'dm-bob-carol',
      userId: 'bob',
      userName: 'Bob',
      userMessage: 'My salary is 90k and I keep it quiet',
      assistantReply: 'Noted.',
    });
    await mneme.ingestExchange({
      channelId: 'lobby',
      userId: 'ann',
      userName: 'Ann',
      userMessage: 'The offsite is in Lisbon next spring',
      assistantReply: 'Sounds lovely.',
    });
    await mneme.whenIdle();
    await mneme.close();
    const file = join(folder, 'full.jsonl');
    const records = await exportRecords(source, file);
    const dm = records.find((record) => record.type === 'message' && record.channelId === 'dm-bob-carol');
    const lobbyReply = records.find(
      (record) => record.type === 'message' && record.channelId === 'lobby' && record.role === 'assistant',
    );
    const lobbyTurn = records.find(
      (record) => record.type === 'memory' && record.category === 'exchange' && record.channelId === 'lobby',
    );
    expect(dm && lobbyReply && lobbyTurn).toBeTruthy();
    const change = (target: ExportRecord | undefined, fields: Partial<ExportRecord>) =>
      records.map((record) => (record === target ? { ...record, ...fields } : record));

    const cases: Array<[string, ExportRecord[], RegExp]> = [
      [
        'reply',
        change(lobbyReply, { replyTo: dm?.id }),
        /replyTo names message \d+ of channel dm-bob-carol: a reply answers a message of its own channel/,
      ],
      [
        'search-context',
        change(lobbyTurn, { searchContext: 'Bob: My salary is 90k', searchContextMessageId: dm?.id }),
        /searchContextMessageId names message \d+ of channel dm-bob-carol, which the memory does not cite/,
      ],
      [
        'chunk',
        change(lobbyTurn, { chunk: { messageId: dm?.id, index: 0 } }),
        /chunk names message \d+ of channel dm-bob-carol, which the memory does not cite/,
      ],
    ];
    for (const [name, crafted, message] of cases) {
      await expectImportRefused(join(folder, `${name}.db`), writeExportFile(folder, `${name}.jsonl`, crafted), message);
    }
    const whole = await runCli(join(folder, 'whole.db'), ['import', file]);
    expect(whole.code, whole.stderr).toBe(0);
  }, 60_000);
});
