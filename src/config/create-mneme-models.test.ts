import { afterEach, describe, expect, it } from 'vitest';
import { type LoopbackServer, startLoopbackServer, unusedLoopbackUrl } from '../../test/loopback-server.js';
import { createFixedClock } from '../testing.js';
import { createMneme } from './create-mneme.js';

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const clock = createFixedClock();

/** Ollama on loopback: one-hot-ish vectors by word, and fact extraction that says "the user". */
function ollama() {
  return startLoopbackServer((request) => {
    if (request.path === '/api/tags') return { json: { models: [{ name: 'nomic-embed-text:latest' }] } };
    if (request.path === '/api/embed') {
      const { input } = request.body as { input: string[] };
      return { json: { embeddings: input.map(vectorOf) } };
    }
    if (request.path === '/api/chat') {
      return {
        json: {
          message: {
            role: 'assistant',
            content: '```json\n{"facts": [{"content": "The user moved to Lyon last month", "category": "event"}]}\n```',
          },
        },
      };
    }
    return { status: 404, json: { error: 'not found' } };
  });
}

function vectorOf(text: string): number[] {
  const vector = Array.from({ length: 768 }, () => 0);
  for (const word of text
    .toLowerCase()
    .replace(/^search_(document|query): /, '')
    .match(/[a-z]+/g) ?? []) {
    let hash = 0;
    for (const character of word) hash = (hash * 31 + character.charCodeAt(0)) % 768;
    vector[hash] = (vector[hash] ?? 0) + 1;
  }
  return vector;
}

describe('createMneme with model providers', () => {
  it('embeds documents and queries through Ollama with their prefixes and extracts facts with the chat model', async () => {
    server = await ollama();
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
