import { type ChildProcess, execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { mnemeBinary, startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-presets-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const run = promisify(execFile);
const DAY_MS = 24 * 60 * 60 * 1000;

/** Runs the built `mneme` on `database` in a child process. */
async function mneme(database: string, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [mnemeBinary, '--db', database, ...argv], {
      env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** A fresh database under `preset` with the conversation ingested through `mneme ingest`. */
async function databaseUnder(preset: string, lines: readonly object[]): Promise<string> {
  const database = join(folder, `${preset}.db`);
  const init = await mneme(database, 'init', '--preset', preset);
  expect(init.stdout).toContain(`runs under the ${preset} preset (policy version 1)`);
  const file = join(folder, `${preset}.jsonl`);
  writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  expect(await mneme(database, 'ingest', file, '--no-progress')).toMatchObject({ code: 0 });
  return database;
}

const exchange = (userMessage: string, assistantReply: string) => ({
  channelId: 'dm-oz',
  userId: 'oz',
  userName: 'Oz',
  userMessage,
  assistantReply,
});

/** A short DM: a preference, small talk, a command, an "always" rule and a family fact. */
const conversation = [
  exchange('I prefer green tea in the morning, never coffee', 'Noted, green tea it is.'),
  exchange('ok thanks', "You're welcome!"),
  exchange('/remember my locker code is 4711', 'Got it.'),
  exchange('Always use tabs for indentation in Python code', 'Understood, tabs in Python.'),
  exchange('My sister Mia lives in Oslo and works as a nurse', 'Nice, Oslo is lovely.'),
];

interface Listed {
  memories: Array<{ content: string; category: string; scope: string; pinned: boolean; archivedAt: string | null }>;
}

async function listed(database: string, ...filters: string[]): Promise<Listed['memories']> {
  const { stdout } = await mneme(database, '--json', 'list', '--limit', '500', ...filters);
  return (JSON.parse(stdout) as Listed).memories;
}

/** `mneme maintain --task decay` as of `days` days from now: the line of the decay report. */
async function decayAfter(database: string, days: number): Promise<string> {
  const now = new Date(Date.now() + days * DAY_MS).toISOString();
  const { stdout } = await mneme(database, 'maintain', '--task', 'decay', '--now', now);
  return stdout.split('\n').find((line) => line.startsWith('decay')) ?? stdout;
}

const context = async (database: string, query: string, ...viewer: string[]) =>
  (await mneme(database, 'context', query, ...viewer)).stdout;

describe('each preset run as itself through the CLI', () => {
  it('matrix-bot: facts by name, no exchange chunks, the [Relevant Memories] block, Ebbinghaus archiving after 46.5 days', async () => {
    const database = await databaseUnder('matrix-bot', conversation);
    const memories = await listed(database);
    expect(memories.map((memory) => memory.category)).not.toContain('exchange');
    expect(memories.map((memory) => memory.content)).toContain('Oz prefers green tea in the morning, never coffee.');

    const block = await context(database, 'green tea morning', '--user', 'oz', '--channel', 'dm-oz');
    expect(block).toMatch(/^\[Relevant Memories\]\n/);
    expect(block).toMatch(
      /- \d{4}-\d\d-\d\d: "Oz prefers green tea in the morning, never coffee\."\n {2}\(match: fts, importance: 4\)/,
    );

    // Pinned memories are not checked; retention 2^(-days / 14) falls below 0.10 after 46.5 days, and a run
    // reads only the memories due by then (ADR 9, session 8).
    expect(await decayAfter(database, 46)).toBe('decay (ebbinghaus): 0 checked, 0 decayed, 0 archived');
    expect(await decayAfter(database, 47)).toBe('decay (ebbinghaus): 3 checked, 3 decayed, 3 archived');
    const left = await listed(database);
    expect(left.map((memory) => memory.content)).toEqual(["Oz's locker code is 4711"]);
  });

  it('scoped-rest: no per-message memories, conversation extraction of a topic, the [Memories] block with categories, topK 5, nothing archived', async () => {
    const facts = [
      'I prefer green tea in the morning, never coffee',
      'My sister Mia lives in Oslo and works as a nurse',
      'Always use tabs for indentation in Python code',
      'I am allergic to peanuts',
      'My favourite editor is Helix',
      'I work as a data engineer at Acme',
      'I have been learning Norwegian for two years',
      'My laptop runs Debian with the Sway window manager',
      'I take the train to the office on Mondays',
      'My daughter Ada turns seven in May',
    ];
    const database = await databaseUnder('scoped-rest', [
      ...conversation,
      ...facts.map((content) => ({ channelId: 'team', sender: 'oz', senderName: 'Oz', content, topicId: 's-1' })),
    ]);
    const memories = await listed(database);
    expect(memories.length).toBeGreaterThan(5);
    expect(new Set(memories.map((memory) => memory.scope))).toEqual(new Set(['session']));

    const block = await context(database, 'what does Oz drink in the morning', '--user', 'oz', '--topic', 's-1');
    expect(block).toMatch(/^\[Memories\]\n/);
    expect(block).toContain('- [preference] "Oz prefers green tea in the morning, never coffee."');
    expect(block.split('\n').filter((line) => line.startsWith('- '))).toHaveLength(5);

    const report = await mneme(database, 'maintain', '--now', new Date(Date.now() + 365 * DAY_MS).toISOString());
    expect(report.stdout).toMatch(/decay \(recency-only\): skipped \(not among this database's maintenance tasks/);
    expect((await listed(database, '--archived', 'only')).length).toBe(0);
  });

  it('memo-rag: exchanges at importance 1, /remember pinned at 5, the [Relevant Memories] block, soft delete after 7 days at 0', async () => {
    const database = await databaseUnder('memo-rag', conversation);
    const memories = await listed(database);
    expect(memories.filter((memory) => memory.category === 'exchange')).toHaveLength(4);
    expect(memories.find((memory) => memory.pinned)?.content).toBe("Oz's locker code is 4711");

    const block = await context(database, 'locker code', '--user', 'oz', '--channel', 'dm-oz', '--inspect');
    expect(block).toMatch(/^\[Relevant Memories\]\n/);
    expect(block).toMatch(/- \d{4}-\d\d-\d\d: "Oz's locker code is 4711"\n {2}\(match: fts, importance: 5\)/);
    const exchanges = await context(database, 'green tea', '--user', 'oz', '--channel', 'dm-oz', '--inspect');
    expect(exchanges).toContain('(match: fts, importance: 1)');

    // Importance 1: one step down after 7 days unused, then 7 days at 0, then soft-deleted.
    expect(await decayAfter(database, 13)).toBe('decay (importance-steps): 4 checked, 4 decayed, 0 archived');
    expect(await decayAfter(database, 14)).toBe('decay (importance-steps): 4 checked, 0 decayed, 4 archived');
    expect((await listed(database)).map((memory) => memory.content)).toEqual(["Oz's locker code is 4711"]);
  });

  it('salience: short and slash messages skipped entirely, "always" semantic, the [Memory context] block, removal below 0.1', async () => {
    const database = await databaseUnder('salience', conversation);
    const memories = await listed(database);
    const contents = memories.map((memory) => memory.content);
    expect(contents.some((content) => /ok thanks|locker|4711/.test(content))).toBe(false);
    expect(contents).toContain('Oz says to always use tabs for indentation in Python code.');

    const shown = JSON.parse(
      (await mneme(database, '--json', 'context', 'tabs indentation', '--user', 'oz', '--channel', 'dm-oz')).stdout,
    ) as { text: string; hits: Array<{ memory: { content: string } }> };
    const block = shown.text;
    expect(block).toMatch(/^\[Memory context\]\n/);
    expect(block).toContain('- "Oz says to always use tabs for indentation in Python code." (semantic)');
    expect(block).toContain('(episodic)');
    expect((await mneme(database, 'turns', '--channel', 'dm-oz')).stdout).toContain('/remember my locker code is 4711');

    // The context above reinforced what it showed (+0.1); the rest sits at 1.0: x0.98 a day after the
    // first 24 h falls below 0.1 after 114.97 days.
    const reinforced = new Set(shown.hits.map((hit) => hit.memory.content));
    const untouched = (await listed(database)).filter((memory) => !reinforced.has(memory.content));
    expect(untouched.length).toBeGreaterThan(0);
    // Only the untouched memories are due (ADR 9, session 8).
    const count = untouched.length;
    expect(await decayAfter(database, 115.5)).toBe(
      `decay (salience): ${count} checked, ${count} decayed, ${count} archived`,
    );
    const archived = await listed(database, '--archived', 'only');
    expect(archived.map((memory) => memory.content).sort()).toEqual(untouched.map((memory) => memory.content).sort());
  });

  it('mneme: facts and exchanges, the mneme block with each category', async () => {
    const database = await databaseUnder('mneme', conversation);
    const block = await context(database, 'green tea in the morning', '--user', 'oz', '--channel', 'dm-oz');
    expect(block).toMatch(/^\[Relevant Memories\]\n/);
    const items = block.split('\n').filter((line) => line.startsWith('- '));
    // topK 5, less what falls under the quality threshold (context.minRelevance).
    expect(items.length).toBeGreaterThanOrEqual(3);
    expect(items.length).toBeLessThanOrEqual(5);
    for (const item of items) expect(item).toMatch(/^- \d{4}-\d\d-\d\d \[(fact|preference|general|exchange)\]: "/);
    expect(block).toContain('[exchange]');
  });

  it('refuses init with --as before creating anything, and takes the preset from --set preset= too', async () => {
    const refused = join(folder, 'as.db');
    const result = await mneme(refused, '--as', 'bob', 'init', '--preset', 'salience');
    expect(result.code).toBe(5);
    expect(existsSync(refused)).toBe(false);

    const set = join(folder, 'set-preset.db');
    expect((await mneme(set, 'init', '--set', 'preset=memo-rag')).stdout).toContain('runs under the memo-rag preset');
  });

  it('lets a command run on a new file before init leave the preset open, until something is stored', async () => {
    const database = join(folder, 'early.db');
    expect((await mneme(database, '--create', 'list')).code).toBe(0);
    expect((await mneme(database, 'init', '--preset', 'salience')).code).toBe(0);
    await mneme(database, 'add', 'kestrel is the staging server');
    expect((await mneme(database, 'init', '--preset', 'memo-rag')).code).toBe(4);
  });

  it('refuses to open a database under another preset or setting, and keeps its own for every command', async () => {
    const database = join(folder, 'refuse.db');
    await mneme(database, 'init', '--preset', 'salience');
    const again = await mneme(database, 'init', '--preset', 'matrix-bot');
    expect(again.code).toBe(4);
    expect(again.stderr).toMatch(
      /^mneme: this database runs under the salience preset, but the matrix-bot preset was asked for/,
    );
    expect(await decayAfter(database, 1)).toBe('decay (salience): 0 checked, 0 decayed, 0 archived');

    const set = await mneme(database, 'policy', 'set', 'context.wordBudget=120', 'recall.recentFirst.textHits=4');
    expect(set.stdout).toMatch(
      /^preset: salience .*policy version 2\nchanged settings: recall\.recentFirst\.textHits, context\.wordBudget/,
    );
    const bad = await mneme(database, 'policy', 'set', 'decay=forever');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    const shown = JSON.parse((await mneme(database, '--json', 'policy', 'show')).stdout) as {
      preset: string;
      version: number;
      policy: { context: { wordBudget: number } };
    };
    expect(shown).toMatchObject({ preset: 'salience', version: 2, policy: { context: { wordBudget: 120 } } });
    expect((await mneme(database, 'policy', 'history')).stdout).toMatch(
      /^v1 .* - \[salience\] created under the salience preset\nv2 .* cli \[salience\] context\.wordBudget = 120; recall\.recentFirst\.textHits = 4\n$/,
    );
  });
});

describe('the scoped-rest preset through the HTTP service', () => {
  it('serves its three write paths, its [Memories] block with categories and topK 5, and says its policy', async () => {
    const database = join(folder, 'scoped-rest-http.db');
    expect((await mneme(database, 'init', '--preset', 'scoped-rest')).code).toBe(0);
    const { call, child } = await startServeProcess(database, children);

    expect((await call('GET', '/api/policy')).body).toMatchObject({ preset: 'scoped-rest', version: 1 });
    // Manual: Global by default, Session refused, Project needs its id.
    const manual = await call('POST', '/api/memories', {
      content: 'The team wiki lives at wiki.acme.dev',
      category: 'reference',
    });
    expect(manual).toMatchObject({ status: 201, body: { scope: 'global', importance: 0.5, source: 'manual' } });
    expect((await call('POST', '/api/memories', { content: 'x', scope: 'session', topicId: 's-1' })).status).toBe(422);
    expect((await call('POST', '/api/memories', { content: 'x', scope: 'project' })).status).toBe(422);

    // Conversation: a topic's user messages; no memory per message until the topic is extracted.
    await call('PUT', '/api/users/oz', { displayName: 'Oz' });
    for (const content of [
      'I prefer green tea in the morning, never coffee',
      'I am allergic to peanuts',
      'My favourite editor is Helix',
    ]) {
      expect(
        (await call('POST', '/api/messages', { channelId: 'team', sender: 'oz', content, topicId: 's-1' })).status,
      ).toBe(202);
    }
    const extracted = await call('POST', '/api/memories/extract/s-1');
    expect(extracted.status).toBe(200);
    const listed = await call('GET', '/api/memories?scope=session&topicId=s-1');
    expect((listed.body.memories as unknown[]).length).toBe(3);

    // Work: only for a managed project's sessions.
    await call('POST', '/api/projects', { id: 'p-1', managed: true, members: ['oz'] });
    await call('POST', '/api/topics', { id: 'w-1', projectId: 'p-1', members: ['oz'] });
    await call('POST', '/api/messages', {
      channelId: 'dev',
      sender: 'oz',
      content: 'We use PostgreSQL 15 for the billing service',
      topicId: 'w-1',
    });
    const work = await call('POST', '/api/memories/extract-work/w-1');
    expect(work.status).toBe(200);
    expect((await call('POST', '/api/memories/extract-work/s-1')).status).toBe(409);

    const block = await call('POST', '/api/context', {
      query: 'what does Oz drink in the morning',
      viewer: { userId: 'oz', topicId: 's-1' },
    });
    const text = block.body.text as string;
    expect(text).toMatch(/^\[Memories\]\n/);
    expect(text).toContain('- [preference] "Oz prefers green tea in the morning, never coffee."');
    const wiki = await call('POST', '/api/context', {
      query: 'where is the team wiki',
      viewer: { userId: 'oz', topicId: 's-1' },
    });
    expect(wiki.body.text).toContain('- [reference] "The team wiki lives at wiki.acme.dev"');
    expect(text.split('\n').filter((line) => line.startsWith('- ')).length).toBeLessThanOrEqual(5);
    const search = await call('POST', '/api/memories/search', {
      query: 'Oz',
      viewer: { userId: 'oz', topicId: 's-1' },
    });
    expect((search.body.hits as Array<{ breakdown: Record<string, number> }>)[0]?.breakdown).toHaveProperty('scope');
    child.kill('SIGTERM');
  });
});
