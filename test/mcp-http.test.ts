import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../src/core/types.js';
import { runCli } from './cli-harness.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-mcp-http-'));
const database = join(folder, 'service.db');
const children: ChildProcess[] = [];
const clients: Client[] = [];
let serve: ServeProcess;
const keys: Record<'admin' | 'alice' | 'bob', string> = { admin: '', alice: '', bob: '' };

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

/** A real client of `/mcp` on the running `mneme serve`, with this key and these extra headers. */
async function connect(key: string | null, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${serve.url}/mcp`), {
    requestInit: { headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  const client = new Client({ name: 'mneme-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

function textOf(result: ToolResult): string {
  return result.content.map((part) => part.text ?? '').join('\n');
}

/** A field of a successful tool result's structured content. */
function field<T>(result: ToolResult, name: string): T {
  expect(result.isError, textOf(result)).toBeFalsy();
  const value = result.structuredContent?.[name];
  expect(value, name).toBeDefined();
  return value as T;
}

async function createKey(label: string, user?: string): Promise<string> {
  const run = await runCli(database, ['keys', 'create', '--label', label, ...(user ? ['--user', user] : [])]);
  expect(run.code, run.stderr).toBe(0);
  return run.stdout.split('\n')[0] ?? '';
}

beforeAll(async () => {
  keys.admin = await createKey('operator');
  keys.alice = await createKey('alice laptop', 'alice');
  keys.bob = await createKey('bob phone', 'bob');
  serve = await startServeProcess(database, children);
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

describe('MCP over streamable HTTP on a real mneme serve', () => {
  it("never shows user A user B's personal memories through any tool or the resource", async () => {
    const bob = await connect(keys.bob);
    const secret = field<Memory>(
      await call(bob, 'remember', { content: 'Bob keeps the spare key under the red flowerpot' }),
      'memory',
    );
    expect(secret).toMatchObject({ scope: 'personal', userId: 'bob' });

    const alice = await connect(keys.alice);
    field<Memory>(await call(alice, 'remember', { content: 'Alice keeps her notes in a green notebook' }), 'memory');

    const recalled = await call(alice, 'recall', { query: 'spare key red flowerpot', topK: 100 });
    expect(field<Array<{ memory: Memory }>>(recalled, 'hits').map((hit) => hit.memory.userId)).not.toContain('bob');
    expect(JSON.stringify(recalled.structuredContent?.hits)).not.toContain('flowerpot');
    expect(textOf(recalled)).not.toContain('flowerpot');
    expect(JSON.stringify(await call(alice, 'context', { query: 'where is the spare key' }))).not.toContain(
      'flowerpot',
    );
    for (const archived of ['exclude', 'include', 'only']) {
      expect(JSON.stringify(await call(alice, 'list', { archived, limit: 500 }))).not.toContain('flowerpot');
    }
    for (const [tool, args] of [
      ['history', { id: secret.id }],
      ['update', { id: secret.id, content: 'Bob moved the key' }],
      ['forget', { id: secret.id }],
    ] as const) {
      const result = await call(alice, tool, args);
      expect(result.isError, tool).toBe(true);
      expect(textOf(result), tool).toContain(`memory ${secret.id} does not exist`);
    }
    const byPattern = await call(alice, 'forget', { pattern: 'flowerpot' });
    expect(field<Memory[]>(byPattern, 'forgotten')).toEqual([]);
    await expect(alice.readResource({ uri: `memory://${secret.id}` })).rejects.toThrow(/does not exist/);
    const { resources } = await alice.listResources();
    expect(resources.length).toBeGreaterThan(0);
    expect(JSON.stringify(resources)).not.toContain('flowerpot');
    expect(textOf(await call(alice, 'stats'))).toContain('FORBIDDEN');
    const exchange = await call(alice, 'ingest_exchange', { userMessage: 'hello', assistantReply: 'hi' });
    expect(exchange.isError).toBe(true);

    // Bob's memory is as he left it, and the administrator key sees it when it names bob as the viewer.
    const asAdmin = await serve.call('GET', `/api/memories/${secret.id}`, undefined, keys.admin);
    expect(asAdmin.body).toMatchObject({ content: secret.content, archivedAt: null });
    const operator = await connect(keys.admin, { 'Mneme-User': 'bob' });
    const hits = field<Array<{ memory: Memory }>>(await call(operator, 'recall', { query: 'spare key' }), 'hits');
    expect(hits.map((hit) => hit.memory.id)).toContain(secret.id);
    expect(field<number>(await call(operator, 'stats'), 'active')).toBeGreaterThanOrEqual(2);
  });

  it('refuses a user key that names another user, an unknown key, and a key once it is revoked', async () => {
    const naming = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.alice}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mneme-user': 'bob',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(naming.status).toBe(403);
    expect(naming.headers.get('content-type')).toContain('application/problem+json');
    await expect(connect(keys.alice, { 'Mneme-User': 'bob' })).rejects.toThrow();
    const blank = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.admin}`, 'content-type': 'application/json', 'mneme-channel': ' ' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(blank.status).toBe(422);
    const stream = await fetch(`${serve.url}/mcp`, {
      headers: { authorization: `Bearer ${keys.alice}`, accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(405);
    expect(((await blank.json()) as { detail: string }).detail).toContain('channelId must not be empty');
    await expect(connect(null)).rejects.toThrow();
    await expect(connect('mneme_not_a_real_key')).rejects.toThrow();

    const carolKey = await createKey('carol tablet', 'carol');
    const carol = await connect(carolKey);
    field<Memory>(await call(carol, 'remember', { content: 'Carol plays the cello' }), 'memory');
    const prefix = JSON.parse((await runCli(database, ['--json', 'keys', 'list'])).stdout).find(
      (key: { label: string }) => key.label === 'carol tablet',
    ).prefix as string;
    expect((await runCli(database, ['keys', 'revoke', prefix])).code).toBe(0);
    await expect(call(carol, 'list')).rejects.toThrow(/401|unknown or revoked/);
    await expect(connect(carolKey)).rejects.toThrow();
  });

  it('reads a Mneme-User header as the UTF-8 its bytes spell, and refuses bytes that are not UTF-8', async () => {
    // Header values go on the wire as one byte a character: these two characters are the UTF-8 bytes of "ë".
    const zoe = await connect(keys.admin, { 'Mneme-User': 'zo\u00c3\u00ab' });
    const memory = field<Memory>(await call(zoe, 'remember', { content: 'Zoë learns the banjo' }), 'memory');
    expect(memory).toMatchObject({ scope: 'personal', userId: 'zoë' });
    const latin1 = await fetch(`${serve.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.admin}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mneme-user': 'zo\u00eb',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(latin1.status).toBe(422);
    expect(((await latin1.json()) as { detail: string }).detail).toContain('the mneme-user header is not UTF-8 text');
  });

  it('answers a request with malformed params as invalid params naming the field, and runs nothing for it', async () => {
    const post = async (message: Record<string, unknown>) => {
      const response = await fetch(`${serve.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${keys.bob}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, ...message }),
      });
      return {
        status: response.status,
        body: (await response.json()) as { error?: { code: number; message: string } },
      };
    };
    const nameless = await post({ method: 'tools/call', params: { arguments: { content: 'Bob owns a kayak' } } });
    expect(nameless.status).toBe(200);
    expect(nameless.body.error).toEqual({
      code: -32602,
      message: 'invalid tools/call request: params.name: Invalid input: expected string, received undefined',
    });
    const cursor = await post({ method: 'resources/list', params: { cursor: 3 } });
    expect(cursor.body.error?.code).toBe(-32602);
    expect(cursor.body.error?.message).toMatch(/^invalid resources\/list request: params\.cursor: /);
    const bob = await connect(keys.bob);
    const listed = field<Memory[]>(await call(bob, 'list', { limit: 100 }), 'memories');
    expect(listed.map((memory) => memory.content)).not.toContain('Bob owns a kayak');
  });

  it('finds a memory remembered over MCP through the HTTP API and the CLI, and the reverse', async () => {
    const alice = await connect(keys.alice);
    const overMcp = field<Memory>(
      await call(alice, 'remember', { content: 'Alice is learning the bandoneon', category: 'fact' }),
      'memory',
    );
    const search = await serve.call('POST', '/api/memories/search', { query: 'bandoneon' }, keys.alice);
    expect(search.status).toBe(200);
    expect((search.body.hits as Array<{ memory: Memory }>).map((hit) => hit.memory.id)).toContain(overMcp.id);
    const cli = await runCli(database, ['--json', 'search', 'bandoneon', '--user', 'alice']);
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout).hits as Array<{ memory: Memory }>).map((hit) => hit.memory.id)).toContain(
      overMcp.id,
    );

    const overHttp = await serve.call(
      'POST',
      '/api/memories',
      { content: 'Alice bakes sourdough on Sundays', scope: 'personal', userId: 'alice' },
      keys.alice,
    );
    expect(overHttp.status).toBe(201);
    const added = await runCli(database, [
      'add',
      'Alice cycles to work along the canal',
      '--scope',
      'personal',
      '--user',
      'alice',
    ]);
    expect(added.code, added.stderr).toBe(0);
    const sourdough = field<Array<{ memory: Memory }>>(await call(alice, 'recall', { query: 'sourdough' }), 'hits');
    expect(sourdough.map((hit) => hit.memory.id)).toContain(overHttp.body.id);
    const canal = field<Array<{ memory: Memory }>>(await call(alice, 'recall', { query: 'canal cycles' }), 'hits');
    expect(canal.map((hit) => hit.memory.content)).toContain('Alice cycles to work along the canal');
  });
});
