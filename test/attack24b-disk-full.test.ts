import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, describe, expect, it } from 'vitest';
import { isMnemeError } from '../src/core/errors.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteMessageStore } from '../src/storage/sqlite/sqlite-message-store.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';
import { tmpfsMounts } from './tmpfs-mounts.js';

/**
 * wt-attack24b: the disk that holds the database fills up. SQLite rolls back what it could not write (SQLITE_FULL),
 * so nothing of the refused call is stored; mneme must say so as the transient failure it is (STORE_BUSY: HTTP 503
 * with Retry-After, CLI exit 6) and take the same call once there is room. It answered every write on a full disk
 * with a 500 STORE_FAILED "database or disk is full".
 *
 * The tests of a real full disk mount a small tmpfs (root only); without the right to mount they are skipped.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack24b-full-'));
const children: ChildProcess[] = [];
const { mount, canMount, unmountAll } = tmpfsMounts(folder);

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  unmountAll();
  rmSync(folder, { recursive: true, force: true });
});

/** Writes to `path` until the disk is full; returns the file, whose removal frees the space. */
function fillDisk(path: string): string {
  const descriptor = openSync(path, 'a');
  try {
    for (const size of [1 << 16, 4096, 1]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(descriptor, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return path;
}

/** `PRAGMA integrity_check` and the FTS5 integrity-check of both full-text indexes: [] when the file is sound. */
function soundness(file: Database.Database): string[] {
  const problems = (file.prepare('PRAGMA integrity_check').pluck().all() as string[]).filter((row) => row !== 'ok');
  for (const table of ['messages_fts', 'memories_fts']) {
    try {
      file.prepare(`INSERT INTO ${table}(${table}) VALUES ('integrity-check')`).run();
    } catch (error) {
      problems.push(`${table}: ${String(error)}`);
    }
  }
  return problems;
}

describe('a database that is full', () => {
  it('refuses an append as STORE_BUSY that says the disk is full, writes nothing, and takes it once there is room', async () => {
    const database = openSqliteDatabase({ path: join(folder, 'limited.db') });
    try {
      const messages = createSqliteMessageStore(database, createSqliteVectorIndex(database));
      const say = (content: string) => ({
        channelId: 'desk',
        senderId: 'ann',
        role: 'user' as const,
        topicId: null,
        createdAt: Date.now(),
        content,
      });
      await messages.append([say('the first message')]);
      const pages = Number(database.pragma('page_count', { simple: true }));
      // SQLITE_FULL as a full disk gives it: the file may not grow past its pages.
      database.pragma(`max_page_count = ${pages}`);
      const long = Array.from({ length: 40 }, (_, index) =>
        say(`message ${index} ${'words of a long message '.repeat(200)}`),
      );
      let refused: unknown = null;
      try {
        await messages.append(long);
      } catch (error) {
        refused = error;
      }
      expect(isMnemeError(refused) && refused.code).toBe('STORE_BUSY');
      expect(String((refused as Error).message)).toMatch(/full.*nothing of what failed was written.*free space/);
      expect(database.inTransaction).toBe(false);
      expect(database.prepare('SELECT COUNT(*) FROM messages').pluck().get()).toBe(1);
      database.pragma('max_page_count = 1073741823');
      expect(await messages.append(long)).toHaveLength(40);
      expect(database.prepare('SELECT COUNT(*) FROM messages').pluck().get()).toBe(41);
    } finally {
      database.close();
    }
  });
});

describe.skipIf(!canMount)('mneme serve on a disk that fills up (a tmpfs; needs the right to mount)', () => {
  it('answers 503 problems with Retry-After while the disk is full, stays up, and keeps and extracts every acknowledged message once there is room', {
    timeout: 120_000,
  }, async () => {
    const disk = mount('serve', 8 << 20);
    if (disk === null) throw new Error('mount failed after the probe');
    const database = join(disk, 'mneme.db');
    const server = await startServeProcess(database, children);
    const acknowledged: Array<{ id: number; content: string }> = [];
    const refusals: Array<{ status: number; type: string | null; retryAfter: string | null; body: string }> = [];
    const post = async (index: number) => {
      const content = `I live in town${index} and my favourite colour is hue${index}; ${'a long sentence of words '.repeat(20)}`;
      const response = await fetch(`${server.url}/api/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ channelId: `room${index % 3}`, sender: `user${index % 4}`, content }),
      });
      const text = await response.text();
      if (response.ok) {
        const [message] = (JSON.parse(text) as { messages: Array<{ id: number }> }).messages;
        if (message) acknowledged.push({ id: message.id, content });
      } else {
        refusals.push({
          status: response.status,
          type: response.headers.get('content-type'),
          retryAfter: response.headers.get('retry-after'),
          body: text,
        });
      }
    };
    let index = 0;
    for (; index < 20; index++) await post(index);
    const filler = fillDisk(join(disk, 'filler'));
    for (; index < 60; index++) await post(index);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({
        status: 503,
        type: expect.stringContaining('application/problem+json'),
        retryAfter: '1',
      });
      expect(JSON.parse(refusal.body)).toMatchObject({ code: 'STORE_BUSY', detail: expect.stringMatching(/full/) });
    }
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
    rmSync(filler);
    const before = acknowledged.length;
    for (; index < 80; index++) await post(index);
    expect(acknowledged.length).toBe(before + 20);
    // Extraction resumes: every channel's backlog reaches 0 (the worker retries what failed on the full disk).
    for (let look = 0; ; look++) {
      const status = (await server.call('GET', '/api/maintenance')).body as { extraction?: Array<{ backlog: number }> };
      if ((status.extraction ?? []).every((channel) => channel.backlog === 0)) break;
      if (look > 600) throw new Error(`extraction did not catch up: ${JSON.stringify(status.extraction)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
    const file = new Database(database);
    try {
      sqliteVec.load(file);
      expect(soundness(file)).toEqual([]);
      const stored = file.prepare<[number], string>('SELECT content FROM messages WHERE id = ?').pluck();
      expect(acknowledged.filter((message) => stored.get(message.id) !== message.content)).toEqual([]);
      // Every message is past its channel's extraction watermark, and each user message has its exchange memory once.
      expect(
        file
          .prepare(
            `SELECT COUNT(*) FROM messages m LEFT JOIN maintenance_state s ON s.channel_id = m.channel_id
               AND s.task = 'extraction' WHERE m.id > COALESCE(s.watermark, 0)`,
          )
          .pluck()
          .get(),
      ).toBe(0);
      const chunks = file
        .prepare<[], { id: number; chunks: number }>(
          `SELECT m.id, (SELECT COUNT(*) FROM memories x WHERE x.category = 'exchange'
             AND EXISTS (SELECT 1 FROM json_each(x.source_message_ids) s WHERE s.value = m.id)) AS chunks
           FROM messages m WHERE m.role = 'user'`,
        )
        .all();
      expect(chunks.filter((row) => row.chunks !== 1)).toEqual([]);
    } finally {
      file.close();
    }
  });
});

describe.skipIf(!canMount)('mneme serve on PGlite on a disk that fills up (a tmpfs; needs the right to mount)', () => {
  it('answers 503 problems while the disk is full and takes the writes again once there is room', {
    timeout: 240_000,
  }, async () => {
    const disk = mount('pglite', 64 << 20);
    if (disk === null) throw new Error('mount failed after the probe');
    const child = spawn(process.execPath, [mnemeBinary, 'serve', '--port', '0', '--db', `pglite:${join(disk, 'pg')}`], {
      env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    for (let look = 0; !/listening on http/.test(stderr); look++) {
      if (child.exitCode !== null || look > 1800) throw new Error(`mneme serve did not start: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1];
    const statuses: number[] = [];
    const refusals: unknown[] = [];
    const post = async (index: number) => {
      const response = await fetch(`${url}/api/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          channelId: 'desk',
          sender: 'ann',
          content: `${index} ${'words of a message '.repeat(150)}`,
        }),
      });
      statuses.push(response.status);
      const body = (await response.json()) as unknown;
      if (!response.ok)
        refusals.push({ status: response.status, retryAfter: response.headers.get('retry-after'), body });
    };
    const filler = fillDisk(join(disk, 'filler'));
    for (let index = 0; index < 60 && refusals.length < 5; index++) await post(index);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({
        status: 503,
        retryAfter: '1',
        body: { code: 'STORE_BUSY', detail: expect.stringMatching(/disk holding the PostgreSQL database is full/) },
      });
    }
    rmSync(filler);
    statuses.length = 0;
    for (let index = 100; index < 105; index++) await post(index);
    expect(statuses).toEqual([202, 202, 202, 202, 202]);
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  });
});
