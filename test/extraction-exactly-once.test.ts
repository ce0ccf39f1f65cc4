import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewMessage } from '../src/storage/message-store.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';

const run = promisify(execFile);
const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const extractionProcess = resolve(import.meta.dirname, 'fixtures/extraction-process.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-once-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const cliEnvironment = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
const now = Date.parse('2024-06-20T12:00:00.000Z');
const backlog = 400;

const names = 'Ana Ben Cleo Dov Eli Fay Gus Hana Ivo Jun Kai'.split(' ');
const cities = 'Lisbon Oslo Porto Kyoto Lima Quito Accra Hanoi Perth Cusco Dakar Minsk'.split(' ');
const jobs = 'pilot chemist baker nurse judge potter welder tailor surgeon'.split(' ');
const things = ['vintage postcards', 'old maps', 'rare stamps', 'seashells', 'vinyl records', 'tin robots'];

/** The n-th user message: facts the offline extractor finds, new ones and ones that update earlier facts. */
function said(index: number): string {
  const city = (offset: number) => cities[(index + offset) % cities.length];
  const name = (offset: number) => names[(index + offset) % names.length];
  const job = (offset: number) => jobs[(index + offset) % jobs.length];
  return [
    `I collect ${things[index % things.length]} from ${city(0)}. My sister ${name(0)} lives in ${city(5)}.`,
    `My brother ${name(3)} works as a ${job(0)}. I play the cello on Sundays with ${name(7)}.`,
    `I prefer green tea over coffee. My mother teaches chemistry in ${city(7)}.`,
    `We moved to ${city(2)} last year, and my friend ${name(6)} is a ${job(4)}.`,
  ][index % 4] as string;
}

/** A conversation of `count` turns in channel `room`: three of four answered by the agent, the fourth not. */
function conversation(count: number): NewMessage[] {
  return Array.from({ length: count }, (_, index): NewMessage[] => {
    const createdAt = now - (count - index) * 60_000;
    const user: NewMessage = {
      channelId: 'room',
      senderId: `user-${index % 3}`,
      role: 'user',
      content: said(index),
      topicId: null,
      createdAt,
    };
    if (index % 4 === 3) return [user];
    const reply = `Noted, thank you for telling me that (${index}).`;
    return [
      user,
      {
        channelId: 'room',
        senderId: 'agent',
        role: 'assistant',
        content: reply,
        topicId: null,
        repliesToPrevious: true,
        createdAt,
      },
    ];
  }).flat();
}

/** A database file holding the conversation's messages, none extracted yet. */
async function databaseWithBacklog(name: string, count = backlog): Promise<string> {
  const path = join(folder, name);
  const storage = createSqliteStorage({ path });
  await storage.messages.append(conversation(count));
  await storage.close();
  return path;
}

function read<T>(path: string, work: (database: Database.Database) => T): T {
  const database = new Database(path, { readonly: true });
  try {
    return work(database);
  } finally {
    database.close();
  }
}

/** Every (cited message, category, content) that more than one memory holds: a message extracted twice. */
function duplicates(path: string) {
  return read(path, (database) =>
    database
      .prepare(`SELECT cited.value AS messageId, memories.category, memories.content, COUNT(*) AS copies
        FROM memories, json_each(memories.source_message_ids) AS cited
        GROUP BY cited.value, memories.category, memories.content HAVING COUNT(*) > 1`)
      .all(),
  );
}

/** The user messages without an exchange memory (each message of the conversation gets one when extracted). */
function notExtracted(path: string): number[] {
  return read(path, (database) =>
    database
      .prepare<[], { id: number }>(`SELECT id FROM messages WHERE role = 'user' AND id NOT IN (
        SELECT cited.value FROM memories, json_each(memories.source_message_ids) AS cited WHERE memories.category = 'exchange')`)
      .all()
      .map((row) => row.id),
  );
}

/** What extraction wrote: memories, links, versions and the channel's watermark. */
function extracted(path: string) {
  return read(path, (database) => ({
    memories: database.prepare('SELECT * FROM memories ORDER BY id').all(),
    links: database
      .prepare('SELECT source_id, target_id, type, strength, created_at FROM memory_links ORDER BY id')
      .all(),
    versions: database
      .prepare(`SELECT memory_id, version, action, actor, reason, changes, snapshot, created_at FROM memory_versions
        ORDER BY memory_id, version`)
      .all(),
    watermark: database.prepare("SELECT watermark FROM maintenance_state WHERE task = 'extraction'").all(),
  }));
}

/** What an extraction process did: how it ended, and how many messages it gave its extractor. */
interface ExtractionExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  calls: number;
  stderr: string;
}

