import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

let mneme: Mneme;
let server: RunningHttpServer;
let annKey = '';
const unexpected: unknown[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:' });
  await mneme.apiKeys.create({ label: 'operator' });
  annKey = (await mneme.apiKeys.create({ label: 'ann laptop', userId: 'ann' })).key;
  await mneme.putChannel({ id: 'board', visibility: 'private', members: ['bob'] });
  await mneme.remember({ content: 'The board meets on Friday', scope: 'room', channelId: 'board' });
  server = await startHttpServer({ mneme, port: 0, logError: (error) => unexpected.push(error) });
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  await server.close();
  await mneme.close();
});

async function connect(headers: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${annKey}`, ...headers } },
  });
  const client = new Client({ name: 'attack23', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

describe('the memory resources of a session whose viewer names a space the key may not read', () => {
  it('lists resources with the refusal as a request error carrying FORBIDDEN, as reading one does, not an internal error', async () => {
    const client = await connect({ 'Mneme-Channel': 'board' });

    const read = await client.readResource({ uri: 'memory://1' }).catch((error: unknown) => error);
    expect(read).toBeInstanceOf(McpError);
    expect((read as McpError).data).toEqual({ code: 'FORBIDDEN' });

    const listed = await client.listResources().catch((error: unknown) => error);
    expect(listed).toBeInstanceOf(McpError);
    // -32603 is JSON-RPC's internal error, a server fault; a refusal of the caller's own headers is not one.
    expect((listed as McpError).code).not.toBe(-32603);
    expect((listed as McpError).message).toContain('user ann is not a member of channel board');
    expect((listed as McpError).data).toEqual({ code: 'FORBIDDEN' });
    expect(unexpected).toEqual([]);
  });
});
