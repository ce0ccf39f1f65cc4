import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../src/core/errors.js';
import { createPgPoolDatabase, withPgErrors } from '../src/storage/postgres/postgres-database.js';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary, type ServeProcess, startServeProcess } from './serve-process.js';

/**
 * A TCP relay on a port of its own in front of the PostgreSQL server: `down()` closes every connection
 * through it and stops listening (the server, as the process sees it, is gone: sessions end, connecting
 * is refused), `up()` listens on the same port again (the server is back).
 */
async function startRelay(target: URL) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = new Socket();
        upstream.connect(Number(target.port), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => sockets.delete(socket));
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server?.address();
        port = typeof address === 'object' && address ? address.port : 0;
        resolve();
      });
    });
  await listen();
  return {
    url: () => {
      const url = new URL(target.toString());
      url.port = String(port);
      return url.toString();
    },
    async down() {
      await new Promise<void>((resolve) => {
        server?.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
    up: listen,
  };
}

describe.skipIf(!hasPostgresBinaries)('mneme serve while its PostgreSQL server goes away and comes back', () => {
  let server: TestPostgresServer;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let serve: ServeProcess;
  let key: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    expect(existsSync(mnemeBinary), 'run `npm run build` first').toBe(true);
    server = await startTestPostgresServer();
    const url = await server.database('away');
    const created = await runCli(url, ['--json', 'keys', 'create', '--label', 'admin']);
    key = (JSON.parse(created.stdout) as { key: string }).key;
    relay = await startRelay(new URL(url));
    serve = await startServeProcess(relay.url(), children);
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await relay?.down();
    await server?.stop();
  });

  const requests = [
    ['GET', '/api/memories', undefined],
    ['POST', '/api/memories', { content: 'the spare key is under the blue pot' }],
    ['POST', '/api/memories/search', { query: 'spare key' }],
  ] as const;

  it('answers 503 with Retry-After (STORE_BUSY), never 500, while the server is away, and serves again once it is back', async () => {
    for (const [method, path, body] of requests)
      expect((await serve.call(method, path, body, key)).status).toBeLessThan(300);
    await relay.down();
    const away: Array<{ path: string; status: number; code: unknown; retryAfter: string | null }> = [];
    for (let round = 0; round < 3; round++) {
      for (const [method, path, body] of requests) {
        const response = await fetch(`${serve.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const problem = (await response.json()) as { code?: unknown };
        away.push({
          path,
          status: response.status,
          code: problem.code,
          retryAfter: response.headers.get('retry-after'),
        });
      }
    }
    expect(
      away.filter((answer) => answer.status !== 503 || answer.code !== 'STORE_BUSY' || answer.retryAfter !== '1'),
    ).toEqual([]);
    await relay.up();
    for (const [method, path, body] of requests)
      expect((await serve.call(method, path, body, key)).status).toBeLessThan(300);
    expect(serve.child.exitCode).toBeNull();
  });

  it('says a write whose connection was lost while committing may or may not be saved, rather than busy: try again', async () => {
    const direct = createPgPoolDatabase(await server.database('away'), { max: 1 });
    const lost = await startRelay(new URL(await server.database('away')));
    const database = createPgPoolDatabase(lost.url(), { max: 2 });
    try {
      // A deferred constraint trigger runs at COMMIT: it sleeps there, and the connection goes meanwhile.
      await direct.exec(`
        CREATE TABLE committed_late (n integer);
        CREATE FUNCTION sleep_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$;
        CREATE CONSTRAINT TRIGGER committed_late_sleeps AFTER INSERT ON committed_late
          DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION sleep_at_commit();`);
      await database.query('SELECT 1');
      const failed = withPgErrors('writing', () =>
        database.transaction((transaction) => transaction.query('INSERT INTO committed_late VALUES (1)')),
      ).catch((error: unknown) => error);
      let committing = false;
      for (let tries = 0; tries < 200 && !committing; tries++) {
        const { rows } = await direct.query<{ n: number }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'COMMIT' AND state = 'active'",
        );
        committing = (rows[0]?.n ?? 0) > 0;
        if (!committing) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(committing).toBe(true);
      await lost.down();
      const error = await failed;
      expect(error).toMatchObject({ code: ErrorCode.StoreFailed });
      expect((error as Error).message).toMatch(/whether the change was saved is unknown/);
      expect((error as Error).message).not.toMatch(/try again shortly|check the URL/);
    } finally {
      await lost.down();
      await database.close();
      await direct.close();
    }
  });
});
