import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';
import { createMneme } from '../config/create-mneme.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-ingest-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;

function jsonl(lines: readonly unknown[]): string {
  const path = join(folder, `input-${files++}.jsonl`);
  writeFileSync(path, lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n'));
  return path;
}

const run = (database: string, argv: string[], stdin?: NodeJS.ReadableStream) =>
  runCli(database, argv, stdin ? { stdin } : {});

async function turnsOf(database: string, channelId: string) {
  const mneme = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
  try {
    return (await mneme.turns({ channelId, count: 50 })).map((turn) => turn.content);
  } finally {
    await mneme.close();
  }
}

const message = (content: string, extra: Record<string, unknown> = {}) => ({
  channelId: 'room',
  sender: 'oz',
  senderName: 'Oz',
  content,
  ...extra,
});

describe('mneme ingest', () => {
  it('ingests messages and exchanges, waits for extraction and reports counts', async () => {
    const database = join(folder, 'counts.db');
    const file = jsonl([
      message('I prefer dark mode in every editor', { createdAt: '2023-05-08T13:56:00Z' }),
      '',
      {
        channelId: 'room',
        userId: 'oz',
        userMessage: 'I have two cats called Miso and Tofu',
        assistantReply: 'Lovely names!',
      },
      message('/remember I am allergic to peanuts'),
    ]);
    const result = await run(database, ['--json', 'ingest', file]);
    expect(result.code).toBe(0);
    // One final line (stderr is no terminal): the lines read, the messages appended and extracted.
    expect(result.stderr).toMatch(
      new RegExp(`^ingesting \\[${'#'.repeat(30)}\\] 100% 4 lines · appended 4 · extracted 4/4 · [\\d,]+ msg/s\n$`),
    );
    expect(JSON.parse(result.stdout)).toMatchObject({
      lines: 4,
      messages: 4,
      exchanges: 1,
      commands: 1,
      droppedJobs: 0,
      // two facts, the exchange, the /remember memory, and the first message's own turn
      newMemories: 5,
    });
    const text = await run(database, ['ingest', jsonl([message('I work as a carpenter in Bergen')])]);
    expect(text.stdout).toMatch(/^ingested 1 messages \(0 exchanges, 0 commands\) from 1 lines; 2 new memories; /);
    expect(text.stdout).toMatch(/messages\/s\n$/);
  });

  it('stops at a malformed line with its number, having written the lines before it and nothing of it', async () => {
    const database = join(folder, 'malformed.db');
    const broken = await run(database, [
      'ingest',
      jsonl([message('first'), message('second'), '{"channelId": "room",']),
    ]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/^mneme: line 3: not valid JSON/);
    expect(await turnsOf(database, 'room')).toEqual(['first', 'second']);

    const invalid = await run(database, [
      'ingest',
      jsonl([
        message('third'),
        { channelId: 'room', userId: 'oz', userMessage: 'a question', assistantReply: 'x'.repeat(40_000) },
      ]),
    ]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^mneme: line 2: invalid exchange: assistantReply: a message is longer than/);
    expect(await turnsOf(database, 'room')).toEqual(['first', 'second', 'third']);

    const notAnObject = await run(database, ['ingest', jsonl(['[1, 2]'])]);
    expect(notAnObject).toMatchObject({ code: 2, stderr: expect.stringMatching(/line 1: expected a JSON object/) });
  });

  it('says a file is JSON lines when given a JSON document: a list of messages, or one object spread over lines', async () => {
    const database = join(folder, 'json-document.db');
    const items = [message('first'), message('second')];
    const pretty = join(folder, 'pretty.json');
    writeFileSync(pretty, JSON.stringify(items, null, 2));
    const spread = await run(database, ['ingest', pretty]);
    expect(spread).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'mneme: line 1: not valid JSON (Unexpected end of JSON input): each line holds one whole JSON object (JSON lines, not a JSON document spread over lines); nothing of this line was written, the lines before it were\n',
    });
    const list = await run(database, ['ingest', jsonl([JSON.stringify(items)])]);
    expect(list).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'mneme: line 1: expected a JSON object (a message or an exchange), not a list: the file holds one object a line (JSON lines); nothing of this line was written, the lines before it were\n',
    });
    expect(await turnsOf(database, 'room')).toEqual([]);
  });

  it('keeps the lines before one the engine refuses (a reply to no message), naming its line, and a byte-order mark is skipped', async () => {
    const database = join(folder, 'refused.db');
    const file = jsonl([
      message('first'),
      message('second'),
      message('third', { replyTo: 999_999 }),
      message('fourth'),
    ]);
    writeFileSync(file, `\uFEFF${readFileSync(file, 'utf8')}`);
    const result = await run(database, ['ingest', file]);
    expect(result).toMatchObject({
      code: 2,
      stderr:
        'mneme: line 3: invalid message: replyTo: no message 999999; nothing of this line was written, the lines before it were\n',
    });
    expect(await turnsOf(database, 'room')).toEqual(['first', 'second']);
  });

  it('refuses a line that is not UTF-8 (a Latin-1 export) instead of storing U+FFFD, keeping the lines before it', async () => {
    const database = join(folder, 'latin1.db');
    const file = join(folder, 'latin1.jsonl');
    const line = (content: string) => Buffer.from(`${JSON.stringify(message(content))}`, 'latin1');
    // CRLF, then a lone CR, then a Latin-1 "é" (0xe9), which is no UTF-8 character.
    writeFileSync(
      file,
      Buffer.concat([line('first'), Buffer.from('\r\n'), line('second'), Buffer.from('\r'), line('café au lait')]),
    );
    const result = await run(database, ['ingest', file]);
    const at = line('café au lait').indexOf(0xe9) + 1;
    expect(result).toMatchObject({
      code: 2,
      stderr: `mneme: line 3: not UTF-8 text (byte 0xe9 at byte ${at} of the line); save the file as UTF-8; nothing of this line was written, the lines before it were\n`,
    });
    expect(await turnsOf(database, 'room')).toEqual(['first', 'second']);
  });

  it('resumes a file an earlier version ingested with U+FFFD for its bad bytes, and still refuses them after it', async () => {
    const database = join(folder, 'latin1-resume.db');
    const file = join(folder, 'latin1-resume.jsonl');
    const line = (content: string) => Buffer.from(JSON.stringify(message(content)), 'latin1');
    writeFileSync(file, Buffer.concat([line('first'), Buffer.from('\n'), line('café'), Buffer.from('\n')]));
    // What a version before the UTF-8 check recorded: the lines read with U+FFFD, their hash, and the lines stored.
    const read = readFileSync(file, 'utf8').split('\n').slice(0, 2);
    const prefixSha256 = createHash('sha256')
      .update(read.map((text) => `${text}\n`).join(''))
      .digest('hex');
    const earlier = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
    try {
      await earlier.ingestMany(
        read.map((text) => JSON.parse(text)),
        { file: { path: file, line: 2, prefixSha256 } },
      );
    } finally {
      await earlier.close();
    }
    writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.from(`${JSON.stringify(message('third'))}\n`)]));
    const resumed = await run(database, ['ingest', file, '--resume']);
    expect(resumed.code).toBe(0);
    expect(await turnsOf(database, 'room')).toEqual(['first', 'caf\uFFFD', 'third']);

    writeFileSync(file, Buffer.concat([readFileSync(file), line('crème'), Buffer.from('\n')]));
    const refused = await run(database, ['ingest', file, '--resume']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^mneme: line 4: not UTF-8 text \(byte 0xe8 at/);
    expect(await turnsOf(database, 'room')).toEqual(['first', 'caf\uFFFD', 'third']);
  });

  it('decodes a character whose bytes are split between two reads of standard input', async () => {
    const database = join(folder, 'split.db');
    const bytes = Buffer.from(`${JSON.stringify(message('naïve café 🎉'))}\n`);
    const cut = bytes.indexOf(Buffer.from('🎉')) + 2;
    const result = await run(database, ['ingest', '-'], Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]));
    expect(result.code).toBe(0);
    expect(await turnsOf(database, 'room')).toEqual(['naïve café 🎉']);
  });

  it('refuses a line longer than 64 MiB at once, keeping the lines before it', async () => {
    const database = join(folder, 'huge.db');
    const mebibyte = Buffer.alloc(1024 * 1024, 'x');
    async function* input() {
      yield Buffer.from(`${JSON.stringify(message('before the long line'))}\n{"content":"`);
      for (let index = 0; index < 70; index++) yield mebibyte;
    }
    const result = await run(database, ['ingest', '-'], Readable.from(input()));
    expect(result).toMatchObject({ code: 2 });
    expect(result.stderr).toMatch(/^mneme: line 2: longer than 64 MiB; a line holds one record/);
    expect(await turnsOf(database, 'room')).toEqual(['before the long line']);
  });

  it('refuses a folder with exit code 2 and one line', async () => {
    const result = await run(join(folder, 'folder.db'), ['ingest', folder]);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toBe(`mneme: ${folder} is a folder: give a .jsonl file, or - to read standard input\n`);
  });

  it('reads standard input for -', async () => {
    const database = join(folder, 'stdin.db');
    const input = Readable.from([
      `${JSON.stringify(message('from a pipe, line one'))}\n`,
      JSON.stringify(message('two')),
    ]);
    const result = await run(database, ['--json', 'ingest', '-'], input);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ lines: 2, messages: 2 });
    expect(await turnsOf(database, 'room')).toEqual(['from a pipe, line one', 'two']);
  });

  it('draws a progress bar on stderr when asked, and says when the file is missing', async () => {
    const database = join(folder, 'progress.db');
    const lines = Array.from({ length: 200 }, (_, index) => message(`I visited museum number ${index} in Paris`));
    const result = await run(database, ['ingest', '--progress', jsonl(lines)]);
    expect(result.code).toBe(0);
    // Drawn in place, it follows the extraction behind the append and ends once extraction is idle.
    expect(result.stderr).toMatch(
      /\ringesting \[#{30}\] 100% 200 lines · appended 200 · extracted 200\/200 · [\d,]+ msg\/s\n$/,
    );
    const missing = await run(database, ['ingest', join(folder, 'nope.jsonl')]);
    expect(missing).toMatchObject({ code: 3, stderr: expect.stringMatching(/cannot read .*nope\.jsonl/) });
  });
});
