import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';

const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-retried-cli-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Runs the built CLI in a child process; never rejects. */
function mneme(database: string, argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [binary, '--db', database, ...argv],
      { env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' } },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function write(name: string, lines: readonly unknown[]): string {
  const path = join(folder, name);
  writeFileSync(path, `${lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n')}\n`);
  return path;
}

/** The channel's messages and the database's memories by category, read through the library. */
async function contents(database: string) {
  const engine = await createMneme({ path: database, logger: { warn: () => {}, info: () => {} } });
  try {
    const messages = (await engine.turns({ channelId: 'room', count: 50 })).map((message) => message.content);
    const { memories } = await engine.list({ limit: 500 });
    const exchanges = memories.filter((memory) => memory.category === 'exchange').length;
    return { messages, exchanges, memories: memories.length };
  } finally {
    await engine.close();
  }
}

const say = (content: string, extra: Record<string, unknown> = {}) => ({
  channelId: 'room',
  sender: 'oz',
  senderName: 'Oz',
  content,
  ...extra,
});

describe('mneme ingest, run again', () => {
  it('stores lines with external ids once when the same file is ingested twice', async () => {
    expect(existsSync(binary), 'run `npm run build` first').toBe(true);
    const database = join(folder, 'twice.db');
    const file = write('with-ids.jsonl', [
      say('I have two cats called Miso and Tofu', { externalId: '$e1' }),
      {
        channelId: 'room',
        userId: 'oz',
        userMessage: 'I am learning to play the cello this winter',
        assistantReply: 'What a lovely instrument to learn!',
        externalId: '$e2',
        replyExternalId: '$e3',
      },
      say('/remember I am allergic to peanuts', { externalId: '$e4' }),
    ]);
    const first = await mneme(database, ['--json', 'ingest', file]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ messages: 4, duplicates: 0, exchanges: 1, commands: 1 });
    const before = await contents(database);

    const second = await mneme(database, ['--json', 'ingest', file]);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      messages: 0,
      duplicates: 4,
      exchanges: 0,
      commands: 0,
      newMemories: 0,
    });
    expect(second.stderr).toContain('were ingested before; --resume continues after them');
    expect(await contents(database)).toEqual(before);
    expect(before.messages).toHaveLength(4);
  });

  it('continues after the last committed line with --resume once a bad line is fixed, and refuses a changed file', async () => {
    const database = join(folder, 'resume.db');
    const lines = [say('line one'), '', say('line three'), '{"channelId": "room",', say('line five'), say('line six')];
    const file = write('resume.jsonl', lines);
    const broken = await mneme(database, ['ingest', file]);
    expect(broken).toMatchObject({ code: 2, stdout: '' });
    expect(broken.stderr).toMatch(/^mneme: line 4: not valid JSON/);
    expect((await contents(database)).messages).toEqual(['line one', 'line three']);

    write('resume.jsonl', lines.with(3, say('line four, fixed')));
    const resumed = await mneme(database, ['--json', 'ingest', file, '--resume']);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ resumedAfter: 3, lines: 3, messages: 3, duplicates: 0 });
    expect((await contents(database)).messages).toEqual([
      'line one',
      'line three',
      'line four, fixed',
      'line five',
      'line six',
    ]);
    const text = await mneme(database, ['ingest', file, '--resume']);
    expect(text.stdout).toMatch(
      /^ingested 0 messages \(0 exchanges, 0 commands\) from 0 lines after line 6; 0 new memories/,
    );

    const before = await contents(database);
    write('resume.jsonl', [
      say('line one, edited'),
      ...lines.slice(1, 3),
      say('line four, fixed'),
      ...lines.slice(4),
      say('seven'),
    ]);
    const changed = await mneme(database, ['ingest', file, '--resume']);
    expect(changed).toMatchObject({ code: 4, stdout: '' });
    expect(changed.stderr).toMatch(
      /^mneme: .*resume\.jsonl changed since an earlier run committed its lines 1-6 \(they differ now\); nothing was written/,
    );
    write('resume.jsonl', [say('line one')]);
    const shorter = await mneme(database, ['ingest', file, '--resume']);
    expect(shorter).toMatchObject({ code: 4, stderr: expect.stringMatching(/lines 1-6 \(it is shorter now\)/) });
    expect(await contents(database)).toEqual(before);

    const stdin = await mneme(database, ['ingest', '-', '--resume']);
    expect(stdin).toMatchObject({
      code: 2,
      stderr: 'mneme: --resume needs a file: standard input has no lines to continue after\n',
    });
  });
});
