import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { type RunningHttpServer, startHttpServer } from '../src/http/http-server.js';

/**
 * An attack (helper 151, 2026-12-05) on `/mcp` of a real `mneme serve` with two users' keys and the real MCP client:
 * alice names bob's channel, topic, project and memory ids in every way the headers and tools let her. It found
 * nothing; this keeps it so.
 */

let mneme: Mneme;
let server: RunningHttpServer;
const keys = { alice: '', bob: '' };
const ids: Record<'personal' | 'room' | 'project' | 'session', number> = {
  personal: 0,
  room: 0,
  project: 0,
  session: 0,
};
const CANARY = /zanzibar/i;
const clients: Client[] = [];

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

async function connect(key: string, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } },
  });
  const client = new Client({ name: 'attack29a', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** A tool call's result, or the request's failure as a result of its own (a refusal before the tool ran). */
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  try {
    return (await client.callTool({ name, arguments: args })) as ToolResult;
  } catch (error) {
    return { isError: true, content: [{ type: 'text', text: String(error) }] };
  }
}

beforeAll(async () => {
  mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
  keys.alice = (await mneme.apiKeys.create({ label: 'alice laptop', userId: 'alice' })).key;
  keys.bob = (await mneme.apiKeys.create({ label: 'bob phone', userId: 'bob' })).key;
  await mneme.apiKeys.create({ label: 'operator' });
  await mneme.putChannel({ id: 'dm-bob', visibility: 'private', members: ['bob'] });
  await mneme.putChannel({ id: 'team', visibility: 'private', members: ['alice', 'bob'] });
  await mneme.createProject({ id: 'bob-project', members: ['bob'] });
  await mneme.createTopic({ id: 'bob-topic', projectId: 'bob-project', members: ['bob'] });
  const remember = (input: Record<string, unknown>) => mneme.remember({ userId: 'bob', ...input } as never);
  ids.personal = (await remember({ content: 'Bob hid the Zanzibar passport in the attic', scope: 'personal' })).id;
  ids.room = (await remember({ content: 'The Zanzibar safe code is 1234', scope: 'room', channelId: 'dm-bob' })).id;
  ids.project = (
    await remember({ content: 'Zanzibar launch slips to May', scope: 'project', projectId: 'bob-project' })
  ).id;
  server = await startHttpServer({ mneme, port: 0, logError: () => {} });
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  await server.close();
  await mneme.close();
});

describe('alice over MCP with her key, against what only bob may see', () => {
  it('is refused every read through headers naming bob or his channel, topic or project, and sees no canary', async () => {
    const viewers = [
      { 'Mneme-User': 'bob' },
      { 'Mneme-Channel': 'dm-bob' },
      { 'Mneme-Project': 'bob-project' },
      { 'Mneme-Topic': 'bob-topic' },
      { 'Mneme-Channel': 'team', 'Mneme-Topic': 'bob-topic' },
    ];
    for (const headers of viewers) {
      let client: Client;
      try {
        client = await connect(keys.alice, headers);
      } catch (error) {
        expect(String(error)).toMatch(/403|FORBIDDEN/);
        continue;
      }
      for (const [name, args] of [
        ['recall', { query: 'passport attic safe code' }],
        ['context', { query: 'passport attic safe code' }],
        ['list', {}],
        ['list', { archived: 'include', limit: 500 }],
        ['history', { id: ids.room }],
        ['forget', { pattern: 'passport' }],
      ] as const) {
        const result = await call(client, name, args);
        expect(JSON.stringify(result), `${name} with ${JSON.stringify(headers)}`).not.toMatch(CANARY);
        expect(result.isError, `${name} with ${JSON.stringify(headers)}`).toBe(true);
      }
      const resources = await client.listResources().then(
        (listed) => JSON.stringify(listed),
        (error: unknown) => String(error),
      );
      expect(resources).not.toMatch(CANARY);
    }
  });

  it('finds none of bob memories by id through tools or resources with her own viewer, and changes none', async () => {
    const client = await connect(keys.alice, { 'Mneme-Channel': 'team' });
    for (const id of Object.values(ids).filter((id) => id > 0)) {
      for (const [name, args] of [
        ['history', { id }],
        ['forget', { id }],
        ['update', { id, content: 'alice was here' }],
        ['update', { id, pinned: true }],
      ] as const) {
        const result = await call(client, name, args);
        expect(result.isError, `${name} ${id}`).toBe(true);
        expect(JSON.stringify(result)).not.toMatch(CANARY);
      }
      const read = await client.readResource({ uri: `memory://${id}` }).then(
        (found) => JSON.stringify(found),
        (error: unknown) => String(error),
      );
      expect(read).not.toMatch(CANARY);
    }
    const found = await call(client, 'recall', { query: 'passport attic safe code launch May' });
    expect(JSON.stringify(found)).not.toMatch(CANARY);
    for (const id of Object.values(ids).filter((id) => id > 0)) {
      const memory = await mneme.get({ id });
      expect(memory.archivedAt).toBeNull();
      expect(memory.content).toMatch(CANARY);
      expect(memory.pinned).toBe(false);
    }
  });

  it('writes nothing into bob spaces: no room, project or exchange there, and no global memory', async () => {
    const writes: Array<[Record<string, string>, string, Record<string, unknown>]> = [
      [{ 'Mneme-Channel': 'dm-bob' }, 'remember', { content: 'alice note in bob room', scope: 'room' }],
      [{ 'Mneme-Project': 'bob-project' }, 'remember', { content: 'alice note in bob project', scope: 'project' }],
      [{}, 'remember', { content: 'alice note for everyone', scope: 'global' }],
      [{ 'Mneme-Channel': 'team' }, 'ingest_exchange', { userMessage: 'hi', assistantReply: 'hello' }],
      [{ 'Mneme-Channel': 'dm-bob' }, 'ingest_exchange', { userMessage: 'hi', assistantReply: 'hello' }],
      [{ 'Mneme-Channel': 'team' }, 'stats', {}],
    ];
    for (const [headers, name, args] of writes) {
      const client = await connect(keys.alice, headers);
      const result = await call(client, name, args);
      expect(result.isError, `${name} with ${JSON.stringify(headers)}`).toBe(true);
    }
    const all = await mneme.list({ limit: 500, archived: 'include' });
    expect(all.memories.filter((memory) => /alice/.test(memory.content))).toEqual([]);
    expect((await mneme.messages({ channelId: 'team' })).messages).toEqual([]);
    expect((await mneme.messages({ channelId: 'dm-bob' })).messages).toEqual([]);
  });
});
