import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian's postgresql-15 puts its programs (`.ci/run` installs it); `MNEME_PG_BIN` overrides it. */
export const postgresBinaries = process.env.MNEME_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** True when `initdb` and `pg_ctl` are there: the real-server tests run; else they are skipped, saying so. */
export const hasPostgresBinaries =
  existsSync(join(postgresBinaries, 'initdb')) && existsSync(join(postgresBinaries, 'pg_ctl'));

/** A PostgreSQL server a test started in a temporary folder, on a free port of 127.0.0.1. */
export interface TestPostgresServer {
  /** `postgres://mneme@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  url: string;
  /**
   * A URL of another database of the server, created on first ask, with `createdb`'s `options` when given (a locale of
   * its own: `['--template=template0', '--lc-ctype=C']`).
   */
  database(name: string, options?: readonly string[]): Promise<string>;
  /** Stops the server (fast shutdown: sessions end) and keeps its data; `start` brings it back on the same port. */
  halt(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs `initdb` in a temporary folder and starts the server on a free loopback port. PostgreSQL
 * refuses to run as root: as root, the folder is given to the `postgres` user and the programs run
 * as that user (`runuser`). Durability is off (`fsync=off`): the tests crash processes, not machines.
 */
export async function startTestPostgresServer(): Promise<TestPostgresServer> {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-pg-'));
  const data = join(folder, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    chownSync(folder, Number(stdout.trim()), Number(group.trim()));
    chmodSync(folder, 0o700);
  }
  const pg = async (program: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(postgresBinaries, program), ...args])
      : run(join(postgresBinaries, program), args);
  // Text sorted by its bytes (`C`, as SQLite sorts), letters classified as UTF-8 (`C.UTF-8`, so full text lowers É or Σ
  // as a database made on most machines does; ADR 49).
  await pg('initdb', [
    '-D',
    data,
    '-U',
    'mneme',
    '-A',
    'trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--lc-ctype=C.UTF-8',
    '--no-sync',
  ]);
  const port = await freePort();
  const start = () =>
    pg('pg_ctl', [
      'start',
      '-D',
      data,
      '-w',
      '-l',
      join(folder, 'server.log'),
      '-o',
      `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
    ]);
  await start();
  const url = (name: string) => `postgres://mneme@127.0.0.1:${port}/${name}`;
  const created = new Set<string>(['postgres']);
  return {
    url: url('postgres'),
    async database(name, options = []) {
      if (!created.has(name)) {
        await pg('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'mneme', ...options, name]);
        created.add(name);
      }
      return url(name);
    },
    async halt() {
      await pg('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']);
    },
    async start() {
      await start();
    },
    async stop() {
      try {
        await pg('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}
