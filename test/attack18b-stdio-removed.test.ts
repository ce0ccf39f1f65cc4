import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
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

/** The channel's members and its messages' texts (those of `topicId` when given), read from the file by a fresh engine. */
async function channelState(path: string, channelId: string, topicId?: string) {
  const mneme = await createMneme({ path });
  try {
    const members = (await mneme.channel(channelId)).members;
    const texts = (await mneme.messages({ channelId })).messages
      .filter((message) => topicId === undefined || message.topicId === topicId)
      .map((message) => message.content);
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

/** As an administrator through the library: the topic (in the project when given) with these members. */
async function putTopic(path: string, topic: { id: string; projectId?: string; members: string[] }) {
  const mneme = await createMneme({ path });
  try {
    if (topic.projectId !== undefined) await mneme.createProject({ id: topic.projectId, members: topic.members });
    await mneme.createTopic(topic);
  } finally {
    await mneme.close();
  }
}

/** The members of the topic and its project, and the texts of the topic's messages in desk, read from the file. */
async function topicState(path: string, topicId: string, projectId?: string) {
  const storage = createSqliteStorage({ path });
  try {
    const members = await storage.memberships.members('topic', topicId);
    const projectMembers = projectId === undefined ? [] : await storage.memberships.members('project', projectId);
    const { texts } = await channelState(path, 'desk', topicId);
    return { members, projectMembers, texts };
  } finally {
    await storage.close();
  }
}

// The same session with a topic (`--topic`): its exchanges were recorded by the operator's engine, which makes the
// sender a member of the topic and the topic's project. An administrator who removes the user from the topic (or
// its project), not from the channel, must not see the next exchange add the user back.
describe('wt-upgrade18: a stdio MCP session with a topic whose user an administrator removed from the topic', () => {
  it('refuses the next exchange and leaves the user out of the topic when removed from it during the session', async () => {
    const path = await newDatabase();
    await putTopic(path, { id: 'launch', members: ['alice', 'bob'] });
    const client = await connect(path, ['--user', 'alice', '--channel', 'desk', '--topic', 'launch']);
    expect(textOf(await exchange(client, 'I draft the launch checklist'))).not.toContain('FORBIDDEN');

    await putTopic(path, { id: 'launch', members: ['bob'] });
    const refused = await exchange(client, 'I will keep writing into the launch topic anyway');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('FORBIDDEN');
    const state = await topicState(path, 'launch');
    expect(state.members).toEqual(['bob']);
    expect(state.texts).toContain('I draft the launch checklist');
    expect(state.texts).not.toContain('I will keep writing into the launch topic anyway');
    expect((await channelState(path, 'desk')).members).toEqual(['alice', 'bob']);
  });

  it('refuses an exchange into a topic of a project the user was removed from, and adds the user to neither', async () => {
    const path = await newDatabase();
    await putTopic(path, { id: 'launch', projectId: 'apollo', members: ['alice', 'bob'] });
    const client = await connect(path, ['--user', 'alice', '--channel', 'desk', '--topic', 'launch']);
    const mneme = await createMneme({ path });
    try {
      await mneme.createProject({ id: 'apollo', members: ['bob'] });
    } finally {
      await mneme.close();
    }

    const refused = await exchange(client, 'Let me back into the apollo project');
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('FORBIDDEN');
    const state = await topicState(path, 'launch', 'apollo');
    expect(state.members).toEqual(['alice', 'bob']);
    expect(state.projectMembers).toEqual(['bob']);
    expect(state.texts).toEqual([]);
  });

  it('still starts a topic that does not exist yet with its first exchange, the user its member', async () => {
    const path = await newDatabase();
    const client = await connect(path, ['--user', 'alice', '--channel', 'desk', '--topic', 'retro']);
    expect((await exchange(client, 'I collect the retro notes')).isError).toBeFalsy();
    expect((await exchange(client, 'I also book the retro room')).isError).toBeFalsy();
    const state = await topicState(path, 'retro');
    expect(state.members).toEqual(['alice']);
    expect(state.texts).toContain('I also book the retro room');
  });
});
