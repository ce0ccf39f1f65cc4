import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeProviderServer } from '../src/models/fake/fake-provider-server.fixture.js';
import { mnemeBinary, startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-face-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});
const offline = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
let databases = 0;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI in a child process, in `cwd` (the test folder by default). */
function mneme(argv: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolvePromise) => {
    execFile(
      process.execPath,
      [mnemeBinary, ...argv],
      { cwd: options.cwd ?? folder, env: options.env ?? offline },
      (error, stdout, stderr) => {
        resolvePromise({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

/** A new database file with `init` already run. */
async function newDatabase(): Promise<string> {
  const database = join(folder, `face-${databases++}.db`);
  expect((await mneme(['--db', database, 'init'])).code).toBe(0);
  return database;
}

describe('the built CLI, option by option', () => {
  it.each([
    [
      ['serve', '--port', 'abc'],
      "option '--port <port>' argument 'abc' is invalid. expected a whole number from 0 to 65535",
    ],
    [['serve', '--port', '70000'], "argument '70000' is invalid. expected a whole number from 0 to 65535"],
    [['serve', '--port', '-1'], "argument '-1' is invalid"],
    [
      ['search', 'x', '--top', '0'],
      "option '--top <n>' argument '0' is invalid. expected a whole number from 1 to 100",
    ],
    [['search', 'x', '--mode', 'fast'], 'Allowed choices are hybrid, recent-first.'],
    [['context', 'x', '--top', '1.5'], "argument '1.5' is invalid"],
    [['list', '--limit', '0'], 'expected a whole number from 1 to 500'],
    [['list', '--archived', 'maybe'], 'Allowed choices are exclude, include, only.'],
    [['add', 'x', '--scope', 'planet'], 'Allowed choices are personal, room, project, session, global.'],
    [['turns', '--channel', 'c', '--count', '99'], 'expected a whole number from 1 to 50'],
    [['channels', 'put', 'c', '--visibility', 'secret'], 'Allowed choices are direct, private, public.'],
    [['maintain', '--task', 'nap'], 'Allowed choices are decay, episodes'],
    [['reembed', '--batch-size', 'x'], "option '--batch-size <n>' argument 'x' is invalid"],
    [['init', '--preset', 'nope'], 'Allowed choices are mneme, matrix-bot'],
    [['update', '1', '--pin', '--unpin'], "option '--pin' cannot be used with option '--unpin'"],
  ])('refuses %j with exit code 2 and one clear line, before opening anything', async (argv, message) => {
    const database = join(folder, `never-${databases++}.db`);
    const run = await mneme(['--db', database, '--create', ...argv]);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toContain(message);
    expect(run.stderr).toMatch(/^mneme: [^\n]+\n$/);
    expect(run.stderr).not.toMatch(/undefined|Error:|\n\s+at /);
    expect(existsSync(database)).toBe(false);
  });

  it('prints the version of package.json, and every help lists --db and --json', async () => {
    const manifest = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8'));
    expect(await mneme(['--version'])).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
    for (const command of [['add'], ['search'], ['serve'], ['keys', 'create'], ['policy', 'show']]) {
      const help = await mneme([...command, '--help']);
      expect(help.code, command.join(' ')).toBe(0);
      expect(help.stdout, command.join(' ')).toMatch(/Global Options:[\s\S]*--db <path>[\s\S]*--json/);
    }
  });
});

describe('a missing database', () => {
  it('is an error naming the path for a command that does not create one, and nothing is created', async () => {
    const database = join(folder, 'typo', 'mneme.db');
    for (const argv of [
      ['list'],
      ['stats'],
      ['search', 'coffee'],
      ['add', 'x'],
      ['keys', 'list'],
      ['policy', 'show'],
    ]) {
      const run = await mneme(['--db', database, ...argv]);
      expect(run, argv.join(' ')).toEqual({
        code: 3,
        stdout: '',
        stderr: `mneme: no database at ${database}: check --db or MNEME_DB, or create it (mneme init, or --create)\n`,
      });
    }
    expect(existsSync(join(folder, 'typo'))).toBe(false);
    expect((await mneme(['--db', database, '--create', 'add', 'created on purpose'])).code).toBe(0);
    expect((await mneme(['--db', database, 'list'])).stdout).toContain('created on purpose');
  });

  it('names the default path MNEME_DB and ./data/mneme.db lead to, and init creates it', async () => {
    const project = join(folder, 'project');
    mkdirSync(project);
    expect(await mneme(['stats'], { cwd: project })).toMatchObject({
      code: 3,
      stderr: expect.stringContaining('no database at ./data/mneme.db'),
    });
    const fromEnvironment = join(project, 'env.db');
    expect(await mneme(['stats'], { cwd: project, env: { ...offline, MNEME_DB: fromEnvironment } })).toMatchObject({
      code: 3,
      stderr: expect.stringContaining(`no database at ${fromEnvironment}`),
    });
    expect(existsSync(join(project, 'data'))).toBe(false);
    expect((await mneme(['init'], { cwd: project })).code).toBe(0);
    expect((await mneme(['stats'], { cwd: project })).code).toBe(0);
    expect(existsSync(join(project, 'data', 'mneme.db'))).toBe(true);
  });

  it('is no error for :memory:, ingest and doctor', async () => {
    expect((await mneme(['--db', ':memory:', 'list'])).stdout).toBe('no memories\n');
    const lines = join(folder, 'one-line.jsonl');
    writeFileSync(lines, `${JSON.stringify({ channelId: 'c', sender: 'oz', content: 'hello there' })}\n`);
    const ingested = join(folder, 'ingested.db');
    expect((await mneme(['--db', ingested, 'ingest', lines])).code).toBe(0);
    expect(existsSync(ingested)).toBe(true);
    const database = join(folder, 'doctor-only.db');
    expect((await mneme(['--db', database, 'doctor'])).stdout).toContain('database: not created yet');
    expect(existsSync(database)).toBe(false);
  });
});

describe('errors with --json', () => {
  it('are one JSON object on stderr with the code and message, with the same exit codes', async () => {
    const database = await newDatabase();
    const notFound = await mneme(['--db', database, '--json', 'get', '42']);
    expect(notFound.code).toBe(3);
    expect(notFound.stdout).toBe('');
    expect(JSON.parse(notFound.stderr)).toEqual({ error: { code: 'NOT_FOUND', message: 'memory 42 does not exist' } });

    const badOption = await mneme(['--db', database, 'list', '--limit', 'lots', '--json']);
    expect(badOption.code).toBe(2);
    expect(JSON.parse(badOption.stderr)).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: "option '--limit <n>' argument 'lots' is invalid. expected a whole number from 1 to 500",
      },
    });

    const badInput = await mneme(['--json', '--db', database, 'add', '  ']);
    expect(badInput.code).toBe(2);
    expect(JSON.parse(badInput.stderr).error).toMatchObject({ code: 'INVALID_INPUT' });

    const missing = await mneme(['--json', '--db', join(folder, 'nope.db'), 'stats']);
    expect(missing.code).toBe(3);
    expect(JSON.parse(missing.stderr).error.message).toContain('nope.db');
    expect(JSON.parse((await mneme(['--json', 'frobnicate'])).stderr)).toEqual({
      error: { code: 'INVALID_INPUT', message: "unknown command 'frobnicate'" },
    });
  });
});

describe('mneme search without a full viewer', () => {
  it('says which viewer it searched as and how many memories it could not see, never their content', async () => {
    const database = await newDatabase();
    for (const user of ['oz', 'ana', 'bo']) {
      await mneme([
        '--db',
        database,
        'add',
        `${user} drinks secret-blend coffee`,
        '--scope',
        'personal',
        '--user',
        user,
      ]);
    }
    await mneme(['--db', database, 'add', 'coffee machine on floor 2', '--scope', 'room', '--channel', 'kitchen']);

    const anonymous = await mneme(['--db', database, 'search', 'coffee']);
    expect(anonymous.code).toBe(0);
    expect(anonymous.stdout).toContain('no memories found');
    expect(anonymous.stderr).toBe(
      'mneme: searched as no user, channel, project or topic: 3 personal and 1 room memories are not visible; pass --user or --channel to see them\n',
    );
    expect(anonymous.stderr).not.toMatch(/secret-blend|floor 2|oz|ana/);

    const asOz = await mneme(['--db', database, '--json', 'search', 'coffee', '--user', 'oz']);
    expect(JSON.parse(asOz.stdout).hits).toHaveLength(1);
    expect(asOz.stderr).toBe(
      'mneme: searched as user oz (no channel, project or topic): 1 room memory is not visible; pass --channel to see them\n',
    );
    const everything = await mneme(['--db', database, 'search', 'coffee', '--user', 'oz', '--channel', 'kitchen']);
    expect(everything.stderr).toBe('');
    const context = await mneme(['--db', database, 'context', 'coffee']);
    expect(context.stderr).toContain('3 personal and 1 room memories are not visible');
  });
});

describe('mneme serve', () => {
  it('names the models in its startup line: offline, or the embedding and chat models in use', async () => {
    const quiet = await startServeProcess(join(folder, 'serve-offline.db'), children);
    expect(quiet.stderr()).toMatch(
      /listening on http:\/\/127\.0\.0\.1:\d+ \(database .*serve-offline\.db; models: offline \(lexical search, offline extractor\)\)\n/,
    );
    quiet.child.kill('SIGTERM');

    const provider = await startFakeProviderServer();
    try {
      const online = await startServeProcess(join(folder, 'serve-online.db'), children, {
        env: { MNEME_EMBEDDER: 'ollama', MNEME_CHAT: 'ollama', MNEME_OLLAMA_URL: provider.url },
      });
      expect(online.stderr()).toMatch(/models: embedding ollama:nomic-embed-text, chat ollama:llama3\.2\)\n/);
      online.child.kill('SIGTERM');
      await new Promise((done) => online.child.once('exit', done));
    } finally {
      await provider.close();
    }
  });

  it('logs one line per request (method, path, status, ms) without the body, query values or key; --quiet turns it off', async () => {
    const database = await newDatabase();
    const key = (await mneme(['--db', database, 'keys', 'create', '--label', 'face'])).stdout.split('\n')[0] ?? '';
    const service = await startServeProcess(database, children);
    await service.call('POST', '/api/memories', { content: 'a body that stays private' }, key);
    await service.call('GET', '/api/memories?userId=secret-user&limit=5', undefined, key);
    await service.call('GET', '/api/health');
    await service.call('GET', '/api/memories');
    const log = service.stderr().split('\n');
    expect(log.filter((line) => / (GET|POST) \//.test(line))).toEqual([
      expect.stringMatching(/^mneme: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ POST \/api\/memories 201 \d+ms$/),
      expect.stringMatching(/^mneme: \S+ GET \/api\/memories 200 \d+ms$/),
      expect.stringMatching(/^mneme: \S+ GET \/api\/health 200 \d+ms$/),
      expect.stringMatching(/^mneme: \S+ GET \/api\/memories 401 \d+ms$/),
    ]);
    expect(service.stderr()).not.toMatch(/stays private|secret-user|limit=|Bearer/);
    expect(service.stderr()).not.toContain(key);
    service.child.kill('SIGTERM');

    const silent = await startServeProcess(database, children, { args: ['--quiet'] });
    await silent.call('GET', '/api/health');
    silent.child.kill('SIGTERM');
    await new Promise((done) => silent.child.once('exit', done));
    expect(silent.stderr()).not.toMatch(/GET \/api\/health/);
  });

  it('stops cleanly on SIGTERM when run as node dist/cli/mneme.js serve', async () => {
    const service = await startServeProcess(join(folder, 'serve-stop.db'), children);
    service.child.kill('SIGTERM');
    const [code, signal] = await new Promise<[number | null, string | null]>((done) =>
      service.child.once('exit', (exitCode, exitSignal) => done([exitCode, exitSignal])),
    );
    expect([code, signal]).toEqual([0, null]);
    expect(service.stderr()).toContain('SIGTERM, stopping');
  });

  it('leaves no server behind when npm start gets SIGTERM', async () => {
    const npm = spawn('npm', ['start', '--', '--port', '0', '--db', join(folder, 'npm-start.db')], {
      cwd: resolve(import.meta.dirname, '..'),
      env: offline,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(npm);
    let stderr = '';
    const url = await new Promise<string>((done, fail) => {
      npm.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
        if (match?.[1]) done(match[1]);
      });
      npm.once('exit', (code) => fail(new Error(`npm start exited with ${code}: ${stderr}`)));
    });
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
    // The server holds npm's stderr pipe too: the pipe closes only once every process writing to it is gone.
    const pipeClosed = new Promise((done) => npm.stderr.once('close', done));
    npm.kill('SIGTERM');
    await pipeClosed;
    await expect(fetch(`${url}/api/health`)).rejects.toThrow();
    expect(stderr).toContain('SIGTERM, stopping');
  });
});
