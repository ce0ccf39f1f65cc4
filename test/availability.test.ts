import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSyntheticCorpus } from '../src/bench/synthetic-corpus.js';
import { createMneme } from '../src/config/create-mneme.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { startLoopbackServer } from './loopback-server.js';
import { holdWriteLock } from './write-lock.js';

const run = promisify(execFile);
const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-availability-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const offline = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
let files = 0;
const newFile = () => join(folder, `service-${files++}.db`);

/** A database whose message log holds `count` user messages in 20 channels, none of them extracted yet. */
async function databaseWithBacklog(count: number): Promise<string> {
  const path = newFile();
  const corpus = createSyntheticCorpus({ seed: 11, dimensions: 8, vocabularySize: 5000 });
  const storage = createSqliteStorage({ path });
  const start = Date.parse('2024-06-15T12:00:00.000Z');
  const messages = Array.from({ length: count }, (_, index) => {
    const message = corpus.message(index);
    return {
      channelId: message.channelId,
      senderId: message.userId,
      role: 'user' as const,
      content: message.content,
      topicId: null,
      createdAt: start + index * 1000,
    };
  });
  for (let index = 0; index < count; index += 500) await storage.messages.append(messages.slice(index, index + 500));
  await storage.close();
  return path;
}

/** A database with one memory, the staging server's name. */
async function databaseWithOneMemory(path = newFile()): Promise<{ path: string; id: number }> {
  const mneme = await createMneme({ path });
  const { id } = await mneme.remember({ content: 'The staging server is called kestrel' });
  await mneme.close();
  return { path, id };
}

/** Messages past their channel's extraction watermark (it moves per 100 messages and when extraction stops). */
function pendingMessages(path: string): number {
  const reader = new Database(path, { readonly: true });
  try {
    return reader
      .prepare<[], { pending: number }>(
        `SELECT count(*) AS pending FROM messages m WHERE m.id > COALESCE((SELECT watermark FROM maintenance_state s
          WHERE s.task = 'extraction' AND s.channel_id = m.channel_id), 0)`,
      )
      .get()?.pending as number;
  } finally {
    reader.close();
  }
}

