import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createFakeEmbeddingModel } from '../src/testing.js';
import { normaliseExport } from './export-file-fixture.js';

const run = promisify(execFile);
const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-export-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI in a child process against `database`, without any model. */
async function cli(database: string, ...argv: string[]): Promise<CliResult> {
  const env = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
  return run(process.execPath, [binary, '--db', database, ...argv], { env, maxBuffer: 64 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

type Line = Record<string, unknown> & { type: string };
const parse = (text: string): Line[] =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line);

/** The export with ids replaced by their position and the header's time left out (`normaliseExport`). */
const normalise = (text: string) => normaliseExport(text.trim().split('\n'));

const source = join(folder, 'source.db');
let full = '';

/**
 * Ann and Bob share a private channel; Bob and Cal have a direct channel; Ann has a direct channel
 * with the agent; Dan said something in a public lobby and was then purged (so ids have gaps). Each
 * has personal memories; one memory was edited, one forgotten; maintenance linked and summarised.
 */
beforeAll(async () => {
  expect(existsSync(binary), 'run `npm run build` first').toBe(true);
  const mneme = await createMneme({ path: source, embedder: createFakeEmbeddingModel(), backfill: false });
  const at = (minute: number) => Date.UTC(2026, 0, 5, 9, minute);
  await mneme.putChannel({ id: 'shared', visibility: 'private', members: ['ann', 'bob'] });
  await mneme.putChannel({ id: 'dm-bob-cal', visibility: 'direct', members: ['bob', 'cal'] });
  await mneme.putChannel({ id: 'dm-ann', visibility: 'direct', members: ['ann'] });
  await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['dan', 'ann'] });
  await mneme.createProject({ id: 'garden', name: 'Garden', managed: true, members: ['ann'] });
  await mneme.createTopic({ id: 'planting', projectId: 'garden', title: 'Planting plan', members: ['ann'] });
  await mneme.ingest({
    channelId: 'lobby',
    sender: 'dan',
    senderName: 'Dan',
    content: 'I am Dan and I live in Oslo',
    createdAt: at(0),
  });
  await mneme.ingest({
    channelId: 'shared',
    sender: 'ann',
    senderName: 'Ann',
    content: 'I love hiking in the Alps every summer',
    createdAt: at(1),
    externalId: 'evt-shared-1',
  });
  const question = await mneme.ingest({
    channelId: 'shared',
    sender: 'bob',
    senderName: 'Bob',
    content: 'My favourite food is ramen',
    createdAt: at(2),
  });
  await mneme.ingest({
    channelId: 'shared',
    sender: 'ann',
    content: 'Ramen sounds great, let us go on Friday',
    createdAt: at(3),
    replyTo: question.messages[0]?.id ?? 0,
  });
  await mneme.ingest({
    channelId: 'dm-bob-cal',
    sender: 'bob',
    content: 'My locker code is whale-4471, keep it between us',
    createdAt: at(4),
  });
  await mneme.ingest({
    channelId: 'dm-bob-cal',
    sender: 'cal',
    senderName: 'Cal',
    content: 'I moved to Lisbon last month',
    createdAt: at(5),
  });
  await mneme.ingestExchange({
    channelId: 'dm-ann',
    userId: 'ann',
    userMessage: 'I prefer green tea over coffee',
    assistantReply: 'Noted: green tea it is.',
    createdAt: at(6),
  });
  await mneme.ingest({
    channelId: 'dm-ann',
    sender: 'ann',
    content: 'We plant tomatoes in May',
    topicId: 'planting',
    createdAt: at(7),
  });
  await mneme.ingest({ channelId: 'dm-ann', sender: 'ann', content: 'I use Vim for everything', createdAt: at(8) });
  await mneme.ingest({
    channelId: 'dm-ann',
    sender: 'ann',
    content: 'I switched from Vim to VS Code',
    createdAt: at(9),
  });
  await mneme.whenIdle();
  await mneme.remember({ content: 'Bob is allergic to peanuts', scope: 'personal', userId: 'bob', category: 'fact' });
  await mneme.remember({ content: 'Cal collects vinyl records', scope: 'personal', userId: 'cal' });
  const annNote = await mneme.remember({
    content: 'Ann runs the garden project',
    scope: 'personal',
    userId: 'ann',
    pinned: true,
  });
  await mneme.remember({ content: 'Ann wrote the style guide', scope: 'global', userId: 'ann' });
  await mneme.remember({ content: 'The office is closed on Mondays', scope: 'global' });
  await mneme.remember({ content: 'Raised beds go along the south fence', scope: 'project', projectId: 'garden' });
  await mneme.update({ id: annNote.id, content: 'Ann leads the garden project', importance: 0.9 });
  const doomed = await mneme.remember({ content: 'A note to forget', scope: 'personal', userId: 'ann' });
  await mneme.forget(doomed.id);
  await mneme.maintain({ tasks: ['link', 'consolidate'] });
  await mneme.purgeUser('dan');
  await mneme.close();
  const exported = await cli(source, 'export');
  expect(exported.stderr).toBe('');
  expect(exported.code).toBe(0);
  full = exported.stdout;
});

