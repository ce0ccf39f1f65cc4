import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Memory } from '../src/core/types.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-mcp-stdio-'));
const database = join(folder, 'mcp.db');
const clients: Client[] = [];

/** A real client connected to the built `mneme mcp` over stdio, with these flags. */
async function connect(flags: string[], env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [mnemeBinary, 'mcp', '--db', database, ...flags],
    env: { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'mneme-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A field of a successful tool result's structured content. */
function field<T>(result: ToolResult, name: string): T {
  expect(result.isError, textOf(result)).toBeFalsy();
  const value = result.structuredContent?.[name];
  expect(value, name).toBeDefined();
  return value as T;
}

function textOf(result: ToolResult): string {
  return result.content.map((part) => part.text ?? '').join('\n');
}

beforeAll(async () => {
  // The operator declares the channel the host's conversation happens in, with alice as its member.
  expect((await runCli(database, ['channels', 'put', 'desk', '--members', 'alice'])).code).toBe(0);
});

afterAll(async () => {
  for (const client of clients) await client.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('mneme mcp over stdio (the built CLI)', () => {
  it('lists every tool with a strict input schema and a description for a model, and the memory resource', async () => {
    const client = await connect(['--user', 'alice', '--channel', 'desk']);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'remember',
      'recall',
      'context',
      'forget',
      'update',
      'list',
      'history',
      'ingest_exchange',
      'stats',
    ]);
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(80);
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain('userId');
    }
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(['memory://{id}']);
  });

  it('calls each tool as the configured user, and a bad argument is a tool error after which the next call works', async () => {
    const client = await connect(['--user', 'alice', '--channel', 'desk']);

    const remembered = await call(client, 'remember', { content: 'Alice drinks green tea every morning' });
    expect(remembered.isError).toBeFalsy();
    const memory = remembered.structuredContent?.memory as Memory;
    expect(memory).toMatchObject({ scope: 'personal', userId: 'alice', source: 'manual' });
    expect(textOf(remembered)).toContain(`#${memory.id}`);

    const bad = await call(client, 'remember', { content: '   ' });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain('content must not be empty');
    const room = await call(client, 'remember', { content: 'The desk channel meets on Mondays', scope: 'room' });
    expect(room.structuredContent?.memory).toMatchObject({ scope: 'room', channelId: 'desk', userId: 'alice' });

    const recalled = await call(client, 'recall', { query: 'green tea', explain: true });
    const hits = recalled.structuredContent?.hits as Array<{ memory: Memory; explanation?: string }>;
    expect(hits[0]?.memory.id).toBe(memory.id);
    expect(hits[0]?.explanation).toBeTruthy();
    expect(textOf(recalled)).toContain('green tea');

    const context = await call(client, 'context', { query: 'what does alice drink in the morning' });
    expect(context.structuredContent?.text).toContain('green tea');
    expect(textOf(context)).toContain('green tea');

    const updated = await call(client, 'update', {
      id: memory.id,
      content: 'Alice drinks jasmine tea every morning',
      reason: 'she said so',
    });
    expect(updated.structuredContent?.memory).toMatchObject({ content: 'Alice drinks jasmine tea every morning' });

    const history = await call(client, 'history', { id: memory.id });
    const versions = history.structuredContent?.versions as Array<{ action: string; reason: string | null }>;
    expect(versions.map((version) => version.action)).toEqual(['create', 'update']);
    expect(versions[1]?.reason).toBe('she said so');

    const listed = await call(client, 'list', { limit: 10 });
    expect(field<Memory[]>(listed, 'memories').map((each) => each.content)).toContain(
      'Alice drinks jasmine tea every morning',
    );

    const exchange = await call(client, 'ingest_exchange', {
      userMessage: 'I moved to Lyon last spring',
      assistantReply: 'Lyon is a lovely city.',
      userName: 'Alice',
    });
    expect(exchange.isError).toBeFalsy();
    const messages = exchange.structuredContent?.messages as Array<{
      role: string;
      senderId: string;
      channelId: string;
    }>;
    expect(messages.map((message) => [message.role, message.senderId, message.channelId])).toEqual([
      ['user', 'alice', 'desk'],
      ['assistant', 'assistant', 'desk'],
    ]);

    // The turn becomes memory in the background: the exchange itself, and the fact extracted from it.
    await expect
      .poll(async () => textOf(await call(client, 'recall', { query: 'where does Alice live, Lyon' })), {
        timeout: 15_000,
      })
      .toContain('Lyon');

    const resource = await client.readResource({ uri: `memory://${memory.id}` });
    expect(JSON.parse(String((resource.contents[0] as { text: string }).text))).toMatchObject({ id: memory.id });
    await expect(client.readResource({ uri: 'memory://999999' })).rejects.toThrow(/memory 999999 does not exist/);

    const stats = await call(client, 'stats');
    expect(stats.isError).toBe(true);
    expect(textOf(stats)).toContain('FORBIDDEN');

    const byPattern = await call(client, 'forget', { pattern: 'jasmine*morning' });
    expect(field<Memory[]>(byPattern, 'forgotten').map((each) => each.id)).toEqual([memory.id]);
    const byId = await call(client, 'forget', { id: field<Memory>(room, 'memory').id });
    expect(field<Memory[]>(byId, 'forgotten')[0]?.archivedAt).toBeTruthy();
    const active = field<Memory[]>(await call(client, 'list', {}), 'memories').map((each) => each.id);
    expect(active).not.toContain(memory.id);
    expect(active).not.toContain(field<Memory>(room, 'memory').id);
    const archived = field<Memory[]>(await call(client, 'list', { archived: 'only' }), 'memories');
    expect(archived.map((each) => each.id).sort()).toEqual([memory.id, field<Memory>(room, 'memory').id].sort());
  });

  it('never lets the model name another user, and writes nothing for a refused call', async () => {
    expect(
      (
        await runCli(database, [
          'add',
          'Bob keeps his passport in the blue drawer',
          '--scope',
          'personal',
          '--user',
          'bob',
        ])
      ).code,
    ).toBe(0);
    const bobs = JSON.parse((await runCli(database, ['--json', 'list', '--user', 'bob'])).stdout) as {
      memories: Memory[];
    };
    const bobMemory = bobs.memories[0] as Memory;
    const client = await connect(['--user', 'alice']);

    const named = await call(client, 'remember', { content: 'Bob likes opera', scope: 'personal', userId: 'bob' });
    expect(named.isError).toBe(true);
    expect(textOf(named)).toMatch(/userId/);
    const global = await call(client, 'remember', { content: 'Everyone likes opera', scope: 'global' });
    expect(global.isError).toBe(true);
    expect(textOf(global)).toContain('FORBIDDEN');
    const both = await call(client, 'forget', { id: bobMemory.id, pattern: 'passport' });
    expect(both.isError).toBe(true);

    for (const [tool, args] of [
      ['forget', { id: bobMemory.id }],
      ['update', { id: bobMemory.id, content: 'changed' }],
      ['history', { id: bobMemory.id }],
    ] as const) {
      const result = await call(client, tool, args);
      expect(result.isError, tool).toBe(true);
      expect(textOf(result), tool).toContain('NOT_FOUND');
    }
    expect(textOf(await call(client, 'recall', { query: 'passport blue drawer' }))).not.toContain('passport');
    await expect(client.readResource({ uri: `memory://${bobMemory.id}` })).rejects.toThrow(/does not exist/);

    const after = JSON.parse((await runCli(database, ['--json', 'list', '--archived', 'include'])).stdout) as {
      memories: Memory[];
    };
    expect(after.memories.map((memory) => memory.content)).not.toContain('Bob likes opera');
    expect(after.memories.map((memory) => memory.content)).not.toContain('Everyone likes opera');
    expect(after.memories.find((memory) => memory.id === bobMemory.id)).toMatchObject({
      content: 'Bob keeps his passport in the blue drawer',
      archivedAt: null,
    });
  });

  it('runs as the administrator without a user: stats work, and an exchange asks for the session user', async () => {
    const client = await connect([], { MNEME_CHANNEL: 'desk' });
    const stats = await call(client, 'stats');
    expect(stats.isError).toBeFalsy();
    expect(stats.structuredContent?.byScope).toMatchObject({ personal: expect.any(Number) });
    const exchange = await call(client, 'ingest_exchange', { userMessage: 'hello there', assistantReply: 'hi' });
    expect(exchange.isError).toBe(true);
    expect(textOf(exchange)).toContain("needs the session's user and channel");
    const remembered = await call(client, 'remember', { content: 'The office closes at six' });
    expect(remembered.structuredContent?.memory).toMatchObject({ scope: 'global' });
  });

  it('takes the user from MNEME_USER and refuses a malformed one before it starts', async () => {
    const client = await connect([], { MNEME_USER: 'carol' });
    const remembered = await call(client, 'remember', { content: 'Carol collects stamps' });
    expect(remembered.structuredContent?.memory).toMatchObject({ scope: 'personal', userId: 'carol' });

    const refused = await runCli(database, ['mcp', '--user', ' ']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('userId must not be empty');

    // Set but blank (a host's `"MNEME_USER": "$USER_ID"` with the variable unset): not the administrator's
    // session, which would show the agent every user's memories, but refused as the blank flag is.
    for (const blank of ['', '  ']) {
      const unset = await runCli(database, ['mcp'], { env: { MNEME_EMBEDDER: 'none', MNEME_USER: blank } });
      expect(unset.code, blank).toBe(2);
      expect(unset.stderr, blank).toMatch(/^mneme: .*MNEME_USER is set but blank/);
      expect(unset.stderr.trim().split('\n'), blank).toHaveLength(1);
    }
  });

  it('ignores a malformed line, answers the next message, and exits cleanly when the host closes stdin', async () => {
    const child = spawn(process.execPath, [mnemeBinary, 'mcp', '--db', database, '--user', 'alice'], {
      env: { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(child, 'exit');
    child.stdin.write('this is not JSON\n');
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    child.stdin.write(`${JSON.stringify(initialize)}\n`);
    await expect.poll(() => stdout, { timeout: 20_000 }).toContain('"id":1');
    const answer = JSON.parse(stdout.trim().split('\n')[0] ?? '') as { result: { serverInfo: { name: string } } };
    expect(answer.result.serverInfo.name).toBe('mneme');
    expect(stderr).toContain('ignored a malformed MCP message');
    child.stdin.end();
    const [code] = await exited;
    expect(code).toBe(0);
  });

  it('answers a request with malformed params as invalid params naming the field, and the next call works', async () => {
    const child = spawn(process.execPath, [mnemeBinary, 'mcp', '--db', database, '--user', 'alice'], {
      env: { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = once(child, 'exit');
    const send = (message: Record<string, unknown>) =>
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    send({
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 5, arguments: { content: 'Alice keeps bees' } } });
    send({ id: 3, method: 'tools/call' });
    send({ id: 4, method: 'resources/read', params: { uri: 7 } });
    send({ id: 5, method: 'tools/call', params: { name: 'remember', arguments: { content: 'Alice keeps bees' } } });
    await expect.poll(() => stdout.trim().split('\n').length, { timeout: 20_000 }).toBe(5);
    const answers = new Map(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { id: number; error?: { code: number; message: string }; result?: unknown })
        .map((answer) => [answer.id, answer]),
    );
    expect(answers.get(2)?.error).toEqual({
      code: -32602,
      message: 'invalid tools/call request: params.name: Invalid input: expected string, received number',
    });
    expect(answers.get(3)?.error?.code).toBe(-32602);
    expect(answers.get(3)?.error?.message).toMatch(/^invalid tools\/call request: params: /);
    expect(answers.get(4)?.error?.code).toBe(-32602);
    expect(answers.get(4)?.error?.message).toMatch(/^invalid resources\/read request: params\.uri: /);
    expect(answers.get(5)?.error).toBeUndefined();
    expect(JSON.stringify(answers.get(5)?.result)).toContain('Alice keeps bees');
    child.stdin.end();
    expect((await exited)[0]).toBe(0);
    // The refused call wrote nothing: the one memory is the one remembered after it.
    const listed = await runCli(database, ['--json', 'list', '--user', 'alice', '--limit', '100']);
    const contents = (JSON.parse(listed.stdout) as { memories: Memory[] }).memories.map((memory) => memory.content);
    expect(contents.filter((content) => content === 'Alice keeps bees')).toHaveLength(1);
  });
});
