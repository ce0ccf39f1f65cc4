import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../config/create-mneme.js';
import type { Mneme } from '../core/mneme.js';
import type { Memory, Viewer } from '../core/types.js';
import { createMcpServer } from './mcp-server.js';
import { httpSession, type McpSession, stdioSession } from './mcp-session.js';

const engines: Mneme[] = [];
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const engine of engines.splice(0)) await engine.close();
});

async function engine(): Promise<Mneme> {
  const mneme = await createMneme({ path: ':memory:' });
  engines.push(mneme);
  return mneme;
}

/** A real client linked in memory to the MCP face of `session`. */
async function connect(session: McpSession): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ session }).connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

interface ToolResult {
  isError?: boolean;
  content: Array<{ text?: string }>;
  structuredContent?: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

const text = (result: ToolResult) => result.content.map((part) => part.text ?? '').join('\n');

describe('the MCP face', () => {
  it('lets an administrator key act for the viewer its headers name, exchanges included', async () => {
    const mneme = await engine();
    const viewer: Viewer = { userId: 'bob', channelId: 'kitchen' };
    const client = await connect(httpSession(mneme, { kind: 'admin', label: 'operator' }, viewer));

    const exchange = await call(client, 'ingest_exchange', {
      userMessage: 'I keep the bread knife in the left drawer',
      assistantReply: 'Good to know.',
    });
    expect(exchange.isError).toBeFalsy();
    await mneme.whenIdle();
    const hits = (await call(client, 'recall', { query: 'bread knife drawer' })).structuredContent?.hits as Array<{
      memory: Memory;
    }>;
    expect(hits.map((hit) => hit.memory.channelId)).toContain('kitchen');
    const remembered = await call(client, 'remember', { content: 'Bob bakes on Saturdays' });
    const memory = remembered.structuredContent?.memory as Memory;
    expect(memory).toMatchObject({ scope: 'personal', userId: 'bob' });
    const versions = (await call(client, 'history', { id: memory.id })).structuredContent?.versions as Array<{
      actor: string;
    }>;
    expect(versions[0]?.actor).toBe('operator');
  });

  it('records an exchange sent again with its externalId once, as a host retrying after a timeout sends it', async () => {
    const mneme = await engine();
    const client = await connect(
      httpSession(mneme, { kind: 'admin', label: 'operator' }, { userId: 'bob', channelId: 'desk' }),
    );
    const exchange = { userMessage: 'My locker code is 4411', assistantReply: 'Noted.', externalId: 'host-msg-7' };

    const first = await call(client, 'ingest_exchange', exchange);
    const again = await call(client, 'ingest_exchange', exchange);
    expect(first.isError).toBeFalsy();
    expect(again.isError).toBeFalsy();
    const messages = (result: ToolResult) =>
      result.structuredContent?.messages as Array<{ id: number; duplicate?: boolean }>;
    expect(messages(again).map((message) => message.id)).toEqual(messages(first).map((message) => message.id));
    expect(messages(again).every((message) => message.duplicate === true)).toBe(true);
    expect(await mneme.turns({ channelId: 'desk' })).toHaveLength(2);
  });

  it('forgets every match of a pattern when memories are forgotten or stored elsewhere while it lists them', async () => {
    const mneme = await engine();
    const lemon = await mneme.remember({ content: 'Ann likes her tea with lemon', scope: 'personal', userId: 'ann' });
    const others: Memory[] = [];
    for (let i = 0; i < 500; i++) {
      others.push(await mneme.remember({ content: `Ann filed receipt ${i}`, scope: 'personal', userId: 'ann' }));
    }
    const session = stdioSession(mneme, { userId: 'ann' });
    // The listing pages newest first: the lemon memory, the oldest, is the only one on the second page. Another
    // process forgets one memory of the first page right after it is read (which moved the lemon onto it when the
    // listing left archived memories out) and stores a new lemon memory (a listing whose total changed is read again).
    let pages = 0;
    let tree: Memory | undefined;
    const list: Mneme['list'] = async (filter) => {
      const page = await session.mneme.list(filter);
      if (pages++ === 0) {
        await mneme.forget({ id: (others[0] as Memory).id });
        tree = await mneme.remember({ content: 'Ann planted a lemon tree', scope: 'personal', userId: 'ann' });
      }
      return page;
    };
    const watched = new Proxy(session.mneme, {
      get: (target, key) => (key === 'list' ? list : Reflect.get(target, key)),
    });
    const client = await connect({ ...session, mneme: watched });

    const result = await call(client, 'forget', { pattern: 'lemon' });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent?.forgotten as Memory[] | undefined)?.map((memory) => memory.id)).toEqual([
      tree?.id,
      lemon.id,
    ]);
    expect((await mneme.get(lemon.id)).archivedAt).not.toBeNull();
    expect((await mneme.list({ userId: 'ann' })).total).toBe(499);
    expect(pages).toBe(4);
  });

  it('says which session setting a scope or a pattern needs, and writes nothing', async () => {
    const mneme = await engine();
    const client = await connect(stdioSession(mneme, {}));

    const room = await call(client, 'remember', { content: 'The kitchen is repainted', scope: 'room' });
    expect(room.isError).toBe(true);
    expect(text(room)).toContain("INVALID_INPUT: a room memory needs the session's channel");
    expect(room.structuredContent?.error).toMatchObject({ code: 'INVALID_INPUT' });
    const pattern = await call(client, 'forget', { pattern: 'kitchen' });
    expect(text(pattern)).toContain('this session has no user');
    const nothing = await call(client, 'update', { id: 1 });
    expect(nothing.isError).toBe(true);
    expect(text(nothing)).toContain('nothing to update');
    expect((await mneme.list()).total).toBe(0);
  });

  it('lists the newest memories the session may see as memory resources', async () => {
    const mneme = await engine();
    await mneme.remember({ content: 'Dana likes chess', scope: 'personal', userId: 'dana' });
    await mneme.remember({ content: 'Eli likes go', scope: 'personal', userId: 'eli' });
    const client = await connect(stdioSession(mneme, { userId: 'dana' }));
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.description)).toEqual(['Dana likes chess']);
    const read = await client.readResource({ uri: resources[0]?.uri ?? '' });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ content: 'Dana likes chess' });
    await expect(client.readResource({ uri: 'memory://abc' })).rejects.toThrow(/id must be a positive integer/);
  });
});
