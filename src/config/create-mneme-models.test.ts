import { afterEach, describe, expect, it } from 'vitest';
import { unusedLoopbackUrl } from '../../test/loopback-server.js';
import { type FakeProviderServer, startFakeProviderServer } from '../models/fake/fake-provider-server.fixture.js';
import { createFixedClock } from '../testing.js';
import { createMneme } from './create-mneme.js';

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const clock = createFixedClock();

/** Fact extraction that says "the user", inside a fenced JSON block as small models write it. */
const extractedFacts =
  '```json\n{"facts": [{"content": "The user moved to Lyon last month", "category": "event"}]}\n```';

describe('createMneme with model providers', () => {
  it('embeds documents and queries through Ollama with their prefixes and extracts facts with the chat model', async () => {
    server = await startFakeProviderServer({ chatReply: extractedFacts });
    const mneme = await createMneme({
      path: ':memory:',
      clock,
      embedder: 'ollama',
      chat: 'ollama',
      providers: { ollamaUrl: server.url },
    });
    await mneme.remember({ content: 'The staging server is called kestrel' });
    const result = await mneme.recall({ query: 'staging server name' });
    expect(result.vectorLeg).toBe('used');
    expect(result.hits[0]).toMatchObject({ match: 'hybrid', memory: { embeddingModel: 'ollama:nomic-embed-text' } });
    const inputs = server.requests
      .filter((request) => request.path === '/api/embed')
      .map((request) => (request.body as { input: string[] }).input);
    expect(inputs.slice(0, 2)).toEqual([
      ['search_document: The staging server is called kestrel'],
      ['search_query: staging server name'],
    ]);

    await mneme.ingest({
      channelId: 'general',
      sender: 'oz',
      senderName: 'Oz',
      content: 'I moved to Lyon last month, finally!',
    });
    await mneme.whenIdle();
    const chat = server.requests.find((request) => request.path === '/api/chat');
    expect(chat?.body).toMatchObject({
      model: 'llama3.2',
      stream: false,
      options: { temperature: 0 },
      format: { type: 'object', required: ['facts'] },
    });
    const contents = (await mneme.list()).memories.map((memory) => memory.content);
    expect(contents).toContain('Oz moved to Lyon last month');
    await mneme.close();
  });

  it('stays lexical and makes no call when auto finds no model', async () => {
    const nowhere = await unusedLoopbackUrl();
    const notices: string[] = [];
    const mneme = await createMneme({
      path: ':memory:',
      clock,
      embedder: 'auto',
      providers: { ollamaUrl: nowhere },
      logger: { warn: () => {}, info: (text) => notices.push(text) },
    });
    expect((await mneme.vectorStatus()).embedder).toBeNull();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^auto: no embedding model found \(Ollama is not reachable at .*\): lexical search only$/,
    );
    await mneme.remember({ content: 'Oz keeps bees' });
    expect((await mneme.recall({ query: 'bees' })).vectorLeg).toBe('no-model');
    await mneme.close();
  });
});
