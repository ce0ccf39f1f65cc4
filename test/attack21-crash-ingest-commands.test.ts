import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { crashTest } from './kill-mid-write.js';

/**
 * wt-crash21: `mneme ingest` appended a batch of 500 lines in one transaction (with the file's progress), then ran
 * each user message's chat command (`/remember`) in a transaction of its own. A run killed with SIGKILL once a batch
 * was in and before its commands had all run left messages whose command never ran; `--resume` continued after
 * the committed lines, and a run again without it found the lines with an externalId already stored (duplicates,
 * whose commands are not run again). Either way the file ended ingested, exit 0, and those /remember never stored.
 * Since session 22 a command is written in its message's transaction (ADR 30): there is no moment between them.
 */
const crashTestForHttp = crashTest('attack21-commands');
const { folder, isBuilt } = crashTestForHttp;
const cli = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

const LINES = 1000;

function writeCommands(file: string, withIds: boolean) {
  const lines = Array.from({ length: LINES }, (_, index) =>
    JSON.stringify({
      channelId: 'kitchen',
      sender: 'ann',
      content: `/remember I keep jar number ${index} of tea on shelf ${index % 7}`,
      createdAt: new Date(Date.parse('2024-06-01T00:00:00Z') + index * 1000).toISOString(),
      ...(withIds ? { externalId: `event-${index}` } : {}),
    }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
}

function counts(path: string): { messages: number; commands: number } {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const messages = database.prepare('SELECT count(*) FROM messages').pluck().get() as number;
    const commands = database.prepare("SELECT count(*) FROM memories WHERE source = 'command'").pluck().get() as number;
    return { messages, commands };
  } finally {
    database.close();
  }
}

/** Starts `mneme ingest file` and kills it with SIGKILL once its first batch of 500 messages is committed. */
async function killAfterFirstBatch(path: string, file: string): Promise<{ messages: number; commands: number }> {
  const child = spawn(process.execPath, [cli, '--db', path, 'ingest', file, '--no-progress'], {
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
    let seen = { messages: 0, commands: 0 };
    try {
      seen = counts(path);
    } catch {
      // Not created yet.
    }
    if (seen.messages >= 500) {
      child.kill('SIGKILL');
      await new Promise((done) => child.once('close', done));
      return counts(path);
    }
    await new Promise((done) => setTimeout(done, 2));
  }
}

describe('mneme ingest killed with SIGKILL between a batch and its chat commands', () => {
  it('stores every /remember of the file once the resumed run exits 0', { timeout: 120_000 }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'resume.db');
    const file = join(folder, 'commands.jsonl');
    writeCommands(file, false);
    const atKill = await killAfterFirstBatch(path, file);
    expect(atKill.messages).toBe(500);
    const resumed = await runCli(path, ['ingest', file, '--resume', '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    // Every line is a message once, and every /remember a pinned memory once.
    expect(counts(path)).toEqual({ messages: LINES, commands: LINES });
  });

  it('stores every /remember of the file once a run again with the same externalIds exits 0', {
    timeout: 120_000,
  }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'again.db');
    const file = join(folder, 'commands-with-ids.jsonl');
    writeCommands(file, true);
    const atKill = await killAfterFirstBatch(path, file);
    expect(atKill.messages).toBe(500);
    const again = await runCli(path, ['ingest', file, '--no-progress']);
    expect(again.code, again.stderr).toBe(0);
    expect(counts(path)).toEqual({ messages: LINES, commands: LINES });
  });
});

/**
 * The same over HTTP: a chat bridge posts `/remember` with its event id; the service dies (SIGKILL) once the message
 * is appended and before it answers, so the bridge gets no answer and retries the same event with the same externalId
 * (ADR 14's way to retry). The retry is answered 202 `duplicate: true` with no command: the memory must be in already,
 * written with the message (it was not: the command ran in a transaction of its own, after the append).
 */
describe('a /remember message whose service is killed once its append is committed, retried with its externalId', () => {
  it('stores the /remember once the retry is acknowledged', { timeout: 120_000 }, async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const { built, killMidWrite } = crashTestForHttp;
    const path = join(folder, 'http.db');
    const message = {
      channelId: 'kitchen',
      sender: 'ann',
      content: '/remember I am allergic to peanuts',
      externalId: 'event-42',
    };
    const service = `
      const { openStorage } = await import(${JSON.stringify(built('config/open-storage.js'))});
      const { createEngine } = await import(${JSON.stringify(built('core/create-engine.js'))});
      const { resolvePolicy } = await import(${JSON.stringify(built('core/policy.js'))});
      const { createOfflineEpisodeSummariser } = await import(${JSON.stringify(built('models/offline/offline-episode-summariser.js'))});
      const { createOfflineMemoryMerger } = await import(${JSON.stringify(built('models/offline/offline-memory-merger.js'))});
      const { createHttpApp } = await import(${JSON.stringify(built('http/http-app.js'))});
      const storage = await openStorage({ path: process.argv[1] });
      // The moment of the kill: the append is committed, nothing after it has run.
      const append = storage.messages.append.bind(storage.messages);
      storage.messages.append = async (messages, options) => {
        await append(messages, options);
        process.stdout.write('appended\\n');
        await new Promise(() => {});
      };
      const mneme = createEngine({
        storage, embedder: null, clock: { now: () => Date.now() }, logger: { warn: () => {} }, policy: resolvePolicy(),
        summariser: createOfflineEpisodeSummariser(), merger: createOfflineMemoryMerger(), dreamer: null,
      });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      await app.request('/api/messages', {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(JSON.stringify(message))},
      });
      process.stdout.write('answered\\n');
      setInterval(() => {}, 1000);
    `;
    await killMidWrite(service, path, 0, 1);
    const before = counts(path);
    // Killed once the append is committed: the message is stored with its memory.
    expect(before).toEqual({ messages: 1, commands: 1 });
    const { createMneme } = await import('../src/config/create-mneme.js');
    const { createHttpApp } = await import('../src/http/http-app.js');
    const mneme = await createMneme({ path, logger: { warn: () => {}, info: () => {} } });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const retried = await app.request('/api/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(message),
      });
      expect(retried.status).toBe(202);
      // Answered as already handled: a duplicate, no command run.
      expect(await retried.json()).toMatchObject({ duplicate: true, command: null });
      await mneme.whenIdle();
    } finally {
      await mneme.close();
    }
    expect(counts(path)).toEqual({ messages: 1, commands: 1 });
  });
});
