import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import type { Memory } from '../src/core/types.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { type McpSession, stdioSession } from '../src/mcp/mcp-session.js';

const engines: Mneme[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const engine of engines.splice(0)) await engine.close();
});

async function connect(session: McpSession): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ session }).connect(serverSide);
  const client = new Client({ name: 'attack23', version: '1.0.0' });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

interface ToolResult {
  isError?: boolean;
  content: Array<{ text?: string }>;
  structuredContent?: Record<string, unknown>;
}

describe('forget by pattern over MCP while another request forgets one of the matches', () => {
  it('forgets every match and succeeds, rather than stopping half way with a conflict', async () => {
    const mneme = await createMneme({ path: ':memory:' });
    engines.push(mneme);
    const matches: Memory[] = [];
    for (const place of ['Oslo', 'Bergen', 'Tromso']) {
      matches.push(
        await mneme.remember({ content: `Ann has a dentist in ${place}`, scope: 'personal', userId: 'ann' }),
      );
    }
    const session = stdioSession(mneme, { userId: 'ann' });
    // The moment is chosen, the work is real: right after the tool forgets its first match, another request of ann
    // (her other host, a /forget in a chat) forgets the second one.
    let forgets = 0;
    const forget: Mneme['forget'] = async (input) => {
      const forgotten = await session.mneme.forget(input);
      if (forgets++ === 0) await mneme.forget({ id: (matches[1] as Memory).id, actor: 'another request' });
      return forgotten;
    };
    const engine = new Proxy(session.mneme, {
      get: (target, key) => (key === 'forget' ? forget : Reflect.get(target, key)),
    });
    const client = await connect({ ...session, mneme: engine });

    const result = (await client.callTool({ name: 'forget', arguments: { pattern: 'dentist' } })) as ToolResult;

    // The user asked to forget every dentist memory: each is archived, and the tool says so.
    const active = (await mneme.list({ userId: 'ann' })).memories.map((memory) => memory.content);
    expect(active).toEqual([]);
    expect(result.isError, result.content[0]?.text).toBeFalsy();
  });
});
