import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgPoolDatabase, WRITE_LOCK } from '../src/storage/postgres/postgres-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary, type ServeProcess, startServeProcess } from './serve-process.js';

/*
 * README (HTTP errors): a write that waited the busy timeout for another process's lock is answered
 * 503 with Retry-After, and the wait does not block other requests. On PostgreSQL the other process
 * holds the write lock (`writePg`): a long import, a purge, another server's write.
 */
describe.skipIf(!hasPostgresBinaries)('mneme serve on PostgreSQL while another process holds the write lock', () => {
  let server: TestPostgresServer;
  let url: string;
  let serve: ServeProcess;
  let key: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    server = await startTestPostgresServer();
    url = await server.database('wait');
    const created = await runCli(url, ['--json', 'keys', 'create', '--label', 'admin']);
    key = (JSON.parse(created.stdout) as { key: string }).key;
    serve = await startServeProcess(url, children);
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await server?.stop();
  });

  it('answers writes 503 with Retry-After after the busy timeout rather than waiting for the lock, and reads meanwhile', async () => {
    const holder = createPgPoolDatabase(url, { max: 1 });
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    const holding = holder.transaction(async (transaction) => {
      await transaction.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK]);
      held = true;
      await released;
      held = false;
    });
    try {
      while (!held) await new Promise((resolve) => setTimeout(resolve, 10));
      const answer = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${serve.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const problem = (await response.json()) as { code?: unknown };
        return {
          path,
          status: response.status,
          code: problem.code ?? null,
          retryAfter: response.headers.get('retry-after'),
          whileHeld: held,
        };
      };
      // More writes than the pool has connections, then reads.
      const writes = Array.from({ length: 12 }, (_, index) =>
        answer('POST', '/api/memories', { content: `written while the lock is held ${index}` }),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      const reads = [answer('GET', '/api/memories?limit=5'), answer('POST', '/api/memories/search', { query: 'lock' })];
      // The lock is let go once every request was answered, or after 30 s (then the test fails below).
      const safety = setTimeout(release, 30_000);
      const answered = await Promise.all([...writes, ...reads]);
      clearTimeout(safety);
      release();
      expect(answered.slice(0, 12)).toEqual(
        Array.from({ length: 12 }, () => ({
          path: '/api/memories',
          status: 503,
          code: 'STORE_BUSY',
          retryAfter: '1',
          whileHeld: true,
        })),
      );
      expect(answered.slice(12).map(({ status, whileHeld }) => ({ status, whileHeld }))).toEqual([
        { status: 200, whileHeld: true },
        { status: 200, whileHeld: true },
      ]);
      // Once the lock is free, writes go through.
      await holding;
      expect((await serve.call('POST', '/api/memories', { content: 'written after' }, key)).status).toBe(201);
    } finally {
      release();
      await holding.catch(() => {});
      await holder.close();
    }
  }, 60_000);
});
