import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';

// `mneme mcp --user <id> --channel <id>` runs for as long as its host does. Its exchanges are recorded by the
// operator's engine, which makes the sender a member of the channel (ADR 13). An administrator who removes the
// user from the channel meanwhile must not see the removal undone by the session's next exchange.

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18b-stdio-'));
const clients: Client[] = [];
let database = 0;

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
}

async function connect(path: string, flags: string[]): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [mnemeBinary, 'mcp', '--db', path, ...flags],
    env: { PATH: process.env.PATH ?? '', MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'mneme-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function exchange(client: Client, userMessage: string): Promise<ToolResult> {
  return (await client.callTool({
    name: 'ingest_exchange',
    arguments: { userMessage, assistantReply: 'Noted.' },
  })) as ToolResult;
}

const textOf = (result: ToolResult) => result.content.map((part) => part.text ?? '').join('\n');

/** The channel's members and its messages' texts, read from the file by a fresh engine. */
async function channelState(path: string, channelId: string) {
  const mneme = await createMneme({ path });
  try {
    const members = (await mneme.channel(channelId)).members;
    const texts = (await mneme.messages({ channelId })).messages.map((message) => message.content);
    return { members, texts };
  } finally {
    await mneme.close();
  }
}

async function newDatabase(): Promise<string> {
  database += 1;
  const path = join(folder, `stdio-${database}.db`);
  expect((await runCli(path, ['channels', 'put', 'desk', '--members', 'alice,bob'])).code).toBe(0);
  return path;
}

describe('attack18b: a stdio MCP session whose user an administrator removed', () => {
  it('does not make a user removed from the channel during the session a member again with its next exchange', async () => {
    const path = await newDatabase();
    const client = await connect(path, ['--user', 'alice', '--channel', 'desk']);
    expect(textOf(await exchange(client, 'I keep the team calendar up to date'))).not.toContain('FORBIDDEN');

    expect((await runCli(path, ['channels', 'put', 'desk', '--members', 'bob'])).code).toBe(0);

    const refused = await exchange(client, 'I will keep reading the desk channel anyway');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('FORBIDDEN');
    const recall = (await client.callTool({ name: 'recall', arguments: { query: 'team calendar' } })) as ToolResult;
    expect(recall.isError).toBe(true);
    const state = await channelState(path, 'desk');
    expect(state.members).toEqual(['bob']);
    expect(state.texts).not.toContain('I will keep reading the desk channel anyway');
  });

  it('does not make a user removed before the session first spoke a member again', async () => {
    const path = await newDatabase();
    const client = await connect(path, ['--user', 'alice', '--channel', 'desk']);
    expect((await runCli(path, ['channels', 'put', 'desk', '--members', 'bob'])).code).toBe(0);

    const refused = await exchange(client, 'Let me back into the desk channel');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('FORBIDDEN');
    expect((await channelState(path, 'desk')).members).toEqual(['bob']);
  });

  it('still starts a channel that does not exist yet with its first exchange, the user its member', async () => {
    const path = await newDatabase();
    const client = await connect(path, ['--user', 'alice', '--channel', 'alice-notes']);
    expect((await exchange(client, 'I water the office plants on Fridays')).isError).toBeFalsy();
    expect((await exchange(client, 'I also feed the office fish')).isError).toBeFalsy();
    const state = await channelState(path, 'alice-notes');
    expect(state.members).toEqual(['alice']);
    expect(state.texts).toContain('I also feed the office fish');
  });
});
