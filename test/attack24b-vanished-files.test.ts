import type { ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './serve-process.js';

/**
 * wt-attack24b: the files of a database taken away under a running `mneme serve`. SQLite goes on writing into the
 * files it holds open, so the server acknowledged every write after its data folder was removed (202, health ok)
 * and all of them were gone when it stopped; after its -wal and -shm were removed, its writes went into a log no
 * other process sees (lost on a crash, and a second process opens a new log beside it). Each write now checks,
 * before its commit, that the file, -wal and -shm it opened are still at their paths, and is refused otherwise.
 *
 * wt-a (2026-12-04): `GET /api/health` still answered 200 while every write was refused that way, so a probe kept
 * the server in service; it now answers 503 problem+json naming the file, from the moment the file goes.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack24b-vanished-'));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

let rooms = 0;

async function post(server: ServeProcess, content: string) {
  const response = await fetch(`${server.url}/api/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ channelId: 'desk', sender: 'ann', content }),
  });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    body: (await response.json()) as { code?: string; detail?: string; messages?: Array<{ id: number }> },
  };
}

/** `GET /api/health`: its status, content type and problem. */
async function health(server: ServeProcess) {
  const response = await fetch(`${server.url}/api/health`);
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    body: (await response.json()) as { status?: string; code?: string; detail?: string },
  };
}

async function stop(server: ServeProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
}

async function serveIn(name: string): Promise<{ path: string; server: ServeProcess; acknowledged: string[] }> {
  const data = join(folder, name);
  mkdirSync(data);
  const path = join(data, 'mneme.db');
  const server = await startServeProcess(path, children);
  const acknowledged: string[] = [];
  for (let index = 0; index < 5; index++) {
    const content = `before the files went, message ${index} of room ${rooms++}`;
    expect((await post(server, content)).status).toBe(202);
    acknowledged.push(content);
  }
  return { path, server, acknowledged };
}

function contents(path: string): string[] {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return database.prepare<[], string>('SELECT content FROM messages ORDER BY id').pluck().all();
  } finally {
    database.close();
  }
}

describe('mneme serve when the files of its database are taken away', () => {
  it('refuses every write once its data folder is removed, and acknowledges none of them', {
    timeout: 60_000,
  }, async () => {
    const { path, server } = await serveIn('removed');
    expect(await health(server)).toMatchObject({ status: 200, body: { status: 'ok' } });
    rmSync(join(path, '..'), { recursive: true, force: true });
    // Health says so before any write tries: a probe takes the server out of service.
    expect(await health(server)).toMatchObject({
      status: 503,
      type: expect.stringContaining('application/problem+json'),
      body: {
        code: 'STORE_FAILED',
        detail: expect.stringMatching(
          /^the database file .*mneme\.db was removed or moved while this process had it open[^\n]*restart mneme/,
        ),
      },
    });
    for (let index = 0; index < 3; index++) {
      const refused = await post(server, `after the folder went, message ${index}`);
      expect(refused).toMatchObject({
        status: 500,
        type: expect.stringContaining('application/problem+json'),
        body: {
          code: 'STORE_FAILED',
          detail: expect.stringMatching(/mneme\.db was removed or moved while this process had it open/),
        },
      });
    }
    const remembered = await fetch(`${server.url}/api/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'a memory written after the folder went' }),
    });
    expect(remembered.status).toBe(500);
    // The server stays up: it answers what it can, and says why it writes nothing.
    expect(await health(server)).toMatchObject({ status: 503, body: { code: 'STORE_FAILED' } });
    expect(server.child.exitCode).toBeNull();
    await stop(server);
  });

  it('refuses every write once its -wal and -shm are removed, and keeps what it acknowledged before', {
    timeout: 60_000,
  }, async () => {
    const { path, server, acknowledged } = await serveIn('log-removed');
    rmSync(`${path}-wal`);
    rmSync(`${path}-shm`);
    expect(await health(server)).toMatchObject({
      status: 503,
      body: { code: 'STORE_FAILED', detail: expect.stringMatching(/mneme\.db-wal was removed or moved/) },
    });
    const refused = await post(server, 'after the log went');
    expect(refused).toMatchObject({
      status: 500,
      body: { code: 'STORE_FAILED', detail: expect.stringMatching(/mneme\.db-wal was removed or moved/) },
    });
    await stop(server);
    expect(contents(path)).toEqual(acknowledged);
  });

  it('answers health 503 while its database file is moved away, and 200 again once it is put back', {
    timeout: 60_000,
  }, async () => {
    const { path, server, acknowledged } = await serveIn('moved-back');
    renameSync(path, `${path}.away`);
    expect(await health(server)).toMatchObject({
      status: 503,
      body: {
        code: 'STORE_FAILED',
        detail: expect.stringMatching(/mneme\.db was removed or moved.*put the file back/),
      },
    });
    renameSync(`${path}.away`, path);
    expect(await health(server)).toEqual({
      status: 200,
      type: expect.stringContaining('application/json'),
      body: { status: 'ok' },
    });
    const after = 'after the file was put back';
    expect((await post(server, after)).status).toBe(202);
    await stop(server);
    expect(contents(path)).toEqual([...acknowledged, after]);
  });

  it('refuses every write once another file is moved over its database', { timeout: 60_000 }, async () => {
    const { path, server, acknowledged } = await serveIn('replaced');
    const other = join(folder, 'other.db');
    copyFileSync(path, other);
    renameSync(other, path);
    expect(await health(server)).toMatchObject({
      status: 503,
      body: { code: 'STORE_FAILED', detail: expect.stringMatching(/mneme\.db was replaced by another file/) },
    });
    const refused = await post(server, 'after the file was replaced');
    expect(refused).toMatchObject({
      status: 500,
      body: { code: 'STORE_FAILED', detail: expect.stringMatching(/mneme\.db was replaced by another file/) },
    });
    await stop(server);
    expect(contents(path).filter((content) => !acknowledged.includes(content))).toEqual([]);
  });
});
