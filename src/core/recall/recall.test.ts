import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createMneme } from '../../config/create-mneme.js';
import type { EmbeddingModel } from '../../models/embedding-model.js';
import { createFakeEmbeddingModel } from '../../models/fake/fake-embedding-model.js';
import { createOfflineEpisodeSummariser } from '../../models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../../models/offline/offline-memory-merger.js';
import { createSqliteStorage } from '../../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../../storage/storage.js';
import { createFixedClock } from '../../testing.js';
import { createEngine } from '../create-engine.js';
import { decayPolicyNames } from '../decay/decay.js';
import { DAY_MS } from '../decay/decay-policy.js';
import type { Mneme } from '../mneme.js';
import { type PolicyOptions, resolvePolicy } from '../policy.js';
import type { RememberInput } from '../schemas.js';
import { visibleOwners } from '../scope.js';
import { candidatePoolSize, type RecallHit, withoutDuplicates } from './recall.js';

/**
 * An embedding model that knows a few synonyms: every word of a concept maps to the same
 * dimension, so "automobile" is close to "car" although they share no word (a vector-only match).
 */
function createConceptEmbeddingModel(): EmbeddingModel {
  const concepts = [
    ['car', 'automobile', 'vehicle', 'truck', 'sedan'],
    ['dog', 'puppy', 'hound'],
    ['pizza', 'pasta', 'lasagne'],
    ['rain', 'storm', 'drizzle'],
  ];
  const dimensions = concepts.length + 1;
  return {
    modelId: 'concepts',
    dimensions,
    async embed(texts) {
      return texts.map((text) => {
        const vector = new Float32Array(dimensions);
        for (const word of text.toLowerCase().match(/\p{L}+/gu) ?? []) {
          const concept = concepts.findIndex((words) => words.includes(word));
          if (concept >= 0) vector[concept] = (vector[concept] ?? 0) + 1;
        }
        const norm = Math.hypot(...vector);
        if (norm === 0) vector[dimensions - 1] = 1;
        return norm === 0 ? vector : vector.map((value) => value / norm);
      });
    },
  };
}

interface Harness {
  mneme: Mneme;
  /** A second connection to the same database file, for what the library has no call for (links, messages). */
  storage: Storage;
  clock: ReturnType<typeof createFixedClock>;
  warnings: string[];
  add(content: string, input?: Omit<RememberInput, 'content'>): Promise<number>;
}

const folder = mkdtempSync(join(tmpdir(), 'mneme-recall-'));
let files = 0;
const open: Harness[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const harness of open.splice(0)) {
    await harness.mneme.close();
    await harness.storage.close();
  }
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The engine over a real SQLite file, with a second connection at hand for links and messages. */
async function openEngine(
  options: { embedder?: EmbeddingModel | null; policy?: PolicyOptions; queryEmbedTimeoutMs?: number } = {},
) {
  const path = join(folder, `recall-${files++}.db`);
  const embedder = options.embedder === undefined ? createFakeEmbeddingModel() : options.embedder;
  const clock = createFixedClock('2024-06-15T12:00:00.000Z');
  const warnings: string[] = [];
  const mneme = await createMneme({
    path,
    embedder: embedder ?? 'none',
    clock,
    logger: { warn: (message) => warnings.push(message) },
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.queryEmbedTimeoutMs ? { queryEmbedTimeoutMs: options.queryEmbedTimeoutMs } : {}),
  });
  const storage = createSqliteStorage({ path });
  const harness: Harness = {
    mneme,
    storage,
    clock,
    warnings,
    add: async (content, input = {}) => (await mneme.remember({ content, ...input })).id,
  };
  open.push(harness);
  return harness;
}

const contents = (hits: readonly RecallHit[]) => hits.map((hit) => hit.memory.content);

