import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

/**
 * wt-attack22: `mneme ingest FILE` of a file full of chat commands (`/remember`, and `/forget` of what a line 19 lines
 * before remembered, across the batches of 500 lines; one /forget in five by the other user, which must forget
 * nothing), killed with SIGKILL twice at batch boundaries and mid-batch, then finished with `--resume` or run again
 * from line 1 (every line has an externalId). After the run that exits 0 the store must hold each line once, each
 * /remember once, exactly the forgotten ones archived, and pass `PRAGMA integrity_check`.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack22-crash-'));
const cli = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const LINES = 1500;
const senderOf = (index: number) => (index % 3 === 0 ? 'bob' : 'ann');
const isForget = (index: number) => index % 10 === 9 && index >= 20;

interface Expected {
  remembered: number;
  archived: string[];
}

function writeFile(file: string): Expected {
  const archived: string[] = [];
  let remembered = 0;
  const lines = Array.from({ length: LINES }, (_, index) => {
    let sender = senderOf(index);
    let content: string;
    if (isForget(index)) {
      const target = index - 19;
      // One /forget in five is sent by the other user: it must archive nothing.
      sender = senderOf(target);
      if (index % 50 === 49) sender = sender === 'ann' ? 'bob' : 'ann';
      else archived.push(`jar-k${target}-x`);
      content = `/forget jar-k${target}-x`;
    } else {
      remembered++;
      content = `/remember I keep jar-k${index}-x on shelf ${index % 7}`;
    }
    return JSON.stringify({
      channelId: 'kitchen',
      sender,
      senderName: sender === 'ann' ? 'Ann' : 'Bob',
      content,
      createdAt: new Date(Date.parse('2024-06-01T00:00:00Z') + index * 1000).toISOString(),
      externalId: `event-${index}`,
    });
  });
  writeFileSync(file, `${lines.join('\n')}\n`);
  return { remembered, archived: archived.sort() };
}

function look(path: string) {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const messages = database.prepare('SELECT count(*) FROM messages').pluck().get() as number;
    const commands = database.prepare("SELECT count(*) FROM memories WHERE source = 'command'").pluck().get() as number;
    const archived = (
      database
        .prepare("SELECT content FROM memories WHERE source = 'command' AND archived_at IS NOT NULL")
        .pluck()
        .all() as string[]
    )
      .map((content) => /jar-k\d+-x/.exec(content)?.[0] ?? content)
      .sort();
    const versions = database
      .prepare(
        "SELECT count(*) FROM memory_versions v JOIN memories m ON m.id = v.memory_id WHERE m.source = 'command' AND v.action = 'archive'",
      )
      .pluck()
      .get() as number;
    const integrity = database.prepare('PRAGMA integrity_check').pluck().all() as string[];
    return { messages, commands, archived, versions, integrity };
  } finally {
    database.close();
  }
}

function messageCount(path: string): number {
  try {
    const database = new Database(path, { readonly: true, fileMustExist: true });
    try {
      return database.prepare('SELECT count(*) FROM messages').pluck().get() as number;
    } finally {
      database.close();
    }
  } catch {
    return 0;
  }
}

/** Runs `mneme ingest` in a child and kills it with SIGKILL once the store holds `atLeast` messages (0: at once). */
async function killWhen(path: string, args: string[], atLeast: number, delayMs = 0): Promise<void> {
  const child = spawn(process.execPath, [cli, '--db', path, '--create', 'ingest', ...args, '--no-progress'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
  });
  children.push(child);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error('the ingest ended before it was killed');
    if (messageCount(path) >= atLeast) {
      if (delayMs > 0) await new Promise((done) => setTimeout(done, delayMs));
      child.kill('SIGKILL');
      await new Promise((done) => child.once('close', done));
      return;
    }
    await new Promise((done) => setTimeout(done, 2));
  }
}

describe('mneme ingest of remember and forget commands killed with SIGKILL', () => {
  for (const resume of [true, false]) {
    it(`ends with each command written once once a run ${resume ? 'with --resume' : 'again from line 1'} exits 0`, {
      timeout: 180_000,
    }, async () => {
      const path = join(folder, `${resume ? 'resume' : 'again'}.db`);
      const file = join(folder, `${resume ? 'resume' : 'again'}.jsonl`);
      const expected = writeFile(file);
      const args = [file, ...(resume ? ['--resume'] : [])];
      await killWhen(path, [file], 500);
      const first = look(path);
      expect(first.integrity).toEqual(['ok']);
      expect(first.messages % 500).toBe(0);
      // A batch is in with its commands or not at all.
      await killWhen(path, args, first.messages + 1, 5);
      const second = look(path);
      expect(second.integrity).toEqual(['ok']);
      expect(second.messages % 500).toBe(0);
      const done = await runCli(path, ['--json', 'ingest', ...args, '--no-progress']);
      expect(done.code, done.stderr).toBe(0);
      const after = look(path);
      expect(after).toEqual({
        messages: LINES,
        commands: expected.remembered,
        archived: expected.archived,
        versions: expected.archived.length,
        integrity: ['ok'],
      });
    });
  }
});

describe('two runs of mneme ingest of one file of commands at once', () => {
  it('write each command once (every line has an externalId), however their batches interleave', {
    timeout: 180_000,
  }, async () => {
    const path = join(folder, 'twice.db');
    const file = join(folder, 'twice.jsonl');
    const expected = writeFile(file);
    expect((await runCli(path, ['init'])).code).toBe(0);
    const runs = await Promise.all([
      runCli(path, ['--json', 'ingest', file, '--no-progress']),
      runCli(path, ['--json', 'ingest', file, '--no-progress']),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const summaries = runs.map((run) => JSON.parse(run.stdout) as { messages: number; duplicates: number });
    expect(summaries.reduce((sum, summary) => sum + summary.messages, 0)).toBe(LINES);
    expect(look(path)).toEqual({
      messages: LINES,
      commands: expected.remembered,
      archived: expected.archived,
      versions: expected.archived.length,
      integrity: ['ok'],
    });
  });
});