/** `mneme serve --port 0` on `path`, in a child process. */
function startService(path: string, env: NodeJS.ProcessEnv = offline) {
  const child = spawn(process.execPath, [binary, 'serve', '--port', '0', '--db', path], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((found, failed) => {
      const look = () => {
        const match = pattern.exec(stderr);
        if (match) {
          child.stderr?.off('data', look);
          found(match);
        }
      };
      child.stderr?.on('data', look);
      look();
      void exited.then(() => failed(new Error(`mneme serve exited before ${pattern}: ${stderr}`)));
    });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { child, exited, waitFor, stderr: () => stderr };
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('mneme serve under load (the built package)', () => {
  it('answers /api/health while thousands of messages wait for extraction, and a SIGTERM then stops it cleanly', async () => {
    const path = await databaseWithBacklog(3000);
    const service = startService(path);
    const [, url] = await service.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const health = await fetch(`${url}/api/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(pendingMessages(path)).toBeGreaterThan(0);
    const ingested = await post(`${url}/api/messages`, {
      channelId: 'late',
      sender: 'oz',
      content: 'I moved to Porto last spring',
    });
    expect(ingested.status).toBe(202);

    service.child.kill('SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.stderr()).toMatch(/SIGTERM, stopping/);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(check.prepare('SELECT count(*) AS count FROM messages').get()).toEqual({ count: 3001 });
    check.close();
    expect(pendingMessages(path)).toBeGreaterThan(0);
  });

  it('stops cleanly on a SIGTERM that comes while it is still opening, and never listens', async () => {
    const { path } = await databaseWithOneMemory();
    let probed: () => void = () => {};
    const probing = new Promise<void>((resolvePromise) => {
      probed = resolvePromise;
    });
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolvePromise) => {
      answer = resolvePromise;
    });
    const ollama = await startLoopbackServer(async () => {
      probed();
      await answered;
      return { json: { models: [] } };
    });
    try {
      const service = startService(path, { ...offline, MNEME_EMBEDDER: 'auto', MNEME_OLLAMA_URL: ollama.url });
      await probing;
      service.child.kill('SIGTERM');
      await Promise.race([service.waitFor(/SIGTERM, stopping/), service.exited]);
      answer();
      expect(await service.exited).toEqual({ code: 0, signal: null });
      expect(service.stderr()).not.toMatch(/listening/);
    } finally {
      answer();
      await ollama.close();
    }
  });

  it('answers a search while another connection holds the write lock, and /api/health while a write waits for it', async () => {
    const { path, id } = await databaseWithOneMemory();
    const service = startService(path);
    const [, url] = await service.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const lock = holdWriteLock(path);
    let writeAnswered = false;
    let write: Promise<Response> | null = null;
    try {
      const search = await post(`${url}/api/memories/search`, { query: 'staging server' });
      expect(search.status).toBe(200);
      const found = (await search.json()) as { hits: Array<{ memory: { id: number; accessCount: number } }> };
      expect(found.hits.map((hit) => hit.memory)).toMatchObject([{ id, accessCount: 1 }]);

      write = post(`${url}/api/memories`, { content: 'Written once the lock is free' }).then((response) => {
        writeAnswered = true;
        return response;
      });
      await new Promise((pause) => setTimeout(pause, 200));
      expect(await (await fetch(`${url}/api/health`)).json()).toEqual({ status: 'ok' });
      expect(writeAnswered).toBe(false);
    } finally {
      lock.release();
    }
    expect((await write)?.status).toBe(201);

    await post(`${url}/api/memories/search`, { query: 'staging server' });
    const memory = (await (await fetch(`${url}/api/memories/${id}`)).json()) as { accessCount: number };
    expect(memory.accessCount).toBe(2);
    service.child.kill('SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});

describe('mneme search (the built package)', () => {
  it('exits 0 with its hits while another process holds the write lock', async () => {
    const { path } = await databaseWithOneMemory();
    const lock = holdWriteLock(path);
    try {
      const { stdout, stderr } = await run(process.execPath, [binary, '--db', path, 'search', 'staging server'], {
        env: offline,
      });
      expect(stdout).toMatch(/The staging server is called kestrel/);
      expect(stderr).toMatch(/1 memory retrieval not recorded before closing: .*busy/);
    } finally {
      lock.release();
    }
  });

  it('exits 0 with its hits on a read-only database file, also once its folder is read-only next to its -wal and -shm', async () => {
    const place = mkdtempSync(join(tmpdir(), 'mneme-read-only-'));
    chmodSync(place, 0o777);
    const { path } = await databaseWithOneMemory(join(place, 'mneme.db'));
    chmodSync(path, 0o444);
    // Root writes read-only files all the same: the search then runs as nobody.
    const reader = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const search = () =>
      run(process.execPath, [binary, '--db', path, 'search', 'staging server'], { env: offline, ...reader }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
    try {
      const inWritableFolder = await search();
      expect(inWritableFolder).toMatchObject({ code: 0, stdout: expect.stringMatching(/kestrel/) });
      expect(inWritableFolder.stderr).toMatch(/1 memory retrieval not recorded before closing: .*read-only/);

      expect([existsSync(`${path}-wal`), existsSync(`${path}-shm`)]).toEqual([true, true]);
      chmodSync(`${path}-wal`, 0o444);
      chmodSync(`${path}-shm`, 0o444);
      chmodSync(place, 0o555);
      expect(await search()).toMatchObject({ code: 0, stdout: expect.stringMatching(/kestrel/) });

      chmodSync(place, 0o777);
      rmSync(`${path}-wal`);
      rmSync(`${path}-shm`);
      chmodSync(place, 0o555);
      expect(await search()).toMatchObject({ code: 7, stderr: expect.stringMatching(/its folder is read-only/) });
    } finally {
      chmodSync(place, 0o777);
      rmSync(place, { recursive: true, force: true });
    }
  });
});