describe('recall: the two legs and their fusion', () => {
  it('ranks a memory found by both legs first, and marks each hit hybrid, vector or fts', async () => {
    const { mneme, add } = await openEngine({ embedder: createConceptEmbeddingModel() });
    await add('Ann drives a red car');
    await add('the automobile club meets on Mondays');
    await add('automobile pizza pasta lasagne dog puppy hound');
    await add('pizza on Fridays');
    const result = await mneme.recall({ query: 'automobile' });
    expect(result.vectorLeg).toBe('used');
    expect(result.hits.map((hit) => [hit.memory.content, hit.match])).toEqual([
      ['the automobile club meets on Mondays', 'hybrid'],
      ['Ann drives a red car', 'vector'],
      ['automobile pizza pasta lasagne dog puppy hound', 'fts'],
    ]);
    expect(result.hits[0]?.ranks).toEqual({ fts: expect.any(Number), vector: expect.any(Number) });
    expect(result.hits[1]?.ranks).toEqual({ fts: null, vector: expect.any(Number) });
    expect(result.hits[2]?.ranks).toEqual({ fts: expect.any(Number), vector: null });
  });

  it('drops vector matches below the quality threshold', async () => {
    const strict = await openEngine({ embedder: createConceptEmbeddingModel() });
    await strict.add('pizza on Fridays');
    expect((await strict.mneme.recall({ query: 'automobile' })).hits).toEqual([]);

    const lenient = await openEngine({
      embedder: createConceptEmbeddingModel(),
      policy: { recall: { minSimilarity: 0 } },
    });
    await lenient.add('pizza on Fridays');
    const hits = (await lenient.mneme.recall({ query: 'automobile' })).hits;
    expect(hits.map((hit) => [hit.memory.content, hit.match])).toEqual([['pizza on Fridays', 'vector']]);
  });

  it('embeds the query with the query purpose', async () => {
    const embedder = createFakeEmbeddingModel();
    const { mneme, add } = await openEngine({ embedder });
    await add('The staging server is called kestrel');
    const result = await mneme.recall({ query: 'staging server' });
    expect(embedder.calls.at(-1)).toEqual({ texts: ['staging server'], purpose: 'query' });
    expect(result.hits[0]).toMatchObject({
      match: 'hybrid',
      memory: { content: 'The staging server is called kestrel' },
    });
  });

  it('stays lexical without an embedding model and says so', async () => {
    const { mneme, add } = await openEngine({ embedder: null });
    await add('The staging server is called kestrel');
    const result = await mneme.recall({ query: 'kestrel' });
    expect(result.vectorLeg).toBe('no-model');
    expect(result.hits.map((hit) => hit.match)).toEqual(['fts']);
    expect(result.hits[0]?.breakdown.relevance).toBeCloseTo(1, 10);
  });

  it('falls back to lexical recall with a warning when the model fails on the query', async () => {
    const failing: EmbeddingModel = {
      modelId: 'unreachable',
      dimensions: 8,
      embed: async () => {
        throw new Error('connection refused');
      },
    };
    const { mneme, add, warnings } = await openEngine({ embedder: failing });
    await add('The staging server is called kestrel');
    const result = await mneme.recall({ query: 'kestrel' });
    expect(result.vectorLeg).toBe('model-failed');
    expect(contents(result.hits)).toEqual(['The staging server is called kestrel']);
    expect(warnings.at(-1)).toMatch(/embedding the query with unreachable failed, recall is lexical only/);
  });

  it('goes on lexical only when the model does not answer the query in time, and stops waiting for it', async () => {
    const base = createFakeEmbeddingModel();
    let stopped = 0;
    // Answers documents; a query it holds until the caller gives up (a provider that hangs).
    const hanging: EmbeddingModel = {
      modelId: base.modelId,
      dimensions: base.dimensions,
      embed: (texts, purpose, options) =>
        purpose === 'document'
          ? base.embed(texts, purpose)
          : new Promise((_resolve, reject) => {
              options?.signal?.addEventListener('abort', () => {
                stopped++;
                reject(options.signal?.reason);
              });
            }),
    };
    const { mneme, add, warnings } = await openEngine({ embedder: hanging, queryEmbedTimeoutMs: 100 });
    await add('The staging server is called kestrel');
    const result = await mneme.recall({ query: 'kestrel' });
    expect(result.vectorLeg).toBe('model-failed');
    expect(contents(result.hits)).toEqual(['The staging server is called kestrel']);
    expect(stopped).toBe(1);
    expect(warnings.at(-1)).toBe(
      `embedding the query with ${base.modelId} failed, recall is lexical only: it did not answer within 100 ms`,
    );
  });

  it('takes min(max(topK * 5, 20), 100) candidates from each leg', async () => {
    expect([1, 4, 5, 10, 20, 100].map((topK) => candidatePoolSize(topK))).toEqual([20, 20, 25, 50, 100, 100]);

    // Importance outweighs relevance here, so the important memory wins whenever it is a candidate;
    // it is the weakest full-text match of 31, so it is a candidate only when the pool holds 31.
    const { mneme, add } = await openEngine({
      embedder: null,
      policy: {
        recall: { weights: { relevance: 0.2, importance: 0.8, recency: 0, accessFrequency: 0, scope: 0, pinned: 0 } },
      },
    });
    for (let index = 0; index < 30; index++) await add(`alpha note ${index}`, { importance: 0.1 });
    await add(`alpha ${'filler words that make this document long '.repeat(8)}`, { importance: 1 });
    const small = await mneme.recall({ query: 'alpha', topK: 1 });
    expect(small.hits[0]?.memory.importance).toBe(0.1);
    const larger = await mneme.recall({ query: 'alpha', topK: 7 });
    expect(larger.hits[0]?.memory.importance).toBe(1);
    expect(larger.hits[0]?.ranks.fts).toBe(31);
  });
});

