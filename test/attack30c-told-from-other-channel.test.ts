import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatFactExtractor } from '../src/models/chat/chat-fact-extractor.js';
import { createOpenAiCompatibleChatModel } from '../src/models/openai-compatible/openai-compatible-chat-model.js';
import { type LoopbackServer, startFactModel } from './loopback-server.js';
import {
  closeEngineStores,
  type EngineStore,
  engineStores,
  openMaintenanceEngine,
  prepareEngineStore,
} from './maintenance-engine.js';

/**
 * Wt-c (attack 30), membership over time and what a chat extractor is shown. A topic spans two channels; conversation
 * extraction shows the model the topic's related memories, those of the other channel too, and the model folds what it
 * is shown into the fact of the message it answers ("Yes, that code still works" with "The vault code is 4412"
 * remembered becomes "The vault code 4412 still works"), which cites that message only. Carl, who reads the hall but
 * not the vault, then joins the topic: the vault's session memory moves into the vault's room (ADR 5), and the fact
 * told from it stays in the topic, where Carl reads the vault code. Likewise a global fact of a public lobby, told into
 * a fact of a private room, stayed in the room once the lobby was made private.
 */
let server: LoopbackServer;
beforeAll(async () => {
  for (const store of engineStores) await prepareEngineStore(store);
  // Answers each message with one fact: the message, with every remembered line that names a code folded in.
  server = await startFactModel((text) => {
    const said = /still works/.test(text)
      ? 'The code still works'
      : /vault code is 4412/.test(text)
        ? 'The vault code is 4412'
        : '';
    const remembered = [...text.matchAll(/^- (.*4412.*)$/gm)].map((line) => line[1] ?? '');
    const content = [said, ...remembered].filter((part) => part.length > 0).join('; ');
    const scope = /^Channel: lobby$/m.test(text) ? 'global' : 'room';
    return content ? [{ content, category: 'fact', scope }] : [];
  });
}, 120_000);
afterAll(async () => {
  await server.close();
  await closeEngineStores();
});

async function open(store: EngineStore) {
  const chat = createOpenAiCompatibleChatModel({ baseUrl: `${server.url}/v1`, model: 'house-model' });
  const { mneme } = await openMaintenanceEngine({
    store,
    extractor: createChatFactExtractor(chat, { logger: { warn() {} } }),
    policy: { ingest: { exchangeMemories: false, conversation: { enabled: false } } },
  });
  return mneme;
}

const codeIn = (contents: string[]) => contents.filter((content) => content.includes('4412'));

describe.each(engineStores)('a fact a chat model told from a memory of another channel, on %s', (store) => {
  it('is kept from a member who joins the topic and cannot read the channel it was told from', async () => {
    const mneme = await open(store);
    await mneme.putChannel({ id: 'hall', members: ['ann', 'bob', 'carl'] });
    await mneme.putChannel({ id: 'vault', members: ['ann', 'bob'] });
    await mneme.createTopic({ id: 'heist', members: ['ann', 'bob'] });
    await mneme.ingest({ channelId: 'vault', sender: 'ann', topicId: 'heist', content: 'The vault code is 4412' });
    await mneme.whenIdle();
    await mneme.extract('heist');
    await mneme.ingest({ channelId: 'hall', sender: 'bob', topicId: 'heist', content: 'Yes, that code still works' });
    await mneme.whenIdle();
    await mneme.extract('heist');
    const told = (await mneme.list({ scope: 'session', limit: 100 })).memories;
    expect(codeIn(told.map((memory) => memory.content)).length).toBeGreaterThan(0);

    await mneme.createTopic({ id: 'heist', members: ['ann', 'bob', 'carl'] });
    const carl = mneme.as({ kind: 'user', userId: 'carl', label: 'carl' });
    const viewer = { channelId: 'hall', topicId: 'heist' };
    const { hits } = await carl.recall({ query: 'vault code works', viewer });
    expect(codeIn(hits.map((hit) => hit.memory.content))).toEqual([]);
    const listed = await carl.list({ viewer, limit: 100 });
    expect(codeIn(listed.memories.map((memory) => memory.content))).toEqual([]);
    await mneme.close();
  });

  it('is kept from the members of a room once the public channel it was told from is made private', async () => {
    const mneme = await open(store);
    await mneme.putChannel({ id: 'lobby', visibility: 'public', members: ['bob'] });
    await mneme.putChannel({ id: 'team', members: ['ann', 'carl'] });
    await mneme.ingest({ channelId: 'lobby', sender: 'bob', content: 'The vault code is 4412' });
    await mneme.ingest({ channelId: 'team', sender: 'ann', content: 'Yes, that code still works' });
    await mneme.whenIdle();
    const all = (await mneme.list({ limit: 100 })).memories.map((memory) => `${memory.scope} ${memory.content}`);
    expect(codeIn(all)).toContain('global The vault code is 4412');

    await mneme.putChannel({ id: 'lobby', visibility: 'private' });
    const carl = mneme.as({ kind: 'user', userId: 'carl', label: 'carl' });
    const { hits } = await carl.recall({ query: 'vault code works', viewer: { channelId: 'team' } });
    expect(codeIn(hits.map((hit) => hit.memory.content))).toEqual([]);
    await mneme.close();
  });
});
