import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';

/*
 * Every command of the built CLI on a PostgreSQL URL printed node-postgres's deprecation warning ("Calling
 * client.query() when the client is already executing a query is deprecated ...") on stderr: the pool's `connect`
 * event queued mneme's `synchronous_commit` statement on each new connection, and the pool lent that connection to a
 * statement at once, queued behind it. The pool now lends a new connection once that statement has finished.
 */

const run = promisify(execFile);
const offline = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };

/** What a user would take for a problem on stderr: Node's warnings, whatever their kind. */
const WARNING = /Warning|deprecated|client\.query\(\)/;

describe.skipIf(!hasPostgresBinaries)('the built CLI on a PostgreSQL 15 server', () => {
  let server: TestPostgresServer;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await server?.stop();
  });

  const cli = (args: readonly string[]) =>
    run(process.execPath, [mnemeBinary, ...args], { env: offline, timeout: 60_000 });

  it('prints no warning of the driver on stderr from add, search, doctor and copy', async () => {
    const url = await server.database('warnings_cli');
    const target = await server.database('warnings_copy');
    const stderr: string[] = [];
    for (const args of [
      ['--db', url, '--create', 'add', 'The deploy runs on Kubernetes'],
      ['--db', url, 'search', 'kubernetes'],
      ['--db', url, 'doctor'],
      ['copy', '--from', url, '--to', target],
    ]) {
      const result = await cli(args);
      stderr.push(result.stderr);
    }
    expect(stderr.filter((text) => WARNING.test(text))).toEqual([]);
  }, 120_000);

  it('prints no security warning of the driver for a URL with sslmode=require, only why it cannot connect', async () => {
    // The test server has no TLS: the command fails, in one line, without node-postgres's ten-line warning.
    const url = `${await server.database('warnings_ssl')}?sslmode=require`;
    const failed = await cli(['--db', url, 'list']).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 7 });
    expect(failed.stderr).toMatch(/^mneme: opening the database at .*: The server does not support SSL connections\n$/);
    expect(failed.stderr).not.toMatch(WARNING);
  }, 60_000);

  it('prints no warning of the driver on stderr from serve while it answers, nor from mcp on stdio', async () => {
    const url = await server.database('warnings_serve');
    const serve = await startServeProcess(url, children);
    const remembered = await serve.call('POST', '/api/memories', { content: 'The office closes on Mondays' });
    expect(remembered.status).toBe(201);
    expect((await serve.call('POST', '/api/memories/search', { query: 'office' })).status).toBe(200);
    serve.child.kill('SIGTERM');
    await new Promise((resolve) => serve.child.once('exit', resolve));
    expect(serve.stderr()).toMatch(/listening on/);
    expect(serve.stderr()).not.toMatch(WARNING);

    const mcp = spawn(process.execPath, [mnemeBinary, '--db', url, 'mcp'], {
      env: offline,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(mcp);
    let stdout = '';
    let stderr = '';
    mcp.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    mcp.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const call = (id: number, method: string, params: object) =>
      mcp.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    call(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'test', version: '1' },
    });
    call(2, 'tools/call', { name: 'recall', arguments: { query: 'office' } });
    for (let tries = 0; tries < 600 && !stdout.includes('"id":2'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    mcp.stdin.end();
    await new Promise((resolve) => mcp.once('exit', resolve));
    expect(stdout).toContain('The office closes on Mondays');
    expect(stderr).toMatch(/MCP server on stdio/);
    expect(stderr).not.toMatch(WARNING);
  }, 120_000);
});

if (!hasPostgresBinaries) {
  describe(`the built CLI on a PostgreSQL 15 server (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('prints no warning of the driver on stderr', () => {});
  });
}