describe('recall: query shaping', () => {
  it('also searches with the first 5 words of a query of more than 7 words, in the vector leg only', async () => {
    const { mneme, add } = await openEngine({ embedder: null });
    await add('the kestrel report');
    await add('the zephyr report');
    const eight = 'kestrel harbour ledger lantern meadow orchard quarry zephyr';
    const result = await mneme.recall({ query: eight });
    expect(result.queries).toEqual([eight, 'kestrel harbour ledger lantern meadow']);
    expect(contents(result.hits).sort()).toEqual(['the kestrel report', 'the zephyr report']);
    // The short query's words are the full query's first five: as a second full-text list it would
    // only favour memories matching those, so the full-text leg runs the full query alone.
    for (const hit of result.hits) expect(hit.breakdown.relevance).toBeGreaterThan(0.9);

    const seven = 'kestrel harbour ledger lantern meadow orchard zephyr';
    const single = await mneme.recall({ query: seven });
    expect(single.queries).toEqual([seven]);
    for (const hit of single.hits) expect(hit.breakdown.relevance).toBeGreaterThan(0.9);
  });

  it('embeds both query texts of a long query in one call', async () => {
    const embedder = createFakeEmbeddingModel();
    const { mneme, add } = await openEngine({ embedder });
    await add('the kestrel report');
    const eight = 'kestrel harbour ledger lantern meadow orchard quarry zephyr';
    await mneme.recall({ query: eight });
    expect(embedder.calls.at(-1)).toEqual({
      texts: [eight, 'kestrel harbour ledger lantern meadow'],
      purpose: 'query',
    });
  });

  it("searches the channel's last 3 user messages beside the question when conversation-aware, weighing less", async () => {
    const { mneme, add, storage, clock } = await openEngine({ embedder: null });
    await add('zeppelin hangar keys are at the front desk');
    await add('the obelisk is being repainted');
    await add('the kestrel launch checklist lives in the wiki');
    const say = (role: 'user' | 'assistant', content: string) => ({
      channelId: 'general',
      senderId: role === 'user' ? 'ann' : 'bot',
      role,
      content,
      topicId: null,
      createdAt: clock.now(),
    });
    await storage.messages.append([
      say('user', 'where do I pick up the zeppelin keys?'),
      say('user', 'ok thanks'),
      say('assistant', 'the obelisk is nice'),
      say('user', 'next: the kestrel launch'),
      say('user', 'what about it?'),
    ]);
    const viewer = { channelId: 'general' };
    const plain = await mneme.recall({ query: 'remind me again', viewer });
    expect(plain.hits).toEqual([]);
    const aware = await mneme.recall({ query: 'remind me again', viewer, conversationAware: true });
    expect(aware.queries).toEqual(['remind me again', 'ok thanks\nnext: the kestrel launch\nwhat about it?']);
    expect(contents(aware.hits)).toEqual(['the kestrel launch checklist lives in the wiki']);
  });

  it('lets the question dominate the recent conversation, and never recalls the message being answered', async () => {
    const { mneme, add, storage, clock } = await openEngine({ embedder: null });
    await add('Oz must avoid food with peanuts');
    await add('the kestrel launch checklist lives in the wiki');
    await add('the kestrel launch is on Friday');
    const say = (content: string) => ({
      channelId: 'general',
      senderId: 'oz',
      role: 'user' as const,
      content,
      topicId: null,
      createdAt: clock.now(),
    });
    await storage.messages.append([say('is the kestrel launch checklist ready?'), say('when is the kestrel launch?')]);
    const [question] = await storage.messages.recentUserMessages('general', 1);
    const own = await storage.memories.insert(
      [
        {
          content: 'oz: any food I should avoid?',
          category: 'exchange',
          sector: 'episodic',
          scope: 'room',
          owner: 'room:general',
          userId: 'oz',
          channelId: 'general',
          projectId: null,
          topicId: null,
          source: 'exchange',
          importance: 0.5,
          pinned: false,
          sourceMessageIds: [(question?.id ?? 0) + 1],
          sourceIds: [],
          embedding: null,
        },
      ],
      { at: clock.now(), actor: null },
    );
    await storage.messages.append([say('any food I should avoid?')]);
    const aware = await mneme.recall({
      query: 'any food I should avoid?',
      viewer: { channelId: 'general', userId: 'oz' },
      conversationAware: true,
    });
    expect(contents(aware.hits)[0]).toBe('Oz must avoid food with peanuts');
    expect(aware.hits.map((hit) => hit.memory.id)).not.toContain(own[0]?.id);
  });

  it("ranks the named speaker's own turn above the other side's reply that names them, and says why", async () => {
    const talk = async (mneme: Mneme, clock: ReturnType<typeof createFixedClock>) => {
      const say = (sender: string, senderName: string, content: string) =>
        mneme.ingest({ channelId: 'camp', sender, senderName, role: 'user', content, createdAt: clock.now() });
      await say('ann', 'Ann', 'Up at the glacier lake, two nights in a tent, with a campfire each evening.');
      await say('bob', 'Bob', 'Ann, camping at a glacier lake, wow! Ann camping in the mountains sounds lovely.');
      await mneme.whenIdle();
      const result = await mneme.recall({
        query: 'Where did Ann go camping?',
        viewer: { channelId: 'camp', userId: 'bob' },
        explain: true,
        inspect: true,
      });
      return result.hits;
    };
    const off = await openEngine({ embedder: null, policy: { recall: { otherSpeakerWeight: 1 } } });
    const plain = await talk(off.mneme, off.clock);
    // Without the factor, the reply that repeats the name and the word comes first.
    expect(plain.map((hit) => [hit.memory.category, hit.memory.userId])).toEqual([
      ['exchange', 'bob'],
      ['exchange', 'ann'],
    ]);
    expect(plain[0]?.breakdown.otherSpeaker).toBeUndefined();

    const on = await openEngine({ embedder: null });
    const focused = await talk(on.mneme, on.clock);
    expect(focused.map((hit) => hit.memory.userId)).toEqual(['ann', 'bob']);
    expect(focused[0]?.breakdown.otherSpeaker).toBeUndefined();
    expect(focused[1]?.breakdown.otherSpeaker).toBe(0.9);
    expect(focused[1]?.explanation).toContain('x0.9 (the query names someone else than who said it)');
  });

  it("reads a question in the first person as naming the viewer: the asker's own turn comes first", async () => {
    const talk = async (mneme: Mneme, clock: ReturnType<typeof createFixedClock>) => {
      const say = (sender: string, senderName: string, content: string) =>
        mneme.ingest({ channelId: 'camp', sender, senderName, role: 'user', content, createdAt: clock.now() });
      await say('ann', 'Ann', 'Up at the glacier lake, two nights in a tent, with a campfire each evening.');
      await say('bob', 'Bob', 'Camping at a glacier lake, wow! Camping in the mountains with a tent sounds lovely.');
      await mneme.whenIdle();
      const result = await mneme.recall({
        query: 'Where did I go camping with my tent?',
        viewer: { channelId: 'camp', userId: 'ann' },
        explain: true,
        inspect: true,
      });
      return result.hits;
    };
    const off = await openEngine({ embedder: null, policy: { recall: { otherSpeakerWeight: 1 } } });
    const plain = await talk(off.mneme, off.clock);
    // Without the factor, the reply that repeats the question's words comes first.
    expect(plain.map((hit) => hit.memory.userId)).toEqual(['bob', 'ann']);

    const on = await openEngine({ embedder: null });
    const focused = await talk(on.mneme, on.clock);
    expect(focused.map((hit) => hit.memory.userId)).toEqual(['ann', 'bob']);
    expect(focused[0]?.breakdown.otherSpeaker).toBeUndefined();
    expect(focused[1]?.breakdown.otherSpeaker).toBe(0.9);
  });

  it('weighs no speaker when the query names none, or names every speaker', async () => {
    const { mneme, clock } = await openEngine({ embedder: null });
    const say = (sender: string, senderName: string, content: string) =>
      mneme.ingest({ channelId: 'camp', sender, senderName, role: 'user', content, createdAt: clock.now() });
    await say('ann', 'Ann', 'Up at the glacier lake, two nights in a tent, with a campfire each evening.');
    await say('bob', 'Bob', 'Ann, camping at a glacier lake, wow! Ann camping in the mountains sounds lovely.');
    await mneme.whenIdle();
    for (const query of ['Who went camping at the glacier lake?', 'Where did Ann and Bob go camping?']) {
      const result = await mneme.recall({ query, viewer: { channelId: 'camp', userId: 'bob' }, inspect: true });
      expect(result.hits.map((hit) => hit.memory.userId).sort()).toEqual(['ann', 'bob']);
      expect(result.hits.every((hit) => hit.breakdown.otherSpeaker === undefined)).toBe(true);
    }
  });

  it('keeps one of several hits with the same content', () => {
    const hit = (id: number, content: string) => ({ memory: { id, content } }) as unknown as RecallHit;
    expect(
      withoutDuplicates([hit(1, 'Oz: hi there'), hit(2, 'oz:  HI there '), hit(3, 'Oz: bye')]).map((h) => h.memory.id),
    ).toEqual([1, 3]);
  });

  it('stops de-duplicating at the limit, counting only the distinct hits it keeps', () => {
    const hit = (id: number, content: string) => ({ memory: { id, content } }) as unknown as RecallHit;
    const hits = [hit(1, 'a'), hit(2, 'A'), hit(3, 'b'), hit(4, 'c')];
    expect(withoutDuplicates(hits, 2).map((h) => h.memory.id)).toEqual([1, 3]);
  });
});

