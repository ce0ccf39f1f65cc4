import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { type McpSession, stdioSession } from '../src/mcp/mcp-session.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23-stdio-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const engines: Mneme[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const engine of engines.splice(0)) await engine.close();
});

interface ToolResult {
  isError?: boolean;
  content: Array<{ text?: string }>;
}

/** A real MCP client linked in memory to the stdio face of `session` (what `mneme mcp --user ... --channel ...` serves). */
async function connect(session: McpSession): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ session }).connect(serverSide);
  const client = new Client({ name: 'attack23', version: '1.0.0' });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

/** Two `mneme mcp` processes on one database file (or, `pglite`, one PostgreSQL folder): each its own engine. */
async function twoProcesses(name: string, store: 'sqlite' | 'pglite' = 'sqlite'): Promise<[Mneme, Mneme]> {
  const path = store === 'sqlite' ? join(folder, `${name}.db`) : `pglite:${join(folder, name)}`;
  const first = await createMneme({ path });
  const second = await createMneme({ path });
  engines.push(first, second);
  return [first, second];
}

const exchange = (client: Client, userMessage: string) =>
  client.callTool({
    name: 'ingest_exchange',
    arguments: { userMessage, assistantReply: 'Noted.' },
  }) as Promise<ToolResult>;

describe('two stdio sessions of different users whose first exchanges start the same channel at once', () => {
  it('refuses one of them, as when they come one after the other, so the second user never reads the first one channel', async () => {
    const [annProcess, bobProcess] = await twoProcesses('sequential');
    const ann = await connect(stdioSession(annProcess, { userId: 'ann', channelId: 'desk' }));
    const bob = await connect(stdioSession(bobProcess, { userId: 'bob', channelId: 'desk' }));
    // One after the other: the channel exists once ann started it, and bob is no member of it.
    expect((await exchange(ann, 'My bank PIN is 9931 and I always forget it')).isError).toBeFalsy();
    const refused = await exchange(bob, 'I like pizza on Fridays with my friends');
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/^FORBIDDEN: .*user bob is not a member of channel desk/);

    // At once: both see no channel yet, both append, and both are made members.
    const [annAtOnce, bobAtOnce] = await twoProcesses('concurrent');
    const annClient = await connect(stdioSession(annAtOnce, { userId: 'ann', channelId: 'desk' }));
    const bobClient = await connect(stdioSession(bobAtOnce, { userId: 'bob', channelId: 'desk' }));
    const results = await Promise.all([
      exchange(annClient, 'My bank PIN is 9931 and I always forget it'),
      exchange(bobClient, 'I like pizza on Fridays with my friends'),
    ]);
    await annAtOnce.whenIdle();
    await bobAtOnce.whenIdle();
    const members = (await annAtOnce.channel('desk')).members;
    expect(results.filter((result) => result.isError === true)).toHaveLength(1);
    expect(members).toHaveLength(1);
    const [member] = members;
    const other = member === 'ann' ? bobClient : annClient;
    const otherWords = member === 'ann' ? 'pizza' : 'PIN';
    const recall = (await other.callTool({ name: 'recall', arguments: { query: otherWords } })) as ToolResult;
    expect(recall.content[0]?.text ?? '').not.toContain(member === 'ann' ? '9931' : 'pizza');
  });

  it('refuses one of them on PostgreSQL too, in the append transaction', async () => {
    const [annProcess, bobProcess] = await twoProcesses('postgres', 'pglite');
    const ann = await connect(stdioSession(annProcess, { userId: 'ann', channelId: 'desk', topicId: 'standup' }));
    const bob = await connect(stdioSession(bobProcess, { userId: 'bob', channelId: 'desk', topicId: 'standup' }));
    const results = await Promise.all([
      exchange(ann, 'My bank PIN is 9931 and I always forget it'),
      exchange(bob, 'I like pizza on Fridays with my friends'),
    ]);
    expect(results.filter((result) => result.isError === true)).toHaveLength(1);
    expect((await annProcess.channel('desk')).members).toHaveLength(1);
    // The refused exchange wrote nothing, its topic membership included.
    expect((await annProcess.messages({ channelId: 'desk' })).messages).toHaveLength(2);
  });
});
