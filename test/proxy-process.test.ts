import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from './fake-openai-upstream.js';
import { mnemeBinary } from './serve-process.js';

const run = promisify(execFile);
const folder = mkdtempSync(join(tmpdir(), 'mneme-proxy-cli-'));
const children: ChildProcess[] = [];
const upstreams: FakeUpstream[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const upstream of upstreams) await upstream.close();
  rmSync(folder, { recursive: true, force: true });
});

const offline = { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
const UPSTREAM_KEY = 'sk-upstream-from-the-environment';

/** Runs the built CLI on `database` and returns its stdout. */
async function mneme(database: string, ...argv: string[]): Promise<string> {
  return (await run(process.execPath, [mnemeBinary, '--db', database, ...argv], { env: offline })).stdout;
}

/** Starts the built `mneme proxy` and resolves with its URL once it listens. */
function startProxy(
  database: string,
  upstream: string,
  environment: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess; stderr(): string }> {
  const child = spawn(
    process.execPath,
    [mnemeBinary, '--db', database, 'proxy', '--upstream', upstream, '--port', '0'],
    {
      env: { ...offline, MNEME_UPSTREAM_API_KEY: UPSTREAM_KEY, ...environment },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mneme proxy did not start: ${stderr}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /mneme proxy listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ url: match[1], child, stderr: () => stderr });
      }
    });
    child.once('exit', (code) => reject(new Error(`mneme proxy exited with ${code}: ${stderr}`)));
  });
}

describe('mneme proxy (the built CLI in a child process)', () => {
  it('recalls into the upstream request, streams the reply through, and remembers the exchange after a clean stop', async () => {
    const database = join(folder, 'proxy.db');
    await mneme(
      database,
      '--create',
      'add',
      'Ann prefers green tea in the morning',
      '--scope',
      'personal',
      '--user',
      'ann',
    );
    const key =
      (await mneme(database, 'keys', 'create', '--label', 'ann laptop', '--user', 'ann')).split('\n')[0] ?? '';
    const upstream = await startFakeUpstream();
    upstreams.push(upstream);
    const proxy = await startProxy(database, upstream.url);
    expect(readFileSync(`/proc/${proxy.child.pid}/cmdline`, 'utf8')).not.toContain(UPSTREAM_KEY);

    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: key, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      stream: true,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What should I drink in the morning? I live in Lisbon.' },
      ],
    });
    let reply = '';
    for await (const chunk of stream) reply += chunk.choices[0]?.delta.content ?? '';
    expect(reply).toBe('Green tea suits your mornings.');

    const [request] = upstream.requests;
    expect(upstream.requests).toHaveLength(1);
    const sent = (request?.body as { messages?: Array<{ role: string; content: string }> } | undefined)?.messages ?? [];
    expect(sent.map((message) => message.role)).toEqual(['system', 'system', 'user']);
    expect(sent[1]?.content).toMatch(/green tea/);
    expect(request?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(request?.headers)).not.toContain(key);

    // The exchange is ingested after the stream ends and extracted in the background: the running
    // proxy's memory is searched from another process until it is there (SIGTERM would leave the
    // extraction to the next start, as designed).
    const searchLisbon = () => mneme(database, 'search', 'Lisbon', '--user', 'ann', '--channel', 'proxy:ann');
    let found = await searchLisbon().catch(() => '');
    for (let attempt = 0; attempt < 20 && !/Lisbon/.test(found); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      found = await searchLisbon().catch(() => '');
    }
    expect(found).toMatch(/Lisbon/);

    const exit = new Promise<number | null>((resolve) => proxy.child.once('exit', resolve));
    proxy.child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(proxy.stderr()).toMatch(/POST \/v1\/chat\/completions 200 \d+ms/);

    const turns = await mneme(database, 'turns', '--channel', 'proxy:ann');
    expect(turns).toContain('What should I drink in the morning? I live in Lisbon.');
    expect(turns).toContain('Green tea suits your mornings.');
  });

  it('sends the organization and project of the environment upstream in place of those the client names', async () => {
    const database = join(folder, 'billing.db');
    const key = (await mneme(database, '--create', 'keys', 'create', '--label', 'ann', '--user', 'ann')).split('\n')[0];
    const upstream = await startFakeUpstream();
    upstreams.push(upstream);
    const proxy = await startProxy(database, upstream.url, {
      MNEME_UPSTREAM_ORGANIZATION: 'org-operator',
      MNEME_UPSTREAM_PROJECT: ' proj_operator ',
    });
    const client = new OpenAI({
      baseURL: `${proxy.url}/v1`,
      apiKey: key ?? '',
      maxRetries: 0,
      organization: 'org-someone-else',
      project: 'proj_someone_else',
    });
    await client.models.list();

    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]?.headers['openai-organization']).toBe('org-operator');
    expect(upstream.requests[0]?.headers['openai-project']).toBe('proj_operator');
  });

  it('refuses an upstream key that cannot travel in a header with one clear line that does not repeat it', async () => {
    const database = join(folder, 'bad-key.db');
    const failed = await run(
      process.execPath,
      [mnemeBinary, '--db', database, '--create', 'proxy', '--upstream', 'http://127.0.0.1:9/v1', '--port', '0'],
      { env: { ...offline, MNEME_UPSTREAM_API_KEY: 'sk-one two' }, timeout: 20_000 },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({
      code: 9,
      stderr:
        'mneme: MNEME_UPSTREAM_API_KEY must be printable ASCII without spaces (it is sent in a header); check its value\n',
    });
  });

  it('refuses an upstream URL carrying credentials with one clear line that does not repeat them', async () => {
    const database = join(folder, 'credentials.db');
    const failed = await run(
      process.execPath,
      [mnemeBinary, '--db', database, 'proxy', '--upstream', 'http://admin:hunter2@127.0.0.1:9/v1', '--port', '0'],
      { env: offline, timeout: 20_000 },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({
      code: expect.any(Number),
      stderr: 'mneme: --upstream must not carry a user name or password: put the key in MNEME_UPSTREAM_API_KEY\n',
    });
  });

  it('refuses an upstream that is not an http URL with one clear line', async () => {
    const database = join(folder, 'refused.db');
    const failed = await run(
      process.execPath,
      [mnemeBinary, '--db', database, 'proxy', '--upstream', 'ftp://example'],
      {
        env: offline,
      },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({
      code: expect.any(Number),
      stderr: 'mneme: --upstream must be an http or https URL, not ftp:\n',
    });
  });
});