describe('recall: graph expansion', () => {
  async function linkedHarness(policy?: PolicyOptions) {
    const harness = await openEngine({ embedder: null, ...(policy ? { policy } : {}) });
    const seed = await harness.add('kestrel plan');
    const other = await harness.add('kestrel notes');
    const neighbours: number[] = [];
    for (const [index, strength] of [0.5, 0.9, 0.6, 0.8, 0.7].entries()) {
      neighbours.push(await harness.add(`unrelated neighbour ${index}`, { importance: 1, pinned: true }));
      await harness.storage.links.add(
        [{ sourceId: seed, targetId: neighbours[index] ?? 0, type: 'semantic', strength }],
        0,
      );
    }
    await harness.storage.links.add([{ sourceId: other, targetId: seed, type: 'co_extracted' }], 0);
    return { ...harness, seed, other, neighbours };
  }

  it('adds at most 3 linked memories, strongest links first, after every direct hit', async () => {
    // Side terms weighted up so that a pinned, important neighbour outscores a direct hit: it still comes after.
    const weights = { relevance: 0.4, importance: 0.2, recency: 0.1, accessFrequency: 0.05, scope: 0.05, pinned: 0.2 };
    const { mneme, seed, other, neighbours } = await linkedHarness({ recall: { weights } });
    const { hits } = await mneme.recall({ query: 'kestrel', topK: 2 });
    expect(hits.map((hit) => hit.match)).toEqual(['fts', 'fts', 'graph', 'graph', 'graph']);
    expect(
      hits
        .slice(0, 2)
        .map((hit) => hit.memory.id)
        .sort(),
    ).toEqual([seed, other].sort());
    expect(hits.slice(2).map((hit) => hit.memory.id)).toEqual([neighbours[1], neighbours[3], neighbours[4]]);
    expect(hits[2]?.linkedTo).toEqual({ id: seed, type: 'semantic', strength: 0.9 });
    const weakestDirect = Math.min(...hits.slice(0, 2).map((hit) => hit.score));
    expect(hits[2]?.score).toBeGreaterThan(weakestDirect);
  });

  it('never lists a direct hit again as a graph match', async () => {
    const { mneme } = await linkedHarness();
    const ids = (await mneme.recall({ query: 'kestrel' })).hits.map((hit) => hit.memory.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('adds no linked memory when the policy turns expansion off', async () => {
    const { mneme } = await linkedHarness({ recall: { graphNeighbours: 0 } });
    const { hits } = await mneme.recall({ query: 'kestrel' });
    expect(hits.map((hit) => hit.match)).toEqual(['fts', 'fts']);
  });
});

describe('recall: scope isolation', () => {
  it("never returns another user's personal memory from either leg or through a link", async () => {
    const { mneme, add, storage } = await openEngine({ embedder: createConceptEmbeddingModel() });
    const annCar = await add('Ann parks her car in bay 4', { scope: 'personal', userId: 'ann' });
    await add('Ann bought a truck', { scope: 'personal', userId: 'ann' });
    const bobCar = await add('Bob parks his car in bay 9', { scope: 'personal', userId: 'bob' });
    const bobSedan = await add('Bob owns a sedan', { scope: 'personal', userId: 'bob' });
    const bobSecret = await add('Bob keeps the garage code under the mat', { scope: 'personal', userId: 'bob' });
    const roomCar = await add('the beta room car pool', { scope: 'room', channelId: 'beta' });
    const garage = await add('the garage opens at seven');
    await storage.links.add(
      [
        { sourceId: annCar, targetId: bobSecret, type: 'semantic', strength: 1 },
        { sourceId: annCar, targetId: garage, type: 'semantic', strength: 0.5 },
      ],
      0,
    );
    const viewer = { userId: 'ann', channelId: 'alpha' };
    const { hits } = await mneme.recall({ query: 'car', viewer });
    expect(contents(hits).sort()).toEqual([
      'Ann bought a truck',
      'Ann parks her car in bay 4',
      'the garage opens at seven',
    ]);
    expect(hits.find((hit) => hit.memory.content === 'Ann bought a truck')?.match).toBe('vector');
    expect(hits.find((hit) => hit.memory.id === garage)?.match).toBe('graph');
    const visible = visibleOwners(viewer);
    for (const hit of hits) {
      expect(visible).toContain(hit.memory.userId ? `user:${hit.memory.userId}` : 'global');
    }

    const bob = await mneme.recall({ query: 'car', viewer: { userId: 'bob' } });
    expect(bob.hits.map((hit) => hit.memory.id)).toEqual(expect.arrayContaining([bobCar, bobSedan]));
    expect(bob.hits.map((hit) => hit.memory.id)).not.toContain(roomCar);
    expect(bob.hits.map((hit) => hit.memory.id)).not.toContain(annCar);
  });

  it('searches only global memories when no viewer is given', async () => {
    const { mneme, add } = await openEngine();
    await add('kestrel is the staging server');
    await add('kestrel is my cat', { scope: 'personal', userId: 'ann' });
    expect(contents((await mneme.recall({ query: 'kestrel' })).hits)).toEqual(['kestrel is the staging server']);
  });
});

describe('recall: the policy score', () => {
  it('gives every hit a score in 0..1 with its breakdown, and explains it when asked', async () => {
    const { mneme, add } = await openEngine();
    await add('Oz prefers dark mode', { scope: 'personal', userId: 'oz', importance: 0.9, pinned: true });
    const plain = await mneme.recall({ query: 'dark mode', viewer: { userId: 'oz' } });
    const [hit] = plain.hits;
    expect(hit?.score).toBeGreaterThan(0);
    expect(hit?.score).toBeLessThanOrEqual(1);
    expect(hit?.breakdown).toMatchObject({ importance: 0.9, pinned: 1, scope: 0.5, accessFrequency: 0, recency: 1 });
    expect(hit).not.toHaveProperty('explanation');
    expect(plain.weights).toEqual(resolvePolicy().recall.weights);

    const explained = await mneme.recall({ query: 'dark mode', viewer: { userId: 'oz' }, explain: true });
    expect(explained.hits[0]?.explanation).toMatch(
      /^fts #1, vector #1 \(cosine 0\.\d\d\), calibrated \d\.\d\d \| relevance 1\.00x0\.8 \+ importance 0\.90x0\.06 \+ .* = 0\.\d{3}$/,
    );
  });

  it('ranks a more important memory first when relevance ties', async () => {
    const { mneme, add } = await openEngine({ embedder: null });
    await add('kestrel alpha', { importance: 0.2 });
    await add('kestrel bravo', { importance: 0.9 });
    expect(contents((await mneme.recall({ query: 'kestrel' })).hits)).toEqual(['kestrel bravo', 'kestrel alpha']);
  });

  it('refuses a topK above 100, an empty or too long query and unknown fields, with the field named', async () => {
    const mneme = await createMneme({ path: ':memory:', clock: createFixedClock() });
    try {
      const refusals: Array<[unknown, RegExp]> = [
        [{ query: 'x', topK: 101 }, /topK: topK must be at most 100/],
        [{ query: 'x', topK: 0 }, /topK must be at least 1/],
        [{ query: '   ' }, /query: query must not be empty/],
        [{ query: 'x'.repeat(20_001) }, /query is longer than 20000 characters/],
        [{ query: 'x', viewer: { userId: '' } }, /viewer.userId: userId must not be empty/],
        [{ query: 'x', mode: 'fastest' }, /mode must be hybrid or recent-first/],
        [{ query: 'x', limit: 3 }, /unknown field limit/],
      ];
      for (const [input, message] of refusals) {
        await expect(mneme.recall(input as never)).rejects.toMatchObject({ code: 'INVALID_INPUT', message });
      }
    } finally {
      await mneme.close();
    }
  });
});

/** Counts every SQL statement better-sqlite3 executes (run, get, all, iterate) while `work` runs. */
async function countStatements(work: () => Promise<unknown>): Promise<string[]> {
  const probe = new Database(':memory:');
  const statementPrototype = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  const spies = (['run', 'get', 'all', 'iterate'] as const).map((method) => vi.spyOn(statementPrototype, method));
  try {
    await work();
    return spies.flatMap((spy) => spy.mock.contexts.map((statement) => String(statement.source).trim()));
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

describe('recall: touch and reinforcement', () => {
  it('counts the access and restarts the Ebbinghaus clock of every returned memory, graph matches included', async () => {
    const { mneme, add, storage, clock } = await openEngine();
    const hit = await add('kestrel is the staging server');
    const linked = await add('the staging password rotates monthly');
    const untouched = await add('an unrelated memory about gardening');
    await storage.links.add([{ sourceId: hit, targetId: linked, type: 'co_extracted' }], 0);
    clock.advance(14 * DAY_MS);

    const first = await mneme.recall({ query: 'kestrel' });
    expect(first.hits.map((entry) => [entry.memory.id, entry.match])).toEqual([
      [hit, 'hybrid'],
      [linked, 'graph'],
    ]);
    expect(first.hits[0]?.breakdown.recency).toBeCloseTo(0.5, 10);
    const now = new Date(clock.now()).toISOString();
    expect(first.hits[0]?.memory).toMatchObject({ accessCount: 1, lastAccessedAt: now, strength: 1 });
    expect(await mneme.get(hit)).toMatchObject({ accessCount: 1, lastAccessedAt: now, strength: 1 });
    expect(await mneme.get(linked)).toMatchObject({ accessCount: 1, lastAccessedAt: now });
    expect(await mneme.get(untouched)).toMatchObject({ accessCount: 0, lastAccessedAt: null });

    const second = await mneme.recall({ query: 'kestrel' });
    expect(second.hits[0]?.breakdown.recency).toBe(1);
    expect((await mneme.get(hit)).accessCount).toBe(2);
  });

  it('adds 0.1 salience per retrieval under the salience policy, capped at 5', async () => {
    const { mneme, add } = await openEngine({ policy: { decay: 'salience' } });
    const id = await add('kestrel is the staging server');
    await mneme.recall({ query: 'kestrel' });
    expect((await mneme.get(id)).salience).toBeCloseTo(1.1, 10);
    for (let round = 0; round < 45; round++) await mneme.recall({ query: 'kestrel' });
    expect(await mneme.get(id)).toMatchObject({ salience: 5, accessCount: 46 });
  });

  it('raises importance one step per retrieval under the importance-steps policy, capped at 5', async () => {
    const { mneme, add } = await openEngine({ policy: { decay: 'importance-steps' } });
    const id = await add('kestrel is the staging server', { importance: 0.6 });
    const steps: number[] = [];
    for (let round = 0; round < 3; round++) {
      await mneme.recall({ query: 'kestrel' });
      steps.push((await mneme.get(id)).importance);
    }
    expect(steps).toEqual([0.8, 1, 1]);
  });

  it('writes nothing for an inspect search or context: access count, last access and decay values stay as they were', async () => {
    for (const decay of decayPolicyNames) {
      const { mneme, add, clock } = await openEngine({ policy: { decay } });
      const id = await add('kestrel is the staging server', { importance: 0.6 });
      clock.advance(3 * DAY_MS);
      const before = await mneme.get(id);
      const statements = await countStatements(async () => {
        const inspected = await mneme.recall({ query: 'kestrel', inspect: true });
        expect(inspected.hits.map((hit) => hit.memory)).toEqual([before]);
        const block = await mneme.context({ query: 'kestrel', inspect: true });
        expect(block.hits.map((hit) => hit.memory)).toEqual([before]);
      });
      expect(statements.length, decay).toBeGreaterThan(0);
      expect(
        // A read transaction (BEGIN DEFERRED: the full-text leg's, ADR 25 session 10) writes nothing; a write in
        // one would show as its INSERT, UPDATE, DELETE or REPLACE.
        statements.filter((sql) => /\b(INSERT|UPDATE|DELETE|REPLACE)\b|\bBEGIN\b(?! DEFERRED)/i.test(sql)),
        decay,
      ).toEqual([]);
      expect(await mneme.get(id), decay).toEqual(before);

      await mneme.recall({ query: 'kestrel' });
      const after = await mneme.get(id);
      expect(after, decay).toMatchObject({ accessCount: 1, lastAccessedAt: new Date(clock.now()).toISOString() });
      // Every policy but recency-only also reinforces a retrieved memory.
      const values = (memory: typeof before) => [memory.strength, memory.salience, memory.importance];
      if (decay !== 'recency-only') expect(values(after), decay).not.toEqual(values(before));
    }
  });

  it('leaves strength, salience and importance alone when the policy does not move them', async () => {
    const { mneme, add } = await openEngine({ policy: { decay: 'ebbinghaus' } });
    const id = await add('kestrel is the staging server', { importance: 0.6 });
    await mneme.recall({ query: 'kestrel' });
    expect(await mneme.get(id)).toMatchObject({ importance: 0.6, salience: 1, strength: 1 });
  });
});

describe('recall: recent-first mode', () => {
  it('returns the 3 best full-text matches, then the 5 most recent memories, without duplicates', async () => {
    const { mneme, add, clock } = await openEngine();
    const ids: number[] = [];
    for (let index = 0; index < 10; index++) {
      const mentionsKestrel = index === 0 || index === 1 || index === 9;
      ids.push(await add(mentionsKestrel ? `kestrel memory ${index}` : `plain memory ${index}`));
      clock.advance(60_000);
    }
    const result = await mneme.recall({ query: 'kestrel', mode: 'recent-first' });
    expect(result).toMatchObject({ mode: 'recent-first', vectorLeg: 'not-in-mode' });
    expect(result.hits.map((hit) => hit.match)).toEqual(['fts', 'fts', 'fts', 'recent', 'recent', 'recent', 'recent']);
    expect(
      result.hits
        .slice(0, 3)
        .map((hit) => hit.memory.id)
        .sort((a, b) => a - b),
    ).toEqual([ids[0], ids[1], ids[9]]);
    expect(result.hits.slice(3).map((hit) => hit.memory.id)).toEqual([ids[8], ids[7], ids[6], ids[5]]);
  });

  it('takes as many full-text matches and recent memories as the policy says', async () => {
    const { mneme, add, clock } = await openEngine({
      policy: { recall: { mode: 'recent-first', recentFirst: { textHits: 1, recentHits: 3 } } },
    });
    const ids: number[] = [];
    for (let index = 0; index < 6; index++) {
      ids.push(await add(index === 0 ? 'kestrel memory' : index === 5 ? 'kestrel note' : `plain memory ${index}`));
      clock.advance(60_000);
    }
    const narrow = await mneme.recall({ query: 'kestrel memory' });
    expect(narrow.hits.map((hit) => [hit.memory.id, hit.match])).toEqual([
      [ids[0], 'fts'],
      [ids[5], 'recent'],
      [ids[4], 'recent'],
      [ids[3], 'recent'],
    ]);

    const recentOnly = await openEngine({
      policy: { recall: { mode: 'recent-first', recentFirst: { textHits: 0, recentHits: 2 } } },
    });
    const matching = await recentOnly.add('kestrel memory');
    recentOnly.clock.advance(60_000);
    const latest = await recentOnly.add('plain memory');
    const hits = (await recentOnly.mneme.recall({ query: 'kestrel' })).hits;
    expect(hits.map((hit) => [hit.memory.id, hit.match])).toEqual([
      [latest, 'recent'],
      [matching, 'recent'],
    ]);
  });

  it('counts a retrieval as recent use, and follows the policy mode when the input names none', async () => {
    const { mneme, add, clock } = await openEngine({ policy: { recall: { mode: 'recent-first' } } });
    const old = await add('old but useful');
    clock.advance(DAY_MS);
    for (let index = 0; index < 6; index++) await add(`newer memory ${index}`);
    clock.advance(DAY_MS);
    await mneme.recall({ query: 'useful', topK: 1 });
    clock.advance(DAY_MS);
    const result = await mneme.recall({ query: 'nothing matches this' });
    expect(result.mode).toBe('recent-first');
    expect(result.hits[0]).toMatchObject({ match: 'recent', memory: { id: old } });
    expect(result.hits).toHaveLength(5);
  });
});

describe('recall: words that go together (ADR 26)', () => {
  /** Memories that say "family" and "kids" together, and unrelated ones, so "family" is a rare word. */
  async function familyTalk(add: Harness['add'], input: Omit<RememberInput, 'content'> = {}) {
    await add('Family dinner with the kids on Sunday evening', input);
    await add('The kids and the whole family went to the zoo', input);
    await add('Planning a family holiday that the kids will love', input);
    const fillers = [
      'The invoice went to accounting',
      'Printer toner is low again',
      'Standup moved to Wednesday',
      'Quarterly report due Friday',
      'Server rack needs a new fan',
      'Budget review with finance',
      'Contract signed by the vendor',
      'Laptop battery replaced',
      'Parking permits renewed in March',
      'Office plants watered by Lee',
      'Coffee machine descaled',
      'Wifi password rotated',
      'Badge reader fixed at the door',
      'Desk booking opens Monday',
      'Fire drill at noon',
      'Projector bulb ordered',
    ];
    for (const filler of fillers) await add(filler);
  }

  it('finds a memory by a word the query word shares memories with, which it does not contain', async () => {
    const search = async (associationWeight: number) => {
      const { mneme, add } = await openEngine({ embedder: null, policy: { recall: { associationWeight } } });
      await familyTalk(add);
      const target = await add('Swimming with the kids every Saturday morning');
      const result = await mneme.recall({ query: 'What does the family do together?', inspect: true });
      return { ids: result.hits.map((hit) => hit.memory.id), target };
    };
    const off = await search(0);
    expect(off.ids).not.toContain(off.target);
    const on = await search(0.3);
    expect(on.ids).toContain(on.target);
  });

  it('never takes an association from memories the viewer may not see (two users)', async () => {
    const { mneme, add } = await openEngine({ embedder: null, policy: { recall: { associationWeight: 0.3 } } });
    // Ann's own memories say "family" and "kids" together; Bob has no such memory.
    await familyTalk(add, { scope: 'personal', userId: 'ann' });
    await add('Family is what matters', { scope: 'personal', userId: 'bob' });
    await add('Family first, always', { scope: 'personal', userId: 'bob' });
    const shared = await add('Swimming with the kids every Saturday morning');
    const recallAs = async (userId: string) =>
      (await mneme.recall({ query: 'What does the family do together?', viewer: { userId }, inspect: true })).hits;
    // Ann's recall finds the shared memory through her own memories' association; Bob's cannot.
    expect((await recallAs('ann')).map((hit) => hit.memory.id)).toContain(shared);
    const bob = await recallAs('bob');
    expect(bob.map((hit) => hit.memory.id)).not.toContain(shared);
    expect(bob.every((hit) => hit.memory.userId !== 'ann')).toBe(true);
  });
});

describe("recall: another user's facts that match a question's frame only (ADR 26)", () => {
  const talk = async (otherSpeakerWeakWeight: number) => {
    const { mneme, clock, add } = await openEngine({
      embedder: null,
      policy: { recall: { otherSpeakerWeakWeight, associationWeight: 0 } },
    });
    const say = (sender: string, senderName: string, content: string) =>
      mneme.ingest({ channelId: 'camp', sender, senderName, role: 'user', content, createdAt: clock.now() });
    // Ann's turn becomes an event of hers ("Ann and others took the kids kayaking ...").
    await say('ann', 'Ann', 'We took the kids kayaking on the river last weekend, everyone paddled!');
    await say('bob', 'Bob', 'That sounds like a lot of fun for everyone.');
    await mneme.whenIdle();
    // "done" is a common word of this store, as words of a question's frame are.
    for (const chore of [
      'The dishes are done',
      'Laundry done for today',
      'Report done and filed',
      'Done with the garden',
    ])
      await add(chore);
    const weak = await add('Bob has done the tax paperwork', { scope: 'personal', userId: 'bob' });
    const strong = await add('Bob has done kayaking with kids before', { scope: 'personal', userId: 'bob' });
    const result = await mneme.recall({
      query: 'What has Ann done with the kids?',
      viewer: { channelId: 'camp', userId: 'bob' },
      inspect: true,
    });
    return { hits: result.hits, weak, strong };
  };

  it('ranks a fact of another user that shares only a frame word with the query below, one that matches well not', async () => {
    const off = await talk(1);
    const on = await talk(0.8);
    const rank = (run: Awaited<ReturnType<typeof talk>>, id: number) =>
      run.hits.findIndex((hit) => hit.memory.id === id);
    expect(rank(on, on.weak)).toBeGreaterThan(rank(off, off.weak));
    expect(on.hits[rank(on, on.weak)]?.score).toBeCloseTo((off.hits[rank(off, off.weak)]?.score ?? 0) * 0.8, 10);
    expect(on.hits[rank(on, on.weak)]?.breakdown.otherSpeaker).toBe(0.8);
    expect(on.hits[rank(on, on.strong)]?.breakdown.otherSpeaker).toBeUndefined();
  });
});

describe('recall: cost', () => {
  it('runs the same number of SQL statements whatever topK is', async () => {
    const { mneme, add, storage, clock } = await openEngine();
    const ids: number[] = [];
    for (let index = 0; index < 150; index++) ids.push(await add(`alpha item ${index} of the kestrel catalogue`));
    const extras = [await add('zucchini marmalade'), await add('quokka umbrella'), await add('velvet xylophone')];
    await storage.links.add(
      ids.flatMap((id) => extras.map((extra) => ({ sourceId: id, targetId: extra, type: 'semantic' as const }))),
      0,
    );
    await storage.messages.append([
      {
        channelId: 'general',
        senderId: 'ann',
        role: 'user',
        content: 'kestrel',
        topicId: null,
        createdAt: clock.now(),
      },
    ]);

    const counts: number[] = [];
    const long = 'alpha kestrel catalogue item of the whole big list please';
    // The first recall counts how common its words are (one statement per word, remembered after). It
    // touches its hits as the counted ones do: the viewer's word counts are remembered only until a write.
    await mneme.recall({ query: long, viewer: { channelId: 'general' }, conversationAware: true });
    for (const topK of [1, 10, 50, 100]) {
      let returned = 0;
      const statements = await countStatements(async () => {
        const result = await mneme.recall({
          query: long,
          topK,
          viewer: { channelId: 'general' },
          conversationAware: true,
        });
        returned = result.hits.length;
      });
      expect(returned).toBe(Math.min(topK, 150) + 3);
      counts.push(statements.length);
    }
    expect(new Set(counts).size).toBe(1);
    // messages; the viewer's word counts (a statement for the words, one for the owners' sizes) for the
    // common-term split and the ranking of each text and for the term weights; one full-text statement a
    // word of each text (ADR 25: 8 of the question, 1 of the conversation); 3 vector searches of 3 each
    // (the viewer's owners, the bit index, the exact rescoring), candidates, neighbours, neighbour
    // memories, the touch's look for faded memories and the touch (+ BEGIN/COMMIT) and the two pragmas
    // around its deferred commit; and before each use of remembered word counts, `total_changes()` and
    // `PRAGMA data_version`, which tell whether anything was written since; the full-text leg's read transaction
    // (BEGIN DEFERRED) and its own `total_changes()` and `data_version` (its audience snapshot: ADR 25, session 10).
    expect(counts[0]).toBeLessThanOrEqual(48);
  });
});

describe('a memory forgotten while a recall is in flight', () => {
  it('is not returned, though the full-text leg found it before the forget', async () => {
    const fake = createFakeEmbeddingModel({ dimensions: 32 });
    let release: () => void = () => {};
    let gate: Promise<void> | null = null;
    // The query's embedding waits for the gate: the full-text leg has run, the rows are not read yet.
    const gated: EmbeddingModel = {
      modelId: fake.modelId,
      dimensions: fake.dimensions,
      async embed(texts, purpose, options) {
        if (purpose === 'query' && gate) await gate;
        return fake.embed(texts, purpose, options);
      },
    };
    const mneme = await createMneme({ path: ':memory:', embedder: gated });
    try {
      const secret = await mneme.remember({ content: 'The vault password is kestrel-42', scope: 'global' });
      const kept = await mneme.remember({ content: 'The vault door is painted green', scope: 'global' });
      gate = new Promise((done) => {
        release = done;
      });
      const recalling = mneme.recall({ query: 'vault password', viewer: {} });
      await new Promise((done) => setTimeout(done, 20));
      await mneme.forget({ id: secret.id });
      release();
      const ids = (await recalling).hits.map((hit) => hit.memory.id);
      expect(ids).toContain(kept.id);
      expect(ids).not.toContain(secret.id);
      expect((await mneme.get({ id: secret.id })).archivedAt).not.toBeNull();
    } finally {
      await mneme.close();
    }
  });
});

describe('a memory a leg answers that the viewer may not see', () => {
  it('is not returned: recall checks each hit’s owner key against the viewer’s again (a stale or torn leg)', async () => {
    const storage = createSqliteStorage({ path: ':memory:' });
    const { memories } = storage as { -readonly [Store in keyof Storage]: Storage[Store] };
    const searchText = memories.searchText.bind(memories);
    let foreign: number | null = null;
    // The full-text leg answers with Bob's personal memory too, as a torn read could.
    memories.searchText = async (search) => {
      const hits = await searchText(search);
      return foreign === null ? hits : [{ id: foreign, score: 99 }, ...hits];
    };
    const mneme = createEngine({
      storage,
      embedder: null,
      clock: createFixedClock('2024-06-15T12:00:00.000Z'),
      logger: { warn: () => undefined },
      policy: resolvePolicy(),
      summariser: createOfflineEpisodeSummariser(),
      merger: createOfflineMemoryMerger(),
      dreamer: null,
      extractor: null,
    });
    try {
      const shared = await mneme.remember({ content: 'The vault door is painted green', scope: 'global' });
      const bobs = await mneme.remember({
        content: 'Bob keeps the vault password in his desk',
        scope: 'personal',
        userId: 'bob',
      });
      foreign = bobs.id;
      const ids = (await mneme.recall({ query: 'vault', viewer: { userId: 'ann' } })).hits.map((hit) => hit.memory.id);
      expect(ids).toEqual([shared.id]);
      // Bob himself still gets it.
      const his = (await mneme.recall({ query: 'vault', viewer: { userId: 'bob' } })).hits.map((hit) => hit.memory.id);
      expect(his).toContain(bobs.id);
    } finally {
      await mneme.close();
    }
  });
});
