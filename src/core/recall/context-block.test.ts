import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { createSqliteStorage } from '../../storage/sqlite/sqlite-storage.js';
import { createFixedClock } from '../../testing.js';
import type { Mneme } from '../mneme.js';
import type { PolicyOptions } from '../policy.js';
import { DATA_NOTICE } from './context-format.js';

const engines: Mneme[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
});

async function open(policy?: PolicyOptions) {
  const mneme = await createMneme({
    path: ':memory:',
    embedder: createFakeEmbeddingModel(),
    clock: createFixedClock('2024-06-15T12:00:00.000Z'),
    ...(policy ? { policy } : {}),
  });
  engines.push(mneme);
  return mneme;
}

describe('context', () => {
  it("returns mneme's own block of the best 5 memories by default, each with its date and category", async () => {
    const mneme = await open();
    for (let index = 0; index < 8; index++) await mneme.remember({ content: `kestrel fact number ${index}` });
    const result = await mneme.context({ query: 'kestrel' });
    expect(result.hits).toHaveLength(5);
    expect(result.vectorLeg).toBe('used');
    const lines = result.text.split('\n');
    expect(lines.slice(0, 2)).toEqual(['[Relevant Memories]', DATA_NOTICE]);
    expect(lines[2]).toMatch(/^- 2024-06-15 \[general\]: "kestrel fact number \d"$/);
    expect(lines[3]).toBe('  (match: hybrid, importance: 3)');
    expect(lines).toHaveLength(2 + 5 * 2);
  });

  it('leaves out of the block a memory that shares only a common name with the question', async () => {
    const mneme = await open();
    for (const content of [
      'Oz has four RTX 3090 cards in the GPU server',
      'Oz lives in Bergen',
      'Oz plays chess on Sundays',
      'Oz works on the search team',
      'Oz prefers Helix as his editor',
    ]) {
      await mneme.remember({ content });
    }
    const question = { query: 'which editor does Oz like', inspect: true };
    const recalled = await mneme.recall({ ...question, explain: true });
    const weak = recalled.hits.find((hit) => hit.memory.content.startsWith('Oz has four'));
    expect(weak?.calibratedRelevance).toBeLessThan(0.1);
    expect(weak?.explanation).toMatch(/calibrated 0\.0\d/);

    const block = await mneme.context(question);
    expect(block.hits.map((hit) => hit.memory.content)).toContain('Oz prefers Helix as his editor');
    expect(block.text).not.toContain('RTX 3090');
    expect(block.belowThreshold).toBeGreaterThan(0);

    const everything = await (await open({ context: { minRelevance: 0 } })).context(question);
    expect(everything.belowThreshold).toBe(0);
  });

  it('keeps a memory that matches the known words of the question when another word is in no memory', async () => {
    // The README's first session: "drink" is in no memory, "morning" in both; lexical only.
    const mneme = await createMneme({ path: ':memory:', clock: createFixedClock('2024-06-15T12:00:00.000Z') });
    engines.push(mneme);
    await mneme.ingestExchange({
      channelId: 'dm-oz',
      userId: 'oz',
      userMessage: 'I prefer green tea in the morning, never coffee',
      assistantReply: 'Noted!',
    });
    await mneme.whenIdle();
    const block = await mneme.context({ query: 'morning drink', viewer: { userId: 'oz' } });
    expect(block.text).toContain('Oz prefers green tea in the morning, never coffee.');
    expect(block.belowThreshold).toBe(0);
  });

  it('uses the configured format', async () => {
    const mneme = await open({ context: { format: 'memory-context' } });
    await mneme.remember({ content: 'launch was on Monday', category: 'event' });
    expect((await mneme.context({ query: 'launch' })).text).toBe(
      `[Memory context]\n${DATA_NOTICE}\n- "launch was on Monday" (episodic)`,
    );
  });

  it('touches only the memories that fit the word budget', async () => {
    const mneme = await open({ context: { wordBudget: 40 } });
    const long = await mneme.remember({
      content: `kestrel ${Array.from({ length: 50 }, (_, index) => `detail${index}`).join(' ')}`,
      importance: 1,
    });
    const short = await mneme.remember({ content: 'kestrel is the staging server', importance: 0.2 });
    const result = await mneme.context({ query: 'kestrel' });
    expect(result.hits.map((hit) => hit.memory.id)).toEqual([short.id]);
    expect(result.omitted).toBe(1);
    expect(result.words).toBeLessThanOrEqual(40);
    expect((await mneme.get(short.id)).accessCount).toBe(1);
    expect((await mneme.get(long.id)).accessCount).toBe(0);
  });

  it('returns an empty text and touches nothing when no memory matches', async () => {
    const mneme = await open();
    const memory = await mneme.remember({ content: 'kestrel is the staging server' });
    const result = await mneme.context({ query: 'zucchini marmalade' });
    expect(result).toMatchObject({ text: '', hits: [], omitted: 0, words: 0 });
    expect((await mneme.get(memory.id)).accessCount).toBe(0);
  });

  it("reads the channel's recent user messages by default", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-context-'));
    const path = join(folder, 'context.db');
    const mneme = await createMneme({ path, clock: createFixedClock() });
    const storage = createSqliteStorage({ path });
    try {
      await mneme.remember({ content: 'the kestrel launch checklist lives in the wiki' });
      await storage.messages.append([
        {
          channelId: 'general',
          senderId: 'ann',
          role: 'user',
          content: 'the kestrel launch',
          topicId: null,
          createdAt: 0,
        },
      ]);
      const viewer = { channelId: 'general' };
      expect((await mneme.context({ query: 'where is it?', viewer })).hits).toHaveLength(1);
      expect((await mneme.context({ query: 'where is it?', viewer, conversationAware: false })).hits).toHaveLength(0);
    } finally {
      await storage.close();
      await mneme.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses a topK above 100 like recall does', async () => {
    const mneme = await open();
    await expect(mneme.context({ query: 'x', topK: 500 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(/topK must be at most 100/),
    });
  });
});