describe('mneme export and import (the built CLI)', () => {
  it('writes a header, records in the documented order and an end line that counts them', () => {
    const lines = parse(full);
    expect(lines[0]).toMatchObject({ type: 'header', format: 'mneme-export', version: 1, user: null, preset: 'mneme' });
    expect(lines.at(-1)).toEqual({ type: 'end', records: lines.length - 2 });
    const order = [
      'policy',
      'user',
      'project',
      'topic',
      'channel',
      'membership',
      'message',
      'memory',
      'link',
      'watermark',
    ];
    const types = lines.slice(1, -1).map((line) => order.indexOf(line.type));
    expect(types).toEqual([...types].sort((a, b) => a - b));
    expect(new Set(lines.map((line) => line.type))).toEqual(new Set(['header', 'end', ...order]));
    const memories = lines.filter((line) => line.type === 'memory');
    expect(memories.find((memory) => memory.content === 'Ann leads the garden project')?.versions).toHaveLength(2);
    expect(memories.find((memory) => memory.content === 'A note to forget')?.archivedAt).not.toBeNull();
    expect(memories.some((memory) => memory.supersededBy !== null)).toBe(true);
    expect(memories.some((memory) => (memory.sourceMessageIds as number[]).length > 0)).toBe(true);
  });

  it("keeps a message's external id, and leaves the field out of a message that had none", () => {
    const messages = full
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((record) => record.type === 'message');
    expect(messages.filter((record) => 'externalId' in record).map((record) => record.externalId)).toEqual([
      'evt-shared-1',
    ]);
  });

  it('restores into an empty database with new ids and exports the same file again apart from ids', async () => {
    const file = join(folder, 'full.jsonl');
    writeFileSync(file, full);
    const target = join(folder, 'restored.db');
    const imported = await cli(target, 'import', file);
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^imported 3 users, 1 projects, 1 topics, 4 channels, .* messages, .* memories/);

    const again = await cli(target, 'export', '--out', join(folder, 'again.jsonl'));
    expect(again).toMatchObject({ code: 0, stdout: expect.stringMatching(/^exported \d+ lines to /) });
    const second = readFileSync(join(folder, 'again.jsonl'), 'utf8');
    expect(normalise(second)).toEqual(normalise(full));
    // The purge left gaps, so the ids were really given anew (the comparison above is not trivial).
    const ids = (text: string) =>
      parse(text)
        .filter((line) => line.type === 'message')
        .map((line) => line.id);
    expect(ids(second)).not.toEqual(ids(full));

    // The restored database answers searches from what it restored.
    const search = await cli(target, 'search', 'hiking Alps', '--channel', 'shared', '--user', 'ann');
    expect(search.stdout).toContain('hiking');
  });

  it('refuses to import into a database that is not empty, and changes nothing', async () => {
    const file = join(folder, 'full.jsonl');
    writeFileSync(file, full);
    const failed = await cli(source, 'import', file);
    expect(failed.code).toBe(4);
    expect(failed.stderr).toMatch(/^mneme: the database is not empty/);
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect((await cli(source, 'export')).stdout.split('\n').length).toBe(full.split('\n').length);
  });

  it('rolls back the whole import on a bad line and names it', async () => {
    const lines = full.trim().split('\n');
    const memoryLine = lines.findIndex((line) => line.includes('"type":"memory"'));
    const broken = [...lines];
    broken[memoryLine + 1] = (broken[memoryLine + 1] ?? '').replace('"scope":"', '"scope":"everyone-');
    const file = join(folder, 'broken.jsonl');
    writeFileSync(file, `${broken.join('\n')}\n`);
    const target = join(folder, 'broken.db');
    const failed = await cli(target, 'import', file);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(new RegExp(`^mneme: line ${memoryLine + 2}: scope: .*nothing was imported\\n$`));
    const after = parse((await cli(target, 'export')).stdout);
    expect(after.filter((line) => !['header', 'policy', 'end'].includes(line.type))).toEqual([]);
    // The same database takes the good file afterwards: the failed import left it empty.
    writeFileSync(join(folder, 'good.jsonl'), full);
    expect((await cli(target, 'import', join(folder, 'good.jsonl'))).code).toBe(0);
  });

  it('refuses a file re-saved as Latin-1 instead of storing U+FFFD, and imports nothing', async () => {
    const lines = full.trim().split('\n');
    const memoryLine = lines.findIndex((line) => line.includes('"type":"memory"'));
    const resaved = lines.map((line, index) =>
      index === memoryLine ? Buffer.from(line.replace('"content":"', '"content":"café '), 'latin1') : Buffer.from(line),
    );
    const file = join(folder, 'latin1.jsonl');
    writeFileSync(file, Buffer.concat(resaved.flatMap((line) => [line, Buffer.from('\n')])));
    const target = join(folder, 'latin1.db');
    const failed = await cli(target, 'import', file);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(
      new RegExp(`^mneme: line ${memoryLine + 1}: not UTF-8 text \\(byte 0xe9 .*; nothing was imported\\n$`),
    );
    const after = parse((await cli(target, 'export')).stdout);
    expect(after.filter((line) => !['header', 'policy', 'end'].includes(line.type))).toEqual([]);
  });

  it('refuses a file that was cut off', async () => {
    const lines = full.trim().split('\n');
    const file = join(folder, 'cut.jsonl');
    writeFileSync(file, `${lines.slice(0, -3).join('\n')}\n`);
    const failed = await cli(join(folder, 'cut.db'), 'import', file);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/no end line: it was cut off/);
  });
});