/** A running extraction process (test/fixtures/extraction-process.js), followed through its output. */
function startExtraction(options: { path: string; leaseSeconds: number; stopAt?: number; ingest?: unknown[] }) {
  const child = spawn(process.execPath, [extractionProcess, JSON.stringify({ now, ...options })], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let calls = 0;
  let stderr = '';
  const listeners: Array<(line: string) => void> = [];
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line === 'extracting') calls++;
    for (const listener of listeners) listener(line);
  });
  const exited = new Promise<ExtractionExit>((done) =>
    child.on('close', (code, signal) => done({ code, signal, calls, stderr })),
  );
  return {
    child,
    exited,
    /** Resolves once the process printed `line`, or gave its extractor `calls` messages. */
    when: (condition: { line?: string; calls?: number }) =>
      new Promise<void>((done) => {
        listeners.push((line) => {
          if (line === condition.line || (condition.calls !== undefined && calls >= condition.calls)) done();
        });
      }),
  };
}

let reference: ReturnType<typeof extracted>;

beforeAll(async () => {
  expect(existsSync(binary), 'run `npm run build` first').toBe(true);
  const path = await databaseWithBacklog('reference.db');
  expect(await startExtraction({ path, leaseSeconds: 1 }).exited).toMatchObject({ code: 0 });
  reference = extracted(path);
  expect(reference.memories.length).toBeGreaterThan(backlog);
  expect(reference.links.length).toBeGreaterThan(0);
}, 60_000);

describe('extraction across processes', () => {
  it('extracts every message once when two mneme ingest processes import one file into one database', async () => {
    const path = join(folder, 'two-imports.db');
    const file = join(folder, 'history.jsonl');
    const lines = Array.from({ length: 300 }, (_, index) =>
      index % 4 === 3
        ? { channelId: 'room', sender: `user-${index % 3}`, content: said(index) }
        : {
            channelId: 'room',
            userId: `user-${index % 3}`,
            userMessage: said(index),
            assistantReply: `Noted (${index}).`,
          },
    );
    writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    await run(process.execPath, [binary, '--db', path, '--create', 'stats'], { env: cliEnvironment });

    const imports = await Promise.all(
      [1, 2].map(() => run(process.execPath, [binary, '--db', path, 'ingest', file], { env: cliEnvironment })),
    );

    for (const { stdout } of imports) expect(stdout).toMatch(/^ingested 525 messages \(225 exchanges/);
    expect(duplicates(path)).toEqual([]);
    expect(notExtracted(path)).toEqual([]);
  }, 60_000);

  it('leaves a channel to the server catching up on it: a mneme ingest started beside it extracts nothing twice', async () => {
    const path = await databaseWithBacklog('beside-a-server.db');
    const empty = join(folder, 'empty.jsonl');
    writeFileSync(empty, '');
    const arriving = Array.from({ length: 60 }, (_, index) => ({
      channelId: 'room',
      sender: 'user-9',
      content: said(index + backlog),
    }));
    const server = startExtraction({ path, leaseSeconds: 30, ingest: arriving });
    await server.when({ calls: 1 });

    const cli = await run(process.execPath, [binary, '--db', path, 'ingest', empty], { env: cliEnvironment });

    expect(cli.stdout).toMatch(/^ingested 0 messages/);
    expect(await server.exited).toMatchObject({ code: 0 });
    expect(duplicates(path)).toEqual([]);
    expect(notExtracted(path)).toEqual([]);
  }, 60_000);

  it('ends as one uninterrupted run would when processes extracting a backlog are killed at random points', async () => {
    const path = await databaseWithBacklog('killed.db');
    const kills = 4;
    let calls = 0;
    for (let kill = 0; kill < kills; kill++) {
      const doomed = startExtraction({ path, leaseSeconds: 1 });
      await doomed.when({ calls: 10 + Math.floor(Math.random() * 50) });
      doomed.child.kill('SIGKILL');
      const exit = await doomed.exited;
      expect(exit).toMatchObject({ signal: 'SIGKILL' });
      calls += exit.calls;
    }
    expect(extracted(path).watermark).not.toEqual(reference.watermark);

    const last = await startExtraction({ path, leaseSeconds: 1 }).exited;
    expect(last).toMatchObject({ code: 0 });

    // A killed process may lose the one message it was extracting when killed, and nothing more.
    expect(calls + last.calls).toBeGreaterThanOrEqual(backlog);
    expect(calls + last.calls).toBeLessThanOrEqual(backlog + kills);
    expect(duplicates(path)).toEqual([]);
    expect(extracted(path)).toEqual(reference);
  }, 60_000);

  it('takes over the lease of a process that stopped answering, whose step is refused when it wakes up', async () => {
    const path = await databaseWithBacklog('stalled.db');
    const stalled = startExtraction({ path, leaseSeconds: 1, stopAt: 40 });
    await stalled.when({ line: 'stopped' });

    const successor = await startExtraction({ path, leaseSeconds: 1 }).exited;
    expect(successor).toMatchObject({ code: 0, calls: backlog - 39 });
    expect(extracted(path).watermark).toEqual(reference.watermark);
    stalled.child.kill('SIGCONT');

    expect(await stalled.exited).toMatchObject({ code: 0, calls: 40 });
    expect(duplicates(path)).toEqual([]);
    expect(extracted(path)).toEqual(reference);
  }, 60_000);
});
