import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';
import { type ExportRecord, expectImportRefused, exportRecords, writeExportFile } from './export-file-fixture.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack27b-spaces-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };

/**
 * Attack finding (wt-b, attack 27b): an import refused a memory naming a topic the file does not hold, but took a
 * membership of a channel, topic or project the file does not hold, and a message of such a topic. A file could so
 * plant Ann as a member of a private channel nobody had declared yet ('board'): no listing of channels showed it, and
 * when an administrator later declared the board private without naming its members, Ann read it. Such a file is now
 * refused with its line, as the other references are. So is a memory naming a project the file does not hold (it was
 * taken unchecked, as were a memory's topic once): in project scope its audience, in any scope the lists it is in.
 */
describe('an export whose membership or message names a space the file does not hold', () => {
  it('is refused with its line, exit 2 and nothing imported', async () => {
    const source = join(folder, 'source.db');
    const mneme = await createMneme({ path: source, logger: quiet });
    await mneme.putChannel({ id: 'lobby', visibility: 'private', members: ['ann', 'bob'] });
    await mneme.ingest({ channelId: 'lobby', sender: 'ann', senderName: 'Ann', content: 'Good morning everyone' });
    // A channel written in and never declared: its members are its senders, and it has no channel record.
    await mneme.ingest({ channelId: 'hallway', sender: 'bob', senderName: 'Bob', content: 'Coffee is ready' });
    await mneme.remember({ content: 'Ann waters the lobby plants on Fridays', userId: 'ann' });
    await mneme.whenIdle();
    await mneme.close();
    const file = join(folder, 'full.jsonl');
    const records = await exportRecords(source, file);
    const firstMessage = records.findIndex((record) => record.type === 'message');
    const planted = (kind: string) => [
      ...records.slice(0, firstMessage),
      { type: 'membership', kind, spaceId: 'board', userId: 'ann', addedAt: '2026-01-05T09:01:00.000Z' },
      ...records.slice(firstMessage),
    ];
    const cases: Array<[string, ExportRecord[], RegExp]> = [
      [
        'channel',
        planted('channel'),
        /the membership of ann names channel board, which the file neither declares nor holds a message of/,
      ],
      ['topic', planted('topic'), /the membership of ann names topic board, which is not earlier in the file/],
      ['project', planted('project'), /the membership of ann names project board, which is not earlier in the file/],
      [
        'message-topic',
        records.map((record) => (record.type === 'message' ? { ...record, topicId: 'board' } : record)),
        /message \d+ names topic board, which is not earlier in the file/,
      ],
      [
        'memory-project',
        records.map((record) => (record.type === 'memory' ? { ...record, projectId: 'board' } : record)),
        /the memory names project board, which is not earlier in the file/,
      ],
      [
        'project-memory',
        records.map((record) =>
          record.type === 'memory' ? { ...record, scope: 'project', projectId: 'board' } : record,
        ),
        /the memory names project board, which is not earlier in the file/,
      ],
    ];
    for (const [name, crafted, message] of cases) {
      await expectImportRefused(join(folder, `${name}.db`), writeExportFile(folder, `${name}.jsonl`, crafted), message);
    }
    const whole = await runCli(join(folder, 'whole.db'), ['import', file]);
    expect(whole.code, whole.stderr).toBe(0);
  }, 60_000);
});