describe("a user's export (a data-subject access request)", () => {
  it("holds Ann's data and none of Bob's personal memories or Bob and Cal's direct messages", async () => {
    const exported = await cli(source, 'export', '--user', 'ann');
    expect(exported.code).toBe(0);
    const lines = parse(exported.stdout);
    expect(lines[0]).toMatchObject({ type: 'header', user: 'ann' });
    const text = exported.stdout;
    for (const secret of ['allergic to peanuts', 'whale-4471', 'Lisbon', 'vinyl', 'dm-bob-cal']) {
      expect(text).not.toContain(secret);
    }
    const memories = lines.filter((line) => line.type === 'memory');
    expect(memories.filter((memory) => memory.scope === 'personal').map((memory) => memory.userId)).toEqual(
      expect.arrayContaining(['ann']),
    );
    expect(memories.every((memory) => memory.scope !== 'personal' || memory.userId === 'ann')).toBe(true);
    expect(memories.every((memory) => memory.scope !== 'global' || memory.userId === 'ann')).toBe(true);
    const contents = memories.map((memory) => memory.content as string);
    expect(contents).toEqual(expect.arrayContaining(['Ann leads the garden project', 'Ann wrote the style guide']));
    expect(contents).toContain('Raised beds go along the south fence');
    expect(contents).not.toContain('The office is closed on Mondays');
    const messages = lines.filter((line) => line.type === 'message');
    expect(new Set(messages.map((message) => message.channelId))).toEqual(new Set(['shared', 'dm-ann']));
    expect(messages.map((message) => message.content)).toContain('My favourite food is ramen');
    expect(lines.filter((line) => line.type === 'membership').every((line) => line.userId === 'ann')).toBe(true);
    expect(lines.some((line) => line.type === 'policy' || line.type === 'watermark')).toBe(false);

    // It imports on its own: every id it names is a row it holds.
    const file = join(folder, 'ann.jsonl');
    writeFileSync(file, exported.stdout);
    const imported = await cli(join(folder, 'ann.db'), 'import', file);
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    // Its messages count as extracted: each channel's extraction watermark is its newest message.
    const restored = parse((await cli(join(folder, 'ann.db'), 'export')).stdout);
    for (const channelId of ['shared', 'dm-ann']) {
      const newest = Math.max(
        ...restored
          .filter((line) => line.type === 'message' && line.channelId === channelId)
          .map((line) => line.id as number),
      );
      expect(restored).toContainEqual(
        expect.objectContaining({ type: 'watermark', channelId, task: 'extraction', watermark: newest }),
      );
    }
  });

  it("refuses a user key asking for another user's export", async () => {
    const refused = await cli(source, '--as', 'bob', 'export', '--user', 'ann');
    expect(refused.code).toBe(5);
    expect(refused.stdout).toBe('');
    expect((await cli(source, '--as', 'bob', 'export')).code).toBe(5);
    const own = await cli(source, '--as', 'ann', 'export', '--user', 'ann');
    expect(own.code).toBe(0);
    expect(own.stdout).not.toContain('whale-4471');
  });
});

describe('mneme import --from mem0', () => {
  it("turns a mem0 export's memories into personal memories with their category and times", async () => {
    const target = join(folder, 'mem0.db');
    const imported = await cli(
      target,
      'import',
      '--from',
      'mem0',
      resolve(import.meta.dirname, 'fixtures/mem0-export.json'),
    );
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^imported 2 users, .* 3 memories \(3 versions\)/);
    const list = JSON.parse((await cli(target, 'list', '--json')).stdout) as {
      memories: Array<{
        id: number;
        content: string;
        scope: string;
        userId: string;
        category: string;
        createdAt: string;
        updatedAt: string;
      }>;
    };
    const alex = list.memories.find((memory) => memory.content === 'Is a vegetarian and avoids dairy');
    expect(alex).toMatchObject({
      scope: 'personal',
      userId: 'alex',
      category: 'food',
      createdAt: '2024-07-20T10:15:30.000Z',
      updatedAt: '2024-07-21T08:00:00.000Z',
    });
    expect(list.memories.find((memory) => memory.content === 'Plays tennis on weekends')?.category).toBe('hobbies');
    expect(list.memories.find((memory) => memory.content === 'Works as a nurse in Leeds')).toMatchObject({
      userId: 'sam',
      category: 'general',
    });
    const history = JSON.parse((await cli(target, 'history', String(alex?.id), '--json')).stdout) as Array<{
      reason: string;
    }>;
    expect(history[0]?.reason).toBe('imported from mem0 memory 7b6a1c9e-3f0d-4a55-9a1e-2d9c0c5b8f11');
    const search = await cli(target, 'search', 'vegetarian', '--user', 'alex');
    expect(search.stdout).toContain('vegetarian');
    expect((await cli(target, 'search', 'vegetarian', '--user', 'sam')).stdout).not.toContain('vegetarian');
  });

  it('refuses a mem0 item without a user id and imports nothing', async () => {
    const file = join(folder, 'mem0-bad.json');
    writeFileSync(
      file,
      JSON.stringify({
        results: [
          { id: 'a', memory: 'Likes jazz', user_id: 'kim' },
          { id: 'b', memory: 'Agent-only note', agent_id: 'bot' },
        ],
      }),
    );
    const target = join(folder, 'mem0-bad.db');
    const failed = await cli(target, 'import', '--from', 'mem0', file);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/^mneme: item 2: it has no user_id/);
    expect((JSON.parse((await cli(target, 'list', '--json')).stdout) as { total: number }).total).toBe(0);
  });
});
