import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../core/errors.js';
import { nameKey } from '../core/name-key.js';
import { ownerKey, visibleOwners } from '../core/scope.js';
import type { Scope } from '../core/types.js';
import { createFakeEmbeddingModel } from '../models/fake/fake-embedding-model.js';
import type { ExtractionLease } from './extraction-store.js';
import type { NewMemory, StoredEmbedding } from './memory-store.js';
import type { Storage } from './storage.js';

const model = createFakeEmbeddingModel({ dimensions: 32 });
const at = Date.parse('2024-06-15T12:00:00.000Z');
const context = { at, actor: 'tester' };

async function embed(text: string): Promise<StoredEmbedding> {
  const [vector] = await model.embed([text], 'document');
  if (!vector) throw new Error('no vector');
  return { model: model.modelId, vector };
}

async function queryVector(text: string): Promise<Float32Array> {
  const [vector] = await model.embed([text], 'query');
  if (!vector) throw new Error('no vector');
  return vector;
}

/** A user message of `senderId` in channel `c`. */
function said(senderId: string, content: string) {
  return { channelId: 'c', senderId, role: 'user' as const, content, topicId: null, createdAt: at };
}

/** What an imported memory has beyond a NewMemory (a TransferStore import). */
const importedFields = {
  strength: 0.7,
  salience: 0.4,
  accessCount: 0,
  lastAccessedAt: null,
  validFrom: at,
  archivedAt: null,
  fadedAt: null,
  createdAt: at,
  updatedAt: at,
  decayedAt: null,
  searchContext: null,
  searchContextMessageId: null,
  chunkMessageId: null,
  chunkIndex: null,
};

/** A valid NewMemory with an embedding; override what the test is about. */
async function newMemory(
  content: string,
  overrides: Partial<NewMemory> & { scope?: Scope } = {},
  withVector = true,
): Promise<NewMemory> {
  const scope = overrides.scope ?? 'global';
  const ids = {
    userId: overrides.userId ?? null,
    channelId: overrides.channelId ?? null,
    projectId: overrides.projectId ?? null,
    topicId: overrides.topicId ?? null,
  };
  return {
    content,
    category: 'fact',
    sector: 'semantic',
    scope,
    owner: ownerKey(scope, ids),
    ...ids,
    source: 'manual',
    importance: 0.5,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    embedding: withVector ? await embed(content) : null,
    ...overrides,
  };
}

/** What a backend under the contract can do. */
/**
 * What the upgrade to schema 30 (SQLite) or step 10 (PostgreSQL) gives a store holding a message of `BobSmith`, a
 * reply of `assistant`, a member `carol.w`, a key of `Kim.Lee` and a user `robert` named "Rob" with a stale key:
 * a row for each known id but the assistant, and both keys of every user (ADR 40).
 */
export async function expectKnownIdsKeyed(storage: Storage): Promise<void> {
  const { directory } = storage;
  expect(await directory.hasNamesake('eve', nameKey('bobsmith'))).toBe(true);
  expect(await directory.hasNamesake('eve', nameKey('carоl.w'))).toBe(true);
  expect(await directory.hasNamesake('eve', nameKey('KIM LEE'))).toBe(true);
  expect(await directory.hasNamesake('eve', nameKey('R0b'))).toBe(true);
  expect(await directory.hasNamesake('eve', nameKey('Robert'))).toBe(true);
  expect(await directory.hasNamesake('eve', nameKey('Ann'))).toBe(false);
  expect(await directory.getUser('BobSmith')).toEqual({ id: 'BobSmith', displayName: null });
  expect(await directory.getUser('assistant')).toBeNull();
}

export interface StorageContractOptions {
  /**
   * False for a backend that stores vectors but cannot search them (PostgreSQL without pgvector):
   * the tests about vector search are skipped, saying so, and `searchVector` must find nothing.
   */
  vectorSearch?: boolean;
}

/**
 * The behaviour every storage backend must have. Call it from a backend's test file with a
 * function that opens a fresh, empty storage.
 */
export function describeStorageContract(
  name: string,
  open: () => Promise<Storage>,
  options: StorageContractOptions = {},
): void {
  const vectorSearch = options.vectorSearch !== false;
  /** A test about vector search: skipped (and named so) on a backend without it. */
  const itSearchesVectors = vectorSearch ? it : it.skip;
  describe(`${name}: storage contract${vectorSearch ? '' : ' (lexical only: the vector search tests are skipped)'}`, () => {
    let storage: Storage;

    beforeEach(async () => {
      storage = await open();
      await storage.configureVectors({ model: model.modelId, dimensions: model.dimensions });
    });

    afterEach(async () => {
      await storage.close();
    });

    it('stores a memory and reads it back with every field', async () => {
      const [stored] = await storage.memories.insert(
        [
          await newMemory('Oz prefers dark mode', {
            scope: 'personal',
            userId: 'oz',
            channelId: 'general',
            category: 'preference',
            importance: 0.8,
            pinned: true,
            sourceMessageIds: [3, 4],
          }),
        ],
        context,
      );
      const [read] = await storage.memories.get([stored?.id ?? 0]);
      expect(read).toEqual(stored);
      expect(read).toMatchObject({
        content: 'Oz prefers dark mode',
        category: 'preference',
        sector: 'semantic',
        scope: 'personal',
        userId: 'oz',
        channelId: 'general',
        source: 'manual',
        importance: 0.8,
        strength: 1,
        salience: 1,
        accessCount: 0,
        lastAccessedAt: null,
        pinned: true,
        sourceMessageIds: [3, 4],
        sourceIds: [],
        archivedAt: null,
        createdAt: '2024-06-15T12:00:00.000Z',
        updatedAt: '2024-06-15T12:00:00.000Z',
        validFrom: '2024-06-15T12:00:00.000Z',
        embeddingModel: model.modelId,
      });
    });

    it('returns memories in the order their ids were asked for, skipping unknown ids', async () => {
      const stored = await storage.memories.insert(
        [await newMemory('first memory'), await newMemory('second memory')],
        context,
      );
      const ids = stored.map((memory) => memory.id);
      const read = await storage.memories.get([ids[1] ?? 0, 999_999, ids[0] ?? 0]);
      expect(read.map((memory) => memory.content)).toEqual(['second memory', 'first memory']);
    });

    it('finds a stored memory by text and by vector', async () => {
      const [stored] = await storage.memories.insert([await newMemory('The deploy runs on Kubernetes')], context);
      const text = await storage.memories.searchText({ terms: ['kubernetes'], owners: ['global'], limit: 10 });
      expect(text.map((hit) => hit.id)).toEqual([stored?.id]);
      const vector = await storage.memories.searchVector({
        vector: await queryVector('The deploy runs on Kubernetes'),
        model: model.modelId,
        owners: ['global'],
        limit: 10,
      });
      if (!vectorSearch) {
        expect(vector).toEqual([]);
        return;
      }
      expect(vector[0]?.id).toBe(stored?.id);
      expect(vector[0]?.score).toBeCloseTo(1, 5);
    });

    it('counts the memories each search term is in, stemmed as the full-text search matches it', async () => {
      await storage.memories.insert(
        [
          await newMemory('Oz edits code in Helix'),
          await newMemory('Oz switched editors twice'),
          await newMemory('the editor crashed'),
        ],
        context,
      );
      const counted = await storage.memories.termCounts(['oz', 'editor', 'helix', 'emacs'], { owners: null });
      expect(counted.counts).toEqual([2, 2, 1, 0]);
      expect(counted.memories).toBeGreaterThanOrEqual(3);
    });

    it('counts no word of a purged user, even a word it counted before the purge', async () => {
      await storage.memories.insert(
        [
          await newMemory('Bob flies gliders', { scope: 'personal', userId: 'bob' }),
          await newMemory('Ann waters the plants', { scope: 'personal', userId: 'ann' }),
        ],
        context,
      );
      expect((await storage.memories.termCounts(['gliders'], { owners: null })).counts).toEqual([1]);
      await storage.memories.purgeUser('bob');
      expect((await storage.memories.termCounts(['gliders'], { owners: null })).counts).toEqual([0]);
    });

    it("counts a viewer's words over the owner keys it may see, equal to a recount after every kind of write", async () => {
      // An import (into the empty database), then inserts, an edit, an archive, a restore, a merge and a purge.
      const session = await storage.transfer.beginImport();
      await session.putUsers(
        ['ann', 'bob'].map((id) => ({ id, displayName: null, createdAt: at, updatedAt: at, leftNames: [] })),
      );
      await session.insertMemories([
        { ...importedFields, ...(await newMemory('imported kestrel marmot', { scope: 'personal', userId: 'bob' })) },
        { ...importedFields, ...(await newMemory('imported glider', { scope: 'personal', userId: 'ann' })) },
      ]);
      await session.commit();
      const [annKestrel, annMarmot, bobKestrel, bobGlider, , , annContext] = await storage.memories.insert(
        [
          await newMemory('kestrel glider', { scope: 'personal', userId: 'ann' }),
          await newMemory('marmot', { scope: 'personal', userId: 'ann' }),
          await newMemory('kestrel kestrel heron', { scope: 'personal', userId: 'bob' }),
          await newMemory('glider', { scope: 'personal', userId: 'bob' }),
          await newMemory('heron kestrel', { scope: 'room', channelId: 'r' }),
          await newMemory('marmot heron'),
          {
            ...(await newMemory('yes', { scope: 'personal', userId: 'ann' })),
            searchContext: 'Bob: a kestrel?',
          },
        ],
        context,
      );
      await storage.memories.update(annMarmot?.id ?? 0, { content: 'marmot kestrel' }, context);
      await storage.memories.archive([bobGlider?.id ?? 0, bobKestrel?.id ?? 0], context);
      await storage.memories.restore(bobGlider?.id ?? 0, null, context);
      await storage.maintenance.merge(
        await newMemory('glider heron', { scope: 'personal', userId: 'ann' }),
        [annKestrel?.id ?? 0, annContext?.id ?? 0],
        context,
      );
      const counted = async () => {
        const all = await storage.transfer.memories(0, 1000);
        for (const owners of [
          ['global', 'user:ann'],
          ['global', 'user:ann', 'room:r'],
          ['global', 'user:bob'],
          ['user:bob'],
          ['global'],
          ['room:nobody'],
        ]) {
          const words = ['kestrel', 'glider', 'marmot', 'heron', 'imported', 'yes'];
          const mine = all.filter((memory) => owners.includes(memory.owner));
          const recount = words.map(
            (word) =>
              mine.filter((memory) =>
                `${memory.content} ${memory.searchContext ?? ''}`
                  .toLowerCase()
                  .split(/[^a-z]+/)
                  .includes(word),
              ).length,
          );
          expect({ owners, ...(await storage.memories.termCounts(words, { owners })) }).toEqual({
            owners,
            memories: mine.length,
            counts: recount,
          });
        }
      };
      await counted();
      await storage.memories.purgeUser('bob');
      await counted();
      expect((await storage.memories.termCounts(['kestrel'], { owners: ['user:bob'] })).counts).toEqual([0]);
    });

    it("counts a viewer's words the same whether memories of owners it may not see hold them or not", async () => {
      const alice = visibleOwners({ userId: 'alice' });
      await storage.memories.insert(
        [
          await newMemory('the quokkaridge trail', { scope: 'personal', userId: 'alice' }),
          await newMemory('the helixmoor trail', { scope: 'personal', userId: 'alice' }),
        ],
        context,
      );
      const seen = async () => ({
        counts: await storage.memories.termCounts(['quokkaridge', 'helixmoor', 'trail'], { owners: alice }),
        bounded: await storage.memories.termCounts(['quokkaridge', 'helixmoor'], { owners: alice, exactUpTo: 3 }),
      });
      const before = await seen();
      expect(before.counts).toEqual({ memories: 2, counts: [1, 1, 2] });
      const others = [];
      for (let index = 0; index < 25; index++) {
        others.push(
          await newMemory(`quokkaridge ${index}`, { scope: 'personal', userId: 'bob' }, false),
          await newMemory(`quokkaridge trail ${index}`, { scope: 'room', channelId: 'elsewhere' }, false),
        );
      }
      await storage.memories.insert(others, context);
      expect(await seen()).toEqual(before);
      // A viewer who may see the room counts its words.
      const inRoom = await storage.memories.termCounts(['quokkaridge'], {
        owners: visibleOwners({ userId: 'alice', channelId: 'elsewhere' }),
      });
      expect(inRoom).toEqual({ memories: 27, counts: [26] });
    });

    it('counts exactly up to a bound when asked: a term in more memories counts the bound plus one', async () => {
      await storage.memories.insert(
        [
          await newMemory('Oz edits code in Helix'),
          await newMemory('Oz switched editors twice'),
          await newMemory('Oz likes the editor'),
          await newMemory('the editor crashed'),
        ],
        context,
      );
      const counted = await storage.memories.termCounts(['oz', 'editor', 'helix', 'emacs'], {
        owners: null,
        exactUpTo: 2,
      });
      expect(counted.counts).toEqual([3, 3, 1, 0]);
      const whole = await storage.memories.termCounts(['oz', 'editor'], { owners: null, exactUpTo: 10 });
      expect(whole.counts).toEqual([3, 3]);
      // Only words the index may have no term for (stop words in PostgreSQL): counted all the same.
      const stopWords = await storage.memories.termCounts(['the', 'of'], { owners: null, exactUpTo: 10 });
      expect(stopWords.counts).toHaveLength(2);
      expect(stopWords.counts[1]).toBe(0);
    });

    it('finds a memory by its search-only context, which stays out of its content', async () => {
      const [stored] = await storage.memories.insert(
        [{ ...(await newMemory('Bob: Up to the glacier lake!')), searchContext: 'Ann: Where did you go hiking?' }],
        context,
      );
      const hits = await storage.memories.searchText({ terms: ['hiking'], owners: ['global'], limit: 5 });
      expect(hits.map((hit) => hit.id)).toEqual([stored?.id]);
      expect(stored?.content).toBe('Bob: Up to the glacier lake!');
    });

    it('writes nothing of a batch when one memory of it fails', async () => {
      const batch = [
        await newMemory('a memory that must not survive'),
        await newMemory('session memory with a missing topic', { scope: 'session', topicId: 'no-such-topic' }),
      ];
      await expect(storage.memories.insert(batch, context)).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect((await storage.memories.list(allActive())).total).toBe(0);
      expect(await storage.memories.searchText({ terms: ['survive'], owners: null, limit: 10 })).toEqual([]);
      const vectorHits = await storage.memories.searchVector({
        vector: await queryVector('a memory that must not survive'),
        model: model.modelId,
        owners: null,
        limit: 10,
      });
      expect(vectorHits).toEqual([]);
    });

    it('stores a session memory only for an existing topic', async () => {
      await storage.directory.putTopic({ id: 'topic-1', projectId: null, title: 'planning' }, at);
      const [stored] = await storage.memories.insert(
        [await newMemory('we ship on Fridays', { scope: 'session', topicId: 'topic-1' })],
        context,
      );
      expect(stored).toMatchObject({ scope: 'session', topicId: 'topic-1' });
    });

    it('refuses, storing nothing, to insert memories built from a message or memory a purge deleted, when the sources must exist', async () => {
      const [zed, ann] = await storage.messages.append([said('zed', 'Zed hides the key'), said('ann', 'Ann waters')]);
      const [zeds] = await storage.memories.insert([await newMemory('Zed hides the key', { userId: 'zed' })], context);
      await storage.memories.purgeUser('zed');
      const before = (await storage.memories.stats(at)).total;
      const fromMessages = await newMemory('Zed hides the key; Ann waters', {
        source: 'episode',
        sourceMessageIds: [zed?.id ?? 0, ann?.id ?? 0],
      });
      const fromMemory = await newMemory('Zed is secretive', { source: 'dream', sourceIds: [zeds?.id ?? 0] });
      for (const memory of [fromMessages, fromMemory]) {
        const fine = await newMemory('Ann waters the plants', { sourceMessageIds: [ann?.id ?? 0] });
        await expect(
          storage.memories.insert([fine, memory], context, { sourcesMustExist: true }),
        ).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringMatching(/no longer exist/) });
      }
      expect((await storage.memories.stats(at)).total).toBe(before);
      const kept = await storage.memories.insert(
        [await newMemory('Ann waters the plants', { sourceMessageIds: [ann?.id ?? 0] })],
        context,
        { sourcesMustExist: true },
      );
      expect(kept).toHaveLength(1);
      // Without the option, what the caller built is stored as it is (imports and tests name any ids).
      expect(await storage.memories.insert([fromMessages], context)).toHaveLength(1);
    });

    it('refuses an insight or a merge built on a memory an audience change moved out of its owner meanwhile', async () => {
      const [kept, moved] = await storage.memories.insert(
        [await newMemory('The vault code is walrus'), await newMemory('The vault code is walrus, said twice')],
        context,
      );
      await storage.memories.moveTo(moved?.id ?? 0, { scope: 'room', channelId: 'c' }, context);
      const before = (await storage.memories.stats(at)).total;
      const insight = await newMemory('Everyone knows the vault code', {
        source: 'dream',
        sourceIds: [kept?.id ?? 0, moved?.id ?? 0],
      });
      await expect(storage.memories.insert([insight], context, { sourcesMustExist: true })).rejects.toMatchObject({
        code: ErrorCode.Conflict,
        message: expect.stringContaining(`memory ${moved?.id}`),
      });
      const merged = await newMemory('The vault code is walrus', { source: 'consolidation' });
      await expect(storage.maintenance.merge(merged, [kept?.id ?? 0, moved?.id ?? 0], context)).rejects.toMatchObject({
        code: ErrorCode.Conflict,
      });
      expect((await storage.memories.stats(at)).total).toBe(before);
      expect((await storage.memories.get([kept?.id ?? 0, moved?.id ?? 0])).map((m) => m.archivedAt)).toEqual([
        null,
        null,
      ]);
    });

    it('writes a merged memory with what an inserted one keeps: its search-only context and the message it quotes', async () => {
      const [question] = await storage.messages.append([
        {
          channelId: 'c',
          senderId: 'ann',
          role: 'user',
          content: 'Where did you go hiking?',
          topicId: null,
          createdAt: at,
        },
      ]);
      const originals = await storage.memories.insert(
        [await newMemory('Bob: Up to the glacier lake'), await newMemory('Bob: up to the glacier lake!')],
        context,
      );
      const { merged } = await storage.maintenance.merge(
        {
          ...(await newMemory('Bob: Up to the glacier lake!', { sourceIds: originals.map((memory) => memory.id) })),
          searchContext: 'Ann: Where did you go hiking?',
          searchContextMessageId: question?.id ?? 0,
        },
        originals.map((memory) => memory.id),
        context,
      );
      const hits = async () => storage.memories.searchText({ terms: ['hiking'], owners: ['global'], limit: 5 });
      expect((await hits()).map((hit) => hit.id)).toEqual([merged.id]);

      await storage.memories.purgeUser('ann');
      expect(await hits()).toEqual([]);
      // Kept, without the vector made from Ann's words too, to be embedded again from its own.
      expect(await storage.memories.get([merged.id])).toEqual([{ ...merged, embeddingModel: null }]);
    });

    it('refuses to merge into a session memory of a missing topic as insert does, writing nothing', async () => {
      const originals = await storage.memories.insert([await newMemory('we ship on Fridays')], context);
      const orphan = await newMemory('we ship on Fridays, after the review', {
        scope: 'session',
        topicId: 'no-such-topic',
      });
      const refusal = await storage.memories.insert([orphan], context).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refusal).toMatchObject({ code: ErrorCode.NotFound, message: expect.stringContaining('no-such-topic') });
      await expect(
        storage.maintenance.merge(
          orphan,
          originals.map((memory) => memory.id),
          context,
        ),
      ).rejects.toEqual(refusal);
      expect(await storage.memories.list(allActive())).toMatchObject({ total: 1, memories: originals });
    });

    it('keeps a version for create, update, archive and restore, with who, when and what changed', async () => {
      const [stored] = await storage.memories.insert([await newMemory('Oz likes tea')], context);
      const id = stored?.id ?? 0;
      await storage.memories.update(
        id,
        { content: 'Oz likes green tea', importance: 0.9, embedding: await embed('Oz likes green tea') },
        { at: at + 1000, actor: 'editor', reason: 'more precise' },
      );
      await storage.memories.archive([id], { at: at + 2000, actor: 'cleaner', reason: 'outdated' });
      await storage.memories.restore(id, await embed('Oz likes green tea'), { at: at + 3000, actor: 'editor' });
      const history = await storage.memories.history(id);
      expect(history.map((version) => [version.version, version.action, version.actor])).toEqual([
        [1, 'create', 'tester'],
        [2, 'update', 'editor'],
        [3, 'archive', 'cleaner'],
        [4, 'restore', 'editor'],
      ]);
      expect(history[1]).toMatchObject({
        reason: 'more precise',
        createdAt: '2024-06-15T12:00:01.000Z',
        changes: {
          content: { from: 'Oz likes tea', to: 'Oz likes green tea' },
          importance: { from: 0.5, to: 0.9 },
        },
        snapshot: { content: 'Oz likes green tea', importance: 0.9 },
      });
      expect(history[2]?.changes).toEqual({ archivedAt: { from: null, to: '2024-06-15T12:00:02.000Z' } });
      expect(history[2]?.reason).toBe('outdated');
      const versions = async (page: { after?: number; limit?: number }) =>
        (await storage.memories.history(id, page)).map((version) => version.version);
      expect(await versions({ limit: 2 })).toEqual([1, 2]);
      expect(await versions({ after: 2, limit: 1 })).toEqual([3]);
      expect(await versions({ after: 2 })).toEqual([3, 4]);
      expect(await versions({ after: 4, limit: 10 })).toEqual([]);
    });

    it('re-indexes text and vector when content changes', async () => {
      const [stored] = await storage.memories.insert([await newMemory('the cat sleeps on the sofa')], context);
      const id = stored?.id ?? 0;
      await storage.memories.update(
        id,
        { content: 'the dog barks at the mailman', embedding: await embed('the dog barks at the mailman') },
        context,
      );
      expect(await storage.memories.searchText({ terms: ['sofa'], owners: null, limit: 10 })).toEqual([]);
      const hits = await storage.memories.searchText({ terms: ['mailman'], owners: null, limit: 10 });
      expect(hits.map((hit) => hit.id)).toEqual([id]);
      const nearest = await storage.memories.searchVector({
        vector: await queryVector('the dog barks at the mailman'),
        model: model.modelId,
        owners: null,
        limit: 1,
      });
      if (!vectorSearch) {
        expect(nearest).toEqual([]);
        return;
      }
      expect(nearest[0]?.score).toBeCloseTo(1, 5);
    });

    it('finds by a minimum cosine only the neighbours at least that close, and by the rarest terms when capped', async () => {
      const texts = ['the cat sleeps on the sofa', 'the cat sleeps on the sofa today', 'the printer is broken'];
      const stored = await storage.memories.insert(await Promise.all(texts.map((text) => newMemory(text))), context);
      const query = await queryVector('the cat sleeps on the sofa');
      const all = await storage.memories.searchVector({ vector: query, model: model.modelId, owners: null, limit: 3 });
      const threshold = ((all[1]?.score ?? 0) + (all[2]?.score ?? 0)) / 2;
      const near = await storage.memories.searchVector({
        vector: query,
        model: model.modelId,
        owners: null,
        limit: 3,
        minScore: threshold,
      });
      expect(near.map((hit) => hit.id)).toEqual(all.slice(0, 2).map((hit) => hit.id));
      // "cat" is in two memories, "printer" in one: capped to one term, the search is by "printer".
      const capped = await storage.memories.searchText({
        terms: ['cat', 'printer'],
        owners: null,
        limit: 10,
        maxTerms: 1,
      });
      expect(capped.map((hit) => hit.id)).toEqual([stored[2]?.id]);
    });

    it('reads the time decay is applied up to: set by an edit that gives one, or by stored downgrades', async () => {
      const [edited, downgraded, untouched] = await storage.memories.insert(
        [await newMemory('Oz likes tea'), await newMemory('Mia uses vim'), await newMemory('the printer is broken')],
        context,
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      expect(await storage.memories.decayedAt([id(edited), id(downgraded), id(untouched)])).toEqual(new Map());
      const before = await storage.memories.history(id(edited));
      const same = await storage.memories.update(id(edited), { importance: 0.5, decayedAt: at + 1000 }, context);
      expect(same).toMatchObject({ importance: 0.5 });
      expect(await storage.memories.history(id(edited))).toEqual(before);
      const read = (await storage.maintenance.decayCandidates(0, 100)).find((memory) => memory.id === id(downgraded));
      if (!read) throw new Error('the downgraded memory is not a decay candidate');
      await storage.maintenance.applyImportanceChanges(
        [{ id: id(downgraded), importance: 0.4, decayedAt: at + 2000, read }],
        {
          ...context,
          reason: 'decay',
        },
      );
      expect(await storage.memories.decayedAt([id(untouched), id(downgraded), id(edited), 424_242])).toEqual(
        new Map([
          [id(downgraded), at + 2000],
          [id(edited), at + 1000],
        ]),
      );
      expect(await storage.memories.decayedAt([])).toEqual(new Map());
    });

    it('writes what decay, a retrieval or a merge computed only over the memory as it was read (attack 31c)', async () => {
      const [kept, pinned, retrieved, edited, gone, source] = await storage.memories.insert(
        await Promise.all(
          ['Oz likes tea', 'Mia uses vim', 'the printer is broken', 'Ann walks to work', 'Lee owns a boat', 'Kim'].map(
            (content) => newMemory(content, {}, false),
          ),
        ),
        context,
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      const read = new Map((await storage.maintenance.decayCandidates(0, 100)).map((memory) => [memory.id, memory]));
      const asRead = (memory: { id: number } | undefined) => {
        const candidate = read.get(id(memory));
        if (!candidate) throw new Error(`memory ${id(memory)} is not a decay candidate`);
        return candidate;
      };
      // Written since the read: a pin, a retrieval, an edit of the importance, a purge's delete (a forget here).
      await storage.memories.update(id(pinned), { pinned: true }, context);
      await storage.memories.touch([{ id: id(retrieved) }], at + 1000);
      await storage.memories.update(id(edited), { importance: 0.9, decayedAt: at + 1000 }, context);
      await storage.memories.archive([id(gone)], context);

      const changes = [kept, edited].map((memory) => ({
        id: id(memory),
        importance: 0.3,
        decayedAt: at + 2000,
        read: asRead(memory),
      }));
      expect(await storage.maintenance.applyImportanceChanges(changes, { ...context, reason: 'decay' })).toEqual([
        id(kept),
      ]);
      const rested = await storage.maintenance.putToRest(
        [{ ...asRead(kept), importance: 0.3, decayedAt: at + 2000 }, ...[pinned, retrieved, edited, gone].map(asRead)],
        { ...context, reason: 'decay' },
      );
      expect(rested).toEqual([id(kept)]);
      const after = await storage.memories.get([kept, pinned, retrieved, edited, gone].map(id));
      expect(after.map((memory) => [memory.importance, memory.fadedAt !== null, memory.archivedAt !== null])).toEqual([
        [0.3, true, true],
        [0.5, false, false],
        [0.5, false, false],
        [0.9, false, false],
        [0.5, false, true],
      ]);

      // A retrieval's reinforcement over a memory whose importance changed since the recall read it: counted, not written.
      await storage.memories.touch(
        [{ id: id(edited), importance: 0.7, read: { strength: 1, salience: 0, importance: 0.5 } }],
        at + 3000,
      );
      const [touched] = await storage.memories.get([id(edited)]);
      expect([touched?.importance, touched?.accessCount]).toEqual([0.9, 1]);

      // A merge of originals one of which was edited since read; an insert built on a forgotten memory.
      const mergedRead = [retrieved, edited].map((memory) => ({
        id: id(memory),
        content: memory?.content ?? '',
        category: memory?.category ?? 'fact',
        importance: 0.5,
      }));
      await expect(
        storage.maintenance.merge(
          await newMemory('merged', {}, false),
          mergedRead.map((memory) => memory.id),
          context,
          mergedRead,
        ),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
      await storage.memories.archive([id(source)], context);
      await expect(
        storage.memories.insert([await newMemory('insight', { sourceIds: [id(source)] }, false)], context, {
          sourcesMustExist: true,
        }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('refuses an edit, a forget or a restore made for a viewer whose owner keys the memory left (attack 31c)', async () => {
      const [active, archived] = await storage.memories.insert(
        [await newMemory('Oz likes tea', {}, false), await newMemory('Mia uses vim', {}, false)],
        context,
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      await storage.memories.archive([id(archived)], context);
      const elsewhere = { ...context, visibleTo: ['room:team'] };
      await expect(storage.memories.update(id(active), { importance: 0.9 }, elsewhere)).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      await expect(storage.memories.archive([id(active)], elsewhere)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(storage.memories.restore(id(archived), null, elsewhere)).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      const seen = { ...context, visibleTo: ['global', 'room:team'] };
      expect(await storage.memories.update(id(active), { importance: 0.9 }, seen)).toMatchObject({ importance: 0.9 });
      expect(await storage.memories.restore(id(archived), null, seen)).toMatchObject({ archivedAt: null });
    });

    it('refuses to edit an archived memory and an unknown one', async () => {
      const [stored] = await storage.memories.insert([await newMemory('temporary')], context);
      const id = stored?.id ?? 0;
      await storage.memories.archive([id], context);
      await expect(storage.memories.update(id, { importance: 1 }, context)).rejects.toMatchObject({
        code: ErrorCode.Conflict,
      });
      await expect(storage.memories.update(424_242, { importance: 1 }, context)).rejects.toMatchObject({
        code: ErrorCode.NotFound,
      });
      await expect(storage.memories.archive([id], context)).rejects.toMatchObject({ code: ErrorCode.Conflict });
    });

    it('removes the vector and hides the memory from searches when it is archived', async () => {
      const [kept, forgotten] = await storage.memories.insert(
        [await newMemory('the office coffee machine is broken'), await newMemory('the office printer is broken')],
        context,
      );
      const [archived] = await storage.memories.archive([forgotten?.id ?? 0], context);
      expect(archived?.archivedAt).toBe('2024-06-15T12:00:00.000Z');
      expect(archived?.embeddingModel).toBeNull();
      const text = await storage.memories.searchText({ terms: ['broken'], owners: null, limit: 10 });
      expect(text.map((hit) => hit.id)).toEqual([kept?.id]);
      const vector = await storage.memories.searchVector({
        vector: await queryVector('the office printer is broken'),
        model: model.modelId,
        owners: null,
        limit: 10,
      });
      if (!vectorSearch) {
        expect(vector).toEqual([]);
        return;
      }
      expect(vector.map((hit) => hit.id)).toEqual([kept?.id]);

      await storage.memories.restore(forgotten?.id ?? 0, await embed('the office printer is broken'), context);
      const again = await storage.memories.searchVector({
        vector: await queryVector('the office printer is broken'),
        model: model.modelId,
        owners: null,
        limit: 1,
      });
      expect(again[0]?.id).toBe(forgotten?.id);
    });

    it('reads the id, owner and text of the active memories after an id, oldest first, as listAfter lists them', async () => {
      const [first, second, third] = await storage.memories.insert(
        [
          await newMemory('the release train leaves on Tuesday'),
          await newMemory('Oz prefers tea', { scope: 'personal', userId: 'oz' }),
          await newMemory('the build is green'),
        ],
        context,
      );
      await storage.memories.archive([second?.id ?? 0], context);
      const listed = await storage.maintenance.listAfter(0, 10);
      expect(await storage.maintenance.textsAfter(0, 10)).toEqual(
        listed.map((memory) => ({ id: memory.id, owner: ownerKey(memory.scope, memory), content: memory.content })),
      );
      expect(listed.map((memory) => memory.id)).toEqual([first?.id, third?.id]);
      expect(await storage.maintenance.textsAfter(first?.id ?? 0, 1)).toEqual([
        { id: third?.id, owner: 'global', content: 'the build is green' },
      ]);
    });

    it('lists by scope, owner, category and archive state, newest first, a page at a time', async () => {
      await storage.memories.insert(
        [
          await newMemory('global one'),
          await newMemory('oz one', { scope: 'personal', userId: 'oz', category: 'preference' }),
          await newMemory('oz two', { scope: 'personal', userId: 'oz' }),
          await newMemory('room one', { scope: 'room', channelId: 'general' }),
        ],
        context,
      );
      await storage.memories.insert([await newMemory('oz three', { scope: 'personal', userId: 'oz' })], {
        ...context,
        at: at + 1,
      });
      const oz = await storage.memories.list({ ...allActive(), userId: 'oz' });
      expect(oz.total).toBe(3);
      expect(oz.memories[0]?.content).toBe('oz three');
      const preferences = await storage.memories.list({ ...allActive(), category: 'preference' });
      expect(preferences.memories.map((memory) => memory.content)).toEqual(['oz one']);
      const rooms = await storage.memories.list({ ...allActive(), scope: 'room' });
      expect(rooms.memories.map((memory) => memory.content)).toEqual(['room one']);
      const page = await storage.memories.list({ ...allActive(), limit: 2, offset: 2 });
      expect(page).toMatchObject({ total: 5, limit: 2, offset: 2 });
      expect(page.memories).toHaveLength(2);

      await storage.memories.archive([oz.memories[0]?.id ?? 0], context);
      expect((await storage.memories.list({ ...allActive(), userId: 'oz' })).total).toBe(2);
      expect((await storage.memories.list({ ...allActive(), archived: 'only' })).total).toBe(1);
      expect((await storage.memories.list({ ...allActive(), archived: 'include' })).total).toBe(5);
    });

    it("never returns one user's personal memory, or a room memory, to a viewer outside that scope", async () => {
      await storage.memories.insert(
        [
          await newMemory('Ann keeps her passport in the blue drawer', { scope: 'personal', userId: 'ann' }),
          await newMemory('the blue drawer in room alpha is locked', { scope: 'room', channelId: 'alpha' }),
          await newMemory('the blue drawer is public knowledge'),
        ],
        context,
      );
      const ann = visibleOwners({ userId: 'ann', channelId: 'alpha' });
      const bob = visibleOwners({ userId: 'bob', channelId: 'beta' });
      const contentsOf = async (owners: string[]) => {
        const text = await storage.memories.searchText({ terms: ['blue', 'drawer'], owners, limit: 10 });
        const vector = await storage.memories.searchVector({
          vector: await queryVector('blue drawer'),
          model: model.modelId,
          owners,
          limit: 10,
        });
        const listed = await storage.memories.list({ ...allActive(), owners });
        const ids = new Set([...text, ...vector].map((hit) => hit.id));
        const found = await storage.memories.get([...ids]);
        return {
          searched: found.map((memory) => memory.content).sort(),
          listed: listed.memories.map((memory) => memory.content).sort(),
        };
      };
      const everything = [
        'Ann keeps her passport in the blue drawer',
        'the blue drawer in room alpha is locked',
        'the blue drawer is public knowledge',
      ];
      expect(await contentsOf(ann)).toEqual({ searched: everything, listed: everything });
      expect(await contentsOf(bob)).toEqual({
        searched: ['the blue drawer is public knowledge'],
        listed: ['the blue drawer is public knowledge'],
      });
    });

    itSearchesVectors(
      'filters by scope inside the vector search, so closer memories of others do not crowd out the visible one',
      async () => {
        const others = await Promise.all(
          Array.from({ length: 30 }, (_, index) =>
            newMemory(`garden tomato plan ${index}`, { scope: 'personal', userId: `user-${index}` }),
          ),
        );
        await storage.memories.insert(others, context);
        const [mine] = await storage.memories.insert(
          [await newMemory('unrelated words entirely', { scope: 'personal', userId: 'me' })],
          context,
        );
        const hits = await storage.memories.searchVector({
          vector: await queryVector('garden tomato plan'),
          model: model.modelId,
          owners: visibleOwners({ userId: 'me' }),
          limit: 3,
        });
        expect(hits.map((hit) => hit.id)).toEqual([mine?.id]);
      },
    );

    itSearchesVectors(
      'keeps the scope filter inside the vector index: 1,000 closer vectors of other users do not hide the visible ones',
      async () => {
        const query = 'kestrel nesting on the old mill tower';
        const others = await Promise.all(
          Array.from({ length: 1000 }, (_, index) =>
            newMemory(
              `${query} ${index}`,
              index % 4
                ? { scope: 'personal', userId: `neighbour-${index}` }
                : {
                    scope: 'room',
                    channelId: `room-${index}`,
                  },
            ),
          ),
        );
        await storage.memories.insert(others, context);
        const [mine, shared, unrelated] = await storage.memories.insert(
          [
            await newMemory('a kestrel nesting somewhere', { scope: 'personal', userId: 'me' }),
            await newMemory('the mill tower is old'),
            await newMemory('invoices fall due every monday'),
          ],
          context,
        );
        const hits = await storage.memories.searchVector({
          vector: await queryVector(query),
          model: model.modelId,
          owners: visibleOwners({ userId: 'me' }),
          limit: 10,
        });
        expect(hits.map((hit) => hit.id).sort()).toEqual([mine?.id, shared?.id, unrelated?.id].sort());
        expect(hits[2]?.id).toBe(unrelated?.id);
        const neighbour = await storage.memories.searchVector({
          vector: await queryVector(query),
          model: model.modelId,
          owners: visibleOwners({ userId: 'neighbour-7' }),
          limit: 1,
        });
        const [seven] = await storage.memories
          .list({
            ...allActive(),
            owners: ['user:neighbour-7'],
          })
          .then((page) => page.memories);
        expect(neighbour.map((hit) => hit.id)).toEqual([seven?.id]);
      },
      // 1,001 memories embedded and inserted: PGlite takes 35-40 s on two busy cores.
      120_000,
    );

    it('never compares vectors of two models: a model change empties the index', async () => {
      await storage.memories.insert([await newMemory('vectors of the first model')], context);
      const reset = await storage.configureVectors({ model: 'other-model', dimensions: 16 });
      expect(reset).toBe(true);
      expect(await storage.vectorIndex()).toEqual({ model: 'other-model', dimensions: 16 });
      const oldModelHits = await storage.memories.searchVector({
        vector: await queryVector('vectors of the first model'),
        model: model.modelId,
        owners: null,
        limit: 10,
      });
      expect(oldModelHits).toEqual([]);
      const newModelHits = await storage.memories.searchVector({
        vector: new Float32Array(16).fill(0.25),
        model: 'other-model',
        owners: null,
        limit: 10,
      });
      expect(newModelHits).toEqual([]);
      const listed = await storage.memories.list(allActive());
      expect(listed.memories.map((memory) => memory.embeddingModel)).toEqual([null]);
      expect(await storage.configureVectors({ model: 'other-model', dimensions: 16 })).toBe(false);
    });

    it('lists memories without a vector of the current model by id, and stores their vectors unless they changed', async () => {
      const [first, second, third, gone] = await storage.memories.insert(
        [
          await newMemory('one without a vector', {}, false),
          await newMemory('two with a vector'),
          await newMemory('three without a vector', { scope: 'personal', userId: 'ann' }, false),
          await newMemory('four archived', {}, false),
        ],
        context,
      );
      if (!first || !second || !third || !gone) throw new Error('insert returned too few memories');
      await storage.memories.archive([gone.id], context);
      const backfill = storage.vectorBackfill;
      expect(await backfill.countMissing(model.modelId)).toBe(2);
      expect(await backfill.listMissing(model.modelId, 0, 10)).toEqual([
        { id: first.id, content: 'one without a vector' },
        { id: third.id, content: 'three without a vector' },
      ]);
      expect(await backfill.listMissing(model.modelId, first.id, 10)).toEqual([
        { id: third.id, content: 'three without a vector' },
      ]);
      expect(await backfill.listMissing(model.modelId, 0, 1)).toHaveLength(1);

      await storage.memories.update(third.id, { content: 'three, edited' }, context);
      const written = await backfill.putVectors([
        { id: first.id, content: 'one without a vector', embedding: await embed('one without a vector') },
        { id: third.id, content: 'three without a vector', embedding: await embed('three without a vector') },
        { id: gone.id, content: 'four archived', embedding: await embed('four archived') },
      ]);
      expect(written).toEqual([first.id]);
      expect((await storage.memories.get([first.id]))[0]?.embeddingModel).toBe(model.modelId);
      const hits = await storage.memories.searchVector({
        vector: await queryVector('one without a vector'),
        model: model.modelId,
        owners: null,
        limit: 1,
      });
      expect(hits.map((hit) => hit.id)).toEqual(vectorSearch ? [first.id] : []);
      expect(await backfill.countMissing(model.modelId)).toBe(1);
      expect(await backfill.countMissing('another-model')).toBe(3);
    });

    it('purges every memory, vector, version and link of one user and no one else', async () => {
      const ann = await storage.memories.insert(
        [
          await newMemory('Ann likes sailing', { scope: 'personal', userId: 'ann' }),
          await newMemory('Ann said the team meets Mondays', { scope: 'room', channelId: 'alpha', userId: 'ann' }),
        ],
        context,
      );
      const [bob] = await storage.memories.insert(
        [await newMemory('Bob likes sailing too', { scope: 'personal', userId: 'bob' })],
        context,
      );
      await storage.memories.update(ann[0]?.id ?? 0, { importance: 0.9 }, { at, actor: 'ann' });
      await storage.memories.update(bob?.id ?? 0, { importance: 0.7 }, { at, actor: 'ann' });
      await storage.directory.putUser({ id: 'ann', displayName: 'Ann' }, at);
      // A stored response may quote Ann whoever sent the request: every stored response is erased, the key stays.
      const key = { principal: 'user:bob', key: 'k1', requestSha256: 'r1', now: at, lockedUntil: at + 60_000 };
      await storage.idempotency.claim({ ...key, expiresAt: at + 86_400_000 });
      await storage.idempotency.complete({ ...key, expiresAt: at + 86_400_000 }, { status: 202, body: '{}' });

      const report = await storage.memories.purgeUser('ann');
      expect(report).toMatchObject({ userId: 'ann', memories: 2, vectors: 2, versions: 3 });
      expect(await storage.memories.get(ann.map((memory) => memory.id))).toEqual([]);
      expect(await storage.directory.getUser('ann')).toBeNull();
      await expect(storage.memories.history(ann[0]?.id ?? 0)).rejects.toBeInstanceOf(MnemeError);
      const hits = await storage.memories.searchText({ terms: ['sailing'], owners: null, limit: 10 });
      expect(hits.map((hit) => hit.id)).toEqual([bob?.id]);
      const vectorHits = await storage.memories.searchVector({
        vector: await queryVector('Ann likes sailing'),
        model: model.modelId,
        owners: null,
        limit: 10,
      });
      expect(vectorHits.map((hit) => hit.id)).toEqual(vectorSearch ? [bob?.id] : []);
      const bobHistory = await storage.memories.history(bob?.id ?? 0);
      expect(bobHistory.map((version) => version.actor)).toEqual(['tester', null]);
      expect(await storage.idempotency.claim({ ...key, expiresAt: at + 86_400_000 })).toMatchObject({
        requestSha256: 'r1',
        status: 202,
        body: null,
      });
    });

    it('drops the vector of another user memory searched with a purged message, made from its words too', async () => {
      const [asked] = await storage.messages.append([said('ann', 'Ann: where did you hide the spare key?')]);
      const [kept] = await storage.memories.insert(
        [
          {
            ...(await newMemory('Bob: under the blue vase', { scope: 'personal', userId: 'bob' })),
            searchContext: 'Ann: where did you hide the spare key?',
            searchContextMessageId: asked?.id ?? 0,
          },
        ],
        context,
      );
      const nearest = async () =>
        (
          await storage.memories.searchVector({
            vector: await queryVector('Bob: under the blue vase'),
            model: model.modelId,
            owners: null,
            limit: 10,
          })
        ).map((hit) => hit.id);
      expect(await nearest()).toEqual(vectorSearch ? [kept?.id] : []);

      await storage.memories.purgeUser('ann');
      const [after] = await storage.memories.get([kept?.id ?? 0]);
      expect(after).toMatchObject({ content: 'Bob: under the blue vase', embeddingModel: null });
      expect(await nearest()).toEqual([]);
    });

    it('writes a message chat command in its append: a remembered memory citing it, the matches of a forget archived, none for a duplicate', async () => {
      const [old, gone, moved, bobs] = await storage.memories.insert(
        [
          await newMemory('Ann prefers dark mode', { scope: 'personal', userId: 'ann' }),
          await newMemory('Ann wanted dark mode', { scope: 'personal', userId: 'ann' }),
          await newMemory('Ann set dark mode', { scope: 'personal', userId: 'ann' }),
          await newMemory('Bob likes dark mode', { scope: 'personal', userId: 'bob' }),
        ],
        context,
      );
      // Archived already, moved to a room the command does not see, another user: none is archived by the forget.
      await storage.memories.archive([gone?.id ?? 0], context);
      await storage.memories.moveTo(moved?.id ?? 0, { scope: 'room', channelId: 'elsewhere' }, context);
      const personal = ownerKey('personal', { userId: 'ann' });
      const remember = async (text: string) => ({
        remember: { ...(await newMemory(text, { scope: 'personal', userId: 'ann' })) },
        context: { ...context, reason: '/remember' },
      });
      const peanuts = await remember('Ann is allergic to peanuts');
      const forget = {
        forget: {
          owners: [personal, ownerKey('personal', { userId: 'bob' })],
          userId: 'ann',
          matches: (content: string) => /dark mode/.test(content),
        },
        context: { ...context, reason: '/forget dark mode' },
      };
      const [remembered, , forgot] = await storage.messages.append([
        { ...said('ann', '/remember I am allergic to peanuts'), externalId: 'e1', command: peanuts },
        {
          ...said('ann', '/remember I want dark mode at night'),
          command: await remember('Ann wants dark mode at night'),
        },
        { ...said('ann', '/forget dark mode'), command: forget },
      ]);
      expect(remembered?.written?.remembered).toMatchObject({
        content: 'Ann is allergic to peanuts',
        sourceMessageIds: [remembered?.id],
      });
      // What the append itself remembered before the forget is forgotten with the older match.
      expect(forgot?.written?.forgotten.map((memory) => memory.content)).toEqual([
        'Ann prefers dark mode',
        'Ann wants dark mode at night',
      ]);
      const [oldAfter, movedAfter, bobsAfter] = await storage.memories.get([
        old?.id ?? 0,
        moved?.id ?? 0,
        bobs?.id ?? 0,
      ]);
      expect(oldAfter?.archivedAt).not.toBeNull();
      expect(movedAfter?.archivedAt).toBeNull();
      expect(bobsAfter?.archivedAt).toBeNull();

      const [again] = await storage.messages.append([
        { ...said('ann', '/remember I am allergic to peanuts'), externalId: 'e1', command: peanuts },
      ]);
      expect(again).toMatchObject({ id: remembered?.id, duplicate: true });
      expect(again?.written).toBeUndefined();
      const commands = await storage.memories.list({ owners: [personal], archived: 'include', limit: 50, offset: 0 });
      expect(commands.memories.filter((memory) => memory.content === 'Ann is allergic to peanuts')).toHaveLength(1);
    });

    it('never gives out again the ids of the newest message and memory a purge deleted', async () => {
      const [ann, bob] = await storage.messages.append([said('ann', 'Ann waters'), said('bob', 'Bob hides the key')]);
      const [, bobsMemory] = await storage.memories.insert(
        [
          await newMemory('Ann waters the plants', { scope: 'personal', userId: 'ann' }),
          await newMemory('Bob hides the key', { scope: 'personal', userId: 'bob' }),
        ],
        context,
      );
      await storage.memories.purgeUser('bob');
      const [next] = await storage.messages.append([said('ann', 'Ann waters again')]);
      const [nextMemory] = await storage.memories.insert([await newMemory('Ann waters again')], context);
      expect(next?.id).toBeGreaterThan(Math.max(ann?.id ?? 0, bob?.id ?? 0));
      expect(nextMemory?.id).toBeGreaterThan(bobsMemory?.id ?? Number.POSITIVE_INFINITY);
    });

    it('finds the memories citing a channel or of an owner with the channels they cite, and moves one into a room or to its user with its vector and word counts', async () => {
      const [inC] = await storage.messages.append([said('bob', 'The vault code is walrus')]);
      const [inD] = await storage.messages.append([{ ...said('bob', 'The vault is blue'), channelId: 'd' }]);
      const cites = [inC?.id ?? 0, inD?.id ?? 0];
      const [global, session, room, personal] = await storage.memories.insert(
        [
          await newMemory('The vault code is walrus', { sourceMessageIds: cites }),
          await newMemory('Bob keeps the walrus vault', {
            scope: 'room',
            channelId: 'x',
            sourceMessageIds: [cites[0] ?? 0],
          }),
          await newMemory('The walrus room vault', {
            scope: 'room',
            channelId: 'c',
            userId: 'bob',
            sourceMessageIds: [cites[0] ?? 0],
          }),
          await newMemory('Bob likes the walrus vault', { scope: 'personal', userId: 'bob', sourceMessageIds: cites }),
        ],
        context,
      );
      await storage.memories.archive([session?.id ?? 0], context);
      const cited = await storage.memories.citedChannels({ channelId: 'c' });
      expect(cited.map(({ memory, channelIds }) => [memory.id, memory.archivedAt !== null, channelIds])).toEqual([
        [global?.id, false, ['c', 'd']],
        [session?.id, true, ['c']],
      ]);
      expect(room && personal).toBeTruthy();
      expect((await storage.memories.citedChannels({ owner: 'room:x' })).map(({ memory }) => memory.id)).toEqual([
        session?.id,
      ]);

      const moved = await storage.memories.moveTo(
        global?.id ?? 0,
        { scope: 'room', channelId: 'c' },
        { ...context, reason: 'made private' },
      );
      expect(moved).toMatchObject({ scope: 'room', channelId: 'c', content: 'The vault code is walrus' });
      expect((await storage.memories.history(moved.id)).at(-1)).toMatchObject({
        action: 'update',
        reason: 'made private',
      });
      const counts = await storage.memories.termCounts(['walrus'], { owners: ['global'] });
      expect(counts.counts).toEqual([0]);
      expect((await storage.memories.searchText({ terms: ['walrus'], owners: ['global'], limit: 10 })).length).toBe(0);
      expect(
        (await storage.memories.searchText({ terms: ['walrus'], owners: ['room:c'], limit: 10 })).map((hit) => hit.id),
      ).toContain(moved.id);
      const vector = await queryVector('The vault code is walrus');
      expect(
        await storage.memories.searchVector({ vector, model: model.modelId, owners: ['global'], limit: 5 }),
      ).toEqual([]);
      const inRoom = await storage.memories.searchVector({
        vector,
        model: model.modelId,
        owners: ['room:c'],
        limit: 5,
      });
      expect(inRoom.map((hit) => hit.id)).toEqual(vectorSearch ? [moved.id, room?.id] : []);
      // An archived memory moves too.
      expect(await storage.memories.moveTo(session?.id ?? 0, { scope: 'room', channelId: 'c' }, context)).toMatchObject(
        {
          scope: 'room',
          channelId: 'c',
        },
      );
      // Into its user's own scope: the room it was in keeps its channel id; a memory of no user has none.
      expect(await storage.memories.moveTo(room?.id ?? 0, { scope: 'personal' }, context)).toMatchObject({
        scope: 'personal',
        userId: 'bob',
        channelId: 'c',
      });
      expect(
        (await storage.memories.searchText({ terms: ['walrus'], owners: ['user:bob'], limit: 10 })).map(
          (hit) => hit.id,
        ),
      ).toContain(room?.id);
      await expect(storage.memories.moveTo(moved.id, { scope: 'personal' }, context)).rejects.toMatchObject({
        code: ErrorCode.Conflict,
      });
    });

    it('gives a memory built on memories the channels they cite, and finds it by a channel they cite, wherever it is', async () => {
      const [inC] = await storage.messages.append([said('bob', 'The vault code is walrus')]);
      const [inD] = await storage.messages.append([{ ...said('bob', 'The vault is blue'), channelId: 'd' }]);
      const [ofC, ofD] = await storage.memories.insert(
        [
          await newMemory('The vault code is walrus', { sourceMessageIds: [inC?.id ?? 0] }),
          await newMemory('The vault is blue', { sourceMessageIds: [inD?.id ?? 0] }),
        ],
        context,
      );
      const [insight] = await storage.memories.insert(
        [await newMemory('Bob keeps a blue walrus vault', { sourceIds: [ofC?.id ?? 0, ofD?.id ?? 0] })],
        context,
      );
      // Moved elsewhere since, and another built on it there; one in a user's own scope is left out.
      await storage.memories.moveTo(insight?.id ?? 0, { scope: 'room', channelId: 'x' }, context);
      const [onInsight, personal] = await storage.memories.insert(
        [
          await newMemory('Bob guards the vault', { scope: 'room', channelId: 'x', sourceIds: [insight?.id ?? 0] }),
          await newMemory('Bob likes vaults', { scope: 'personal', userId: 'bob', sourceIds: [insight?.id ?? 0] }),
        ],
        context,
      );
      expect(personal).toBeTruthy();
      const cited = await storage.memories.citedChannels({ channelId: 'd' });
      expect(cited.map(({ memory, channelIds }) => [memory.id, channelIds])).toEqual([
        [ofD?.id, ['d']],
        [insight?.id, ['c', 'd']],
        [onInsight?.id, ['c', 'd']],
      ]);
      expect(
        (await storage.memories.citedChannels({ owner: 'room:x' })).map(({ memory, channelIds }) => [
          memory.id,
          channelIds,
        ]),
      ).toEqual([
        [insight?.id, ['c', 'd']],
        [onInsight?.id, ['c', 'd']],
      ]);
    });

    it('counts totals, scopes, categories, pinned and recent additions, leaving expiring to the decay policy', async () => {
      await storage.memories.insert(
        [
          await newMemory('pinned fact', { pinned: true }),
          await newMemory('a preference', { category: 'preference', scope: 'personal', userId: 'oz' }),
          await newMemory('nearly forgotten', { importance: 0 }),
        ],
        context,
      );
      await storage.memories.insert([await newMemory('old news')], { ...context, at: at - 30 * 86_400_000 });
      const [gone] = await storage.memories.insert([await newMemory('archived one')], context);
      await storage.memories.archive([gone?.id ?? 0], context);
      const stats = await storage.memories.stats(at);
      expect(stats).toMatchObject({
        total: 5,
        active: 4,
        archived: 1,
        pinned: 1,
        addedLast7Days: 4,
        byScope: { global: 3, personal: 1 },
        byCategory: { fact: 3, preference: 1 },
        mostAccessed: [],
      });
      expect(stats).not.toHaveProperty('expiring');
    });

    it('records a retrieval of many memories in one call: access count, time and reinforcement fields', async () => {
      const [first, second, gone] = await storage.memories.insert(
        [await newMemory('first retrieved'), await newMemory('second retrieved'), await newMemory('archived one')],
        context,
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      await storage.memories.archive([id(gone)], context);
      await storage.memories.touch(
        [
          { id: id(first), salience: 1.1 },
          { id: id(second), strength: 1, importance: 0.8 },
          { id: id(gone), salience: 2 },
          { id: 999_999 },
        ],
        at + 5000,
      );
      const [one, two, archived] = await storage.memories.get([id(first), id(second), id(gone)]);
      expect(one).toMatchObject({ accessCount: 1, lastAccessedAt: '2024-06-15T12:00:05.000Z', salience: 1.1 });
      expect(one).toMatchObject({ strength: 1, importance: 0.5, updatedAt: '2024-06-15T12:00:00.000Z' });
      expect(two).toMatchObject({ accessCount: 1, strength: 1, importance: 0.8, salience: 1 });
      expect(archived).toMatchObject({ accessCount: 0, lastAccessedAt: null, salience: 1 });
      expect((await storage.memories.history(id(first))).map((version) => version.action)).toEqual(['create']);
      await storage.memories.touch([], at);
    });

    it('lists the most recently used visible memories: retrieval time, else creation time', async () => {
      const [old, middle, secret] = await storage.memories.insert(
        [
          await newMemory('old memory'),
          await newMemory('middle memory'),
          await newMemory('secret of bob', { scope: 'personal', userId: 'bob' }),
        ],
        context,
      );
      const [newest, gone] = await storage.memories.insert(
        [await newMemory('newest memory'), await newMemory('archived memory')],
        { ...context, at: at + 1000 },
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      await storage.memories.archive([id(gone)], context);
      await storage.memories.touch([{ id: id(old) }, { id: id(secret) }], at + 2000);
      const recent = await storage.memories.recentlyAccessed(visibleOwners({ userId: 'ann' }), 10);
      expect(recent.map((memory) => memory.id)).toEqual([id(old), id(newest), id(middle)]);
      expect(await storage.memories.recentlyAccessed(visibleOwners({ userId: 'ann' }), 1)).toHaveLength(1);
      expect((await storage.memories.recentlyAccessed(null, 10)).map((memory) => memory.id)).toContain(id(secret));
      expect(await storage.memories.recentlyAccessed([], 10)).toEqual([]);
    });

    it('links memories both ways, once per (source, target, type)', async () => {
      const [a, b, c] = await storage.memories.insert(
        [await newMemory('alpha'), await newMemory('beta'), await newMemory('gamma')],
        context,
      );
      const ids = [a?.id ?? 0, b?.id ?? 0, c?.id ?? 0] as const;
      expect(
        await storage.links.add(
          [
            { sourceId: ids[0], targetId: ids[1], type: 'co_extracted' },
            { sourceId: ids[2], targetId: ids[0], type: 'semantic', strength: 0.9 },
            { sourceId: ids[0], targetId: ids[0], type: 'semantic' },
          ],
          at,
        ),
      ).toBe(2);
      expect(
        await storage.links.add([{ sourceId: ids[2], targetId: ids[0], type: 'semantic', strength: 0.95 }], at),
      ).toBe(0);
      const links = await storage.links.of(ids[0]);
      expect(links.map((link) => [link.sourceId, link.targetId, link.type, link.strength])).toEqual([
        [ids[0], ids[1], 'co_extracted', 1],
        [ids[2], ids[0], 'semantic', 0.95],
      ]);
      expect(links[0]?.createdAt).toBe('2024-06-15T12:00:00.000Z');
    });

    it('finds one-hop neighbours in either direction, only among visible active memories', async () => {
      const [seed, forward, backward, secret, gone] = await storage.memories.insert(
        [
          await newMemory('seed', { scope: 'personal', userId: 'ann' }),
          await newMemory('forward', { scope: 'personal', userId: 'ann' }),
          await newMemory('backward'),
          await newMemory('secret of bob', { scope: 'personal', userId: 'bob' }),
          await newMemory('archived neighbour'),
        ],
        context,
      );
      const id = (memory: { id: number } | undefined) => memory?.id ?? 0;
      await storage.links.add(
        [
          { sourceId: id(seed), targetId: id(forward), type: 'co_extracted', strength: 0.5 },
          { sourceId: id(backward), targetId: id(seed), type: 'semantic', strength: 0.9 },
          { sourceId: id(seed), targetId: id(secret), type: 'semantic', strength: 1 },
          { sourceId: id(gone), targetId: id(seed), type: 'semantic', strength: 1 },
        ],
        at,
      );
      await storage.memories.archive([id(gone)], context);
      const neighbours = await storage.links.neighbours([id(seed)], visibleOwners({ userId: 'ann' }), 10);
      expect(neighbours).toEqual([
        { id: id(backward), linkedTo: id(seed), type: 'semantic', strength: 0.9 },
        { id: id(forward), linkedTo: id(seed), type: 'co_extracted', strength: 0.5 },
      ]);
      expect(await storage.links.neighbours([id(seed)], visibleOwners({ userId: 'ann' }), 1)).toHaveLength(1);
      expect((await storage.links.neighbours([id(seed)], null, 10)).map((link) => link.id)).toContain(id(secret));
      expect(await storage.links.neighbours([id(seed), id(forward), id(backward)], ['global', 'user:ann'], 10)).toEqual(
        [],
      );

      expect(await storage.links.removeArchived()).toBe(1);
      expect((await storage.links.of(id(gone))).length).toBe(0);
    });

    it('appends messages in order, one call in one transaction, a reply pointing at the message before it', async () => {
      const stored = await storage.messages.append([
        {
          channelId: 'room',
          senderId: 'oz',
          role: 'user',
          content: 'Where is the wiki?',
          topicId: 't1',
          createdAt: at,
        },
        {
          channelId: 'room',
          senderId: 'bot',
          role: 'assistant',
          content: 'On the intranet.',
          topicId: 't1',
          repliesToPrevious: true,
          createdAt: at,
        },
        {
          channelId: 'other',
          senderId: 'ann',
          role: 'user',
          content: 'Hello wiki fans',
          topicId: null,
          createdAt: at + 1,
        },
      ]);
      expect(stored.map((message) => message.duplicate)).toEqual([false, false, false]);
      const [question, answer, hello] = stored.map(({ duplicate: _, ...message }) => message);
      expect(question).toEqual({
        id: expect.any(Number),
        channelId: 'room',
        senderId: 'oz',
        role: 'user',
        content: 'Where is the wiki?',
        topicId: 't1',
        replyTo: null,
        externalId: null,
        createdAt: '2024-06-15T12:00:00.000Z',
      });
      expect(answer).toMatchObject({ role: 'assistant', replyTo: question?.id });
      expect(await storage.messages.get([hello?.id ?? 0, question?.id ?? 0, 999])).toEqual([hello, question]);
      expect(await storage.messages.listAfter('room', 0, 10)).toEqual([question, answer]);
      expect(await storage.messages.listAfter('room', question?.id ?? 0, 10)).toEqual([answer]);
      expect(await storage.messages.listBefore('room', answer?.id ?? 0, 10)).toEqual([question]);
      expect(await storage.messages.listBefore('room', (answer?.id ?? 0) + 1, 1)).toEqual([answer]);
      expect(await storage.messages.listBefore('room', (answer?.id ?? 0) + 1, 5)).toEqual([question, answer]);
      expect(await storage.messages.listBefore('room', question?.id ?? 0, 10)).toEqual([]);
      expect(await storage.messages.listTopicAfter('t1', 0, 1)).toEqual([question]);
      expect(await storage.messages.recent('room', 1)).toEqual([answer]);
      expect(await storage.messages.recentUserMessages('room', 5)).toEqual([question]);
      expect(await storage.messages.countAfter('room', 0)).toBe(2);
      expect(await storage.messages.countAfter('room', 0, 'user')).toBe(1);
      expect(await storage.messages.countTopicAfter('t1', question?.id ?? 0)).toBe(1);
      expect(await storage.messages.latestId('room')).toBe(answer?.id);
      expect(await storage.messages.latestId('nowhere')).toBe(0);
      expect(await storage.messages.channelIds()).toEqual(['other', 'room']);
      expect(await storage.messages.topicIds()).toEqual(['t1']);
      expect(await storage.messages.searchText('room', ['wiki'], 10)).toEqual([question]);
      expect(await storage.messages.searchText('room', ['"', 'OR'], 10)).toEqual([]);
    });

    it('finds the namesakes of a display name among named users and the ids of senders, members and key users', async () => {
      const { directory } = storage;
      const namesake = (userId: string, name: string) => directory.hasNamesake(userId, nameKey(name));
      expect(await namesake('eve', 'Bob')).toBe(false);
      await directory.putUser({ id: 'robert', displayName: 'Bob' }, at);
      await directory.putUser({ id: 'eve', displayName: 'Воb' }, at);
      expect(await namesake('eve', 'Воb')).toBe(true);
      expect(await namesake('robert', 'Bob')).toBe(true);
      // A named user is known by their id as well, in any spelling that reads like it.
      expect(await namesake('eve', 'R0BERT')).toBe(true);
      // A user without a name goes by their id: a sender, a member, the user of a key, in any spelling.
      expect(await namesake('eve', 'Zed')).toBe(false);
      await storage.messages.append([said('ZedSmith', 'Zed was here')]);
      expect(await namesake('eve', 'zedsmith')).toBe(true);
      expect(await namesake('eve', 'Zed Smith')).toBe(true);
      expect(await namesake('ZedSmith', 'Zed Smith')).toBe(false);
      await storage.memberships.putChannel({ id: 'town', members: ['carol.w'] }, at);
      expect(await namesake('eve', 'carоl.w')).toBe(true);
      await storage.memberships.addMembers('channel', 'town', ['mia_k'], at);
      expect(await namesake('eve', 'MIA K')).toBe(true);
      await directory.putTopic({ id: 'plans', projectId: null, title: null }, at, ['tom-b']);
      expect(await namesake('eve', 'Tom B')).toBe(true);
      await storage.apiKeys.insert({ prefix: 'mk_p', hash: 'h', label: 'kim', userId: 'Kim.Lee' }, at);
      expect(await namesake('eve', 'kimlee')).toBe(true);
      // mneme's own actors are no users: a reply sent as the assistant makes no row.
      await storage.messages.append([{ ...said('assistant', 'Hello'), role: 'assistant' }]);
      expect(await directory.getUser('assistant')).toBeNull();
      expect(await directory.getUser('ZedSmith')).toEqual({ id: 'ZedSmith', displayName: null });
      // Renamed, a user no longer holds the old name's key, and still their id.
      await directory.putUser({ id: 'robert', displayName: 'Rob' }, at);
      await directory.putUser({ id: 'eve', displayName: 'Bob' }, at);
      expect(await namesake('eve', 'Bob')).toBe(false);
      expect(await namesake('eve', 'Robert')).toBe(true);
      // Naming a user who was known by id keeps the key of their id.
      await directory.putUser({ id: 'ZedSmith', displayName: 'Zed' }, at);
      expect(await namesake('eve', 'zed smith')).toBe(true);
      expect(await namesake('eve', 'Zed')).toBe(true);
    });

    it('labels the memories that call a user by a name another user arrives to share, in the write that brings them', async () => {
      const { directory, memories } = storage;
      await directory.putUser({ id: 'eve', displayName: 'Bob' }, at);
      const [message] = await storage.messages.append([said('eve', 'I approve the budget, Bob says')]);
      const cited = [message?.id ?? 0];
      const [chunk, fact, episode, reply] = await memories.insert(
        [
          await newMemory('Bob: I approve the budget, Bob says', {
            scope: 'room',
            channelId: 'c',
            userId: 'eve',
            source: 'exchange',
            sourceMessageIds: cited,
          }),
          await newMemory('Bob prefers tea', { scope: 'personal', userId: 'eve', source: 'extraction' }),
          await newMemory('Bob approved the budget; Ann agreed', {
            scope: 'room',
            channelId: 'c',
            source: 'episode',
            sourceMessageIds: cited,
          }),
          await newMemory('Ann: Fine by me', {
            scope: 'room',
            channelId: 'c',
            userId: 'ann',
            source: 'exchange',
            searchContext: 'Bob: I approve the budget, Bob says',
            searchContextMessageId: cited[0] ?? null,
          }),
        ],
        context,
      );
      // Nobody else goes by Bob yet: the memories keep the plain name.
      expect((await memories.get([chunk?.id ?? 0]))[0]?.content).toBe('Bob: I approve the budget, Bob says');
      await storage.memberships.addMembers('channel', 'c', ['bob'], at + 1);
      const after = await memories.get([chunk, fact, episode, reply].map((memory) => memory?.id ?? 0));
      // An exchange is labelled where the name begins a line: what Eve said stays as she said it.
      expect(after.map((memory) => memory.content)).toEqual([
        'Bob (eve): I approve the budget, Bob says',
        'Bob (eve) prefers tea',
        'Bob (eve) approved the budget; Ann agreed',
        'Ann: Fine by me',
      ]);
      const versions = await memories.history(fact?.id ?? 0);
      expect(versions.at(-1)).toMatchObject({
        action: 'update',
        actor: 'maintenance',
        changes: { content: { from: 'Bob prefers tea', to: 'Bob (eve) prefers tea' } },
      });
      // A memory written from a text made before the namesake arrived is labelled with its write.
      const [late] = await memories.insert(
        [await newMemory('Bob likes the budget', { scope: 'personal', userId: 'eve', source: 'extraction' })],
        context,
      );
      expect(late?.content).toBe('Bob (eve) likes the budget');
      // A name left is labelled where it stood: Carol, once Dana, can be taken for any Dana to come.
      await directory.putUser({ id: 'carol', displayName: 'Dana' }, at);
      const [carols] = await memories.insert(
        [await newMemory('Dana prefers coffee', { scope: 'personal', userId: 'carol', source: 'extraction' })],
        context,
      );
      await directory.putUser({ id: 'carol', displayName: 'Carol' }, at + 2);
      expect((await memories.get([carols?.id ?? 0]))[0]?.content).toBe('Dana (carol) prefers coffee');
    });

    it('labels the name a user left in a memory whose text was made before they left it', async () => {
      const { directory, memories } = storage;
      await directory.putUser({ id: 'eve', displayName: 'Dana' }, at);
      const fact = (content: string, validFrom: number) =>
        newMemory(content, { scope: 'personal', userId: 'eve', source: 'extraction', validFrom });
      // Extraction made the text while Eve was Dana; she renamed herself before it was written.
      const made = await fact('Dana prefers green tea', at);
      await directory.putUser({ id: 'eve', displayName: 'Dora' }, at + 1);
      const [late] = await memories.insert([made], context);
      expect(late?.content).toBe('Dana (eve) prefers green tea');
      // What she says after the rename is made with her new name: another Dana she speaks of is left alone.
      const [after] = await memories.insert([await fact('Dora met Dana at the market', at + 2)], context);
      expect(after?.content).toBe('Dora met Dana at the market');
    });

    it('labels nothing when a user renames themselves to the same name in another case, until a namesake arrives', async () => {
      const { directory, memories } = storage;
      await directory.putUser({ id: 'carol', displayName: 'Dana' }, at);
      const [fact] = await memories.insert(
        [await newMemory('Dana prefers coffee', { scope: 'personal', userId: 'carol', source: 'extraction' })],
        context,
      );
      const id = fact?.id ?? 0;
      const versions = (await memories.history(id)).length;
      const stale = await storage.vectorBackfill.clearedVectors();
      // Nobody can take "Dana" without reading as "DANA": nothing is left, nothing is labelled or versioned.
      await directory.putUser({ id: 'carol', displayName: 'DANA' }, at + 1);
      expect((await memories.get([id]))[0]?.content).toBe('Dana prefers coffee');
      expect(await memories.history(id)).toHaveLength(versions);
      expect(await storage.vectorBackfill.clearedVectors()).toBe(stale);
      // The mention in the old case is found when a namesake arrives; the label makes its vector stale, and says so.
      await storage.memberships.addMembers('channel', 'c', ['dana'], at + 2);
      expect((await memories.get([id]))[0]).toMatchObject({
        content: 'DANA (carol) prefers coffee',
        embeddingModel: null,
      });
      expect(await storage.vectorBackfill.clearedVectors()).toBe(stale + 1);
    });

    it("keeps a declared channel's visibility when a declaration leaves it out, and makes a new channel private", async () => {
      const { memberships } = storage;
      expect(await memberships.putChannel({ id: 'town', visibility: 'public', members: ['ann'] }, at)).toEqual({
        channel: { id: 'town', visibility: 'public', members: ['ann'] },
        previous: null,
      });
      // Members replaced, visibility left out: the channel stays public (it once became private here).
      expect(await memberships.putChannel({ id: 'town', members: ['ann', 'bob'] }, at)).toEqual({
        channel: { id: 'town', visibility: 'public', members: ['ann', 'bob'] },
        previous: { id: 'town', visibility: 'public', members: ['ann'] },
      });
      expect(await memberships.getChannel('town')).toEqual({
        id: 'town',
        visibility: 'public',
        members: ['ann', 'bob'],
      });
      expect(await memberships.putChannel({ id: 'town', visibility: 'direct' }, at)).toEqual({
        channel: { id: 'town', visibility: 'direct', members: ['ann', 'bob'] },
        previous: { id: 'town', visibility: 'public', members: ['ann', 'bob'] },
      });
      expect(await memberships.putChannel({ id: 'fresh' }, at)).toEqual({
        channel: { id: 'fresh', visibility: 'private', members: [] },
        previous: null,
      });
      // A channel seen only through its members (a sender joined it) is no new one: its previous state is read.
      await memberships.addMembers('channel', 'joined', ['cy'], at);
      expect((await memberships.putChannel({ id: 'joined', visibility: 'public' }, at)).previous).toEqual({
        id: 'joined',
        visibility: 'private',
        members: ['cy'],
      });
    });

    it("writes a message's joins with it, and none for a duplicate", async () => {
      const say = (senderId: string, externalId: string) => ({
        channelId: 'room',
        senderId,
        role: 'user' as const,
        content: `hello from ${senderId}`,
        topicId: null,
        externalId,
        createdAt: at,
        joins: [{ kind: 'channel' as const, id: 'room', at }],
      });
      await storage.messages.append([say('oz', 'evt-1')]);
      expect(await storage.memberships.members('channel', 'room')).toEqual(['oz']);
      await storage.memberships.setMembers('channel', 'room', [], at);
      // A retry of the same message is a duplicate: an administrator's removal stands.
      await storage.messages.append([say('oz', 'evt-1'), say('ann', 'evt-2')]);
      expect(await storage.memberships.members('channel', 'room')).toEqual(['ann']);
    });

    it('appends a message once per channel, sender and external id, answering the stored one as a duplicate', async () => {
      const say = (content: string, externalId: string | null, extra: Record<string, unknown> = {}) => ({
        channelId: 'room',
        senderId: 'oz',
        role: 'user' as const,
        content,
        topicId: null,
        externalId,
        createdAt: at,
        ...extra,
      });
      const [first] = await storage.messages.append([say('first', 'evt-1')]);
      expect(first).toMatchObject({ externalId: 'evt-1', duplicate: false });
      const again = await storage.messages.append([
        say('first, sent again with other words', 'evt-1'),
        say('second', 'evt-2'),
        say('second, twice in one call', 'evt-2'),
        say('elsewhere', 'evt-1', { channelId: 'other' }),
        say('no id', null),
        say('no id', null),
      ]);
      expect(again.map((message) => [message.content, message.duplicate])).toEqual([
        ['first', true],
        ['second', false],
        ['second', true],
        ['elsewhere', false],
        ['no id', false],
        ['no id', false],
      ]);
      expect(again[0]?.id).toBe(first?.id);
      expect(await storage.messages.countAfter('room', 0)).toBe(4);

      // A reply without an id of its own after a duplicate: the stored reply when there is one.
      const reply = { ...say('the reply', null), senderId: 'bot', role: 'assistant' as const, repliesToPrevious: true };
      const [, answered] = await storage.messages.append([say('question', 'evt-3'), reply]);
      const retried = await storage.messages.append([say('question', 'evt-3'), reply]);
      expect(retried.map((message) => [message.id, message.duplicate])).toEqual([
        [answered?.replyTo, true],
        [answered?.id, true],
      ]);
      const late = await storage.messages.append([say('first', 'evt-1'), reply]);
      expect(late.map((message) => [message.duplicate, message.replyTo])).toEqual([
        [true, null],
        [false, first?.id],
      ]);
    });

    it("keeps another sender's message under an external id a sender already used in the channel", async () => {
      // A member who posts first under the id a bridge will relay for someone else must not make that
      // message a duplicate of theirs (acknowledged, never stored): an id names one sender's message.
      const say = (senderId: string, content: string) => ({
        channelId: 'room',
        senderId,
        role: 'user' as const,
        content,
        topicId: null,
        externalId: 'slack:1733050000.000200',
        createdAt: at,
      });
      const [squat] = await storage.messages.append([say('ann', 'ok')]);
      const [real] = await storage.messages.append([say('bob', 'The release moved to Friday')]);
      expect(real).toMatchObject({ senderId: 'bob', content: 'The release moved to Friday', duplicate: false });
      expect(real?.id).not.toBe(squat?.id);
      const [retried] = await storage.messages.append([say('bob', 'The release moved to Friday')]);
      expect(retried).toMatchObject({ id: real?.id, duplicate: true });
      expect(await storage.messages.countAfter('room', 0)).toBe(2);
    });

    it('stores one message when two calls append the same external id at once', async () => {
      const message = {
        channelId: 'room',
        senderId: 'oz',
        role: 'user' as const,
        content: 'raced',
        topicId: null,
        externalId: 'evt-race',
        createdAt: at,
      };
      const results = await Promise.all(Array.from({ length: 4 }, () => storage.messages.append([message])));
      expect(results.map(([stored]) => stored?.duplicate).sort()).toEqual([false, true, true, true]);
      expect(new Set(results.map(([stored]) => stored?.id)).size).toBe(1);
      expect(await storage.messages.countAfter('room', 0)).toBe(1);
    });

    it("records a file's ingest progress with the messages it covers, and not when they are refused", async () => {
      const valid = {
        channelId: 'room',
        senderId: 'oz',
        role: 'user' as const,
        content: 'a',
        topicId: null,
        createdAt: at,
      };
      const progress = { path: '/data/chat.jsonl', line: 3, prefixSha256: 'a'.repeat(64) };
      expect(await storage.messages.ingestFile(progress.path)).toBeNull();
      await storage.messages.append([valid], { file: { ...progress, at } });
      expect(await storage.messages.ingestFile(progress.path)).toEqual(progress);
      await expect(
        storage.messages.append([valid, { ...valid, role: 'robot' as never }], {
          file: { ...progress, line: 9, prefixSha256: 'b'.repeat(64), at },
        }),
      ).rejects.toBeInstanceOf(MnemeError);
      expect(await storage.messages.ingestFile(progress.path)).toEqual(progress);
    });

    it('claims an idempotency key once, stores its response, hands over a stale claim and forgets expired keys', async () => {
      const claim = {
        principal: 'user:ann',
        key: 'k1',
        requestSha256: 'r1',
        now: at,
        lockedUntil: at + 100,
        expiresAt: at + 1_000,
      };
      expect(await storage.idempotency.claim(claim)).toBeNull();
      expect(await storage.idempotency.claim(claim)).toEqual({
        requestSha256: 'r1',
        status: null,
        body: null,
        lockedUntil: at + 100,
        committed: false,
      });
      expect(await storage.idempotency.claim({ ...claim, principal: 'user:bob' })).toBeNull();
      // The claimant died: once its lock passed, the same request takes the key over; another one does not.
      const later = { ...claim, now: at + 100, lockedUntil: at + 200 };
      expect(await storage.idempotency.claim({ ...later, requestSha256: 'r2' })).toMatchObject({ requestSha256: 'r1' });
      expect(await storage.idempotency.claim(later)).toBeNull();
      // The first claimant gives back its claim late: the one that took it over keeps it.
      await storage.idempotency.release('user:ann', 'k1', claim.lockedUntil);
      expect(await storage.idempotency.claim({ ...later, now: at + 150 })).toMatchObject({ lockedUntil: at + 200 });
      await storage.idempotency.complete(claim, { status: 202, body: '{"ok":true}' });
      expect(await storage.idempotency.claim(later)).toMatchObject({ status: 202, body: '{"ok":true}' });
      await storage.idempotency.release('user:ann', 'k1', 0);
      expect(await storage.idempotency.claim(later)).toMatchObject({ status: 202 });
      await storage.idempotency.release('user:bob', 'k1', claim.lockedUntil);
      expect(await storage.idempotency.claim({ ...claim, principal: 'user:bob' })).toBeNull();
      expect(await storage.idempotency.claim({ ...claim, now: at + 1_000, requestSha256: 'r3' })).toBeNull();
    });

    it('keeps a claim whose work committed a change from being taken over, and counts only writes that change rows', async () => {
      const claim = { principal: 'user:ann', key: 'k1', requestSha256: 'r1', now: at, lockedUntil: at + 100 };
      const expiresAt = at + 1_000;
      expect(await storage.idempotency.claim({ ...claim, expiresAt })).toBeNull();
      const held = { principal: 'user:ann', key: 'k1', lockedUntil: at + 100 };
      // Work whose write changed no row: the claim is taken over once its lock passed (the work is done again).
      await storage.idempotency.underKey(held, () => storage.idempotency.release('user:zed', 'none', 0));
      const later = { ...claim, now: at + 100, lockedUntil: at + 200, expiresAt };
      expect(await storage.idempotency.claim(later)).toBeNull();
      // Work that changed rows: its claim, once its lock passed, is not taken over but answered, marked committed.
      const project = (id: string) => storage.directory.putProject({ id, name: null, managed: false }, at, ['ann']);
      await storage.idempotency.underKey({ ...held, lockedUntil: at + 200 }, () => project('apollo'));
      const after = { ...later, now: at + 200, lockedUntil: at + 300 };
      expect(await storage.idempotency.claim(after)).toEqual({
        requestSha256: 'r1',
        status: null,
        body: null,
        lockedUntil: at + 200,
        committed: true,
      });
      // A write after the work settled (a worker it started) counts nothing on another request's claim.
      let settle = () => {};
      const settled = new Promise<void>((resolve) => {
        settle = resolve;
      });
      let background: Promise<unknown> = Promise.resolve();
      expect(await storage.idempotency.claim({ ...claim, key: 'k2', expiresAt })).toBeNull();
      await storage.idempotency.underKey({ ...held, key: 'k2' }, async () => {
        background = settled.then(() => project('gemini'));
      });
      settle();
      await background;
      expect(await storage.idempotency.claim({ ...after, key: 'k2' })).toBeNull();
    });

    it("answers a claim with its former key space's row for the same request, finished or still held", async () => {
      const legacy = { principal: 'admin:deploy', key: 'k1', now: at, lockedUntil: at + 100, expiresAt: at + 1_000 };
      expect(await storage.idempotency.claim({ ...legacy, requestSha256: 'done' })).toBeNull();
      await storage.idempotency.complete({ ...legacy, requestSha256: 'done' }, { status: 202, body: '{"id":1}' });
      const claim = { ...legacy, principal: 'admin-key:k9', formerPrincipal: 'admin:deploy' };
      expect(await storage.idempotency.claim({ ...claim, requestSha256: 'done' })).toEqual({
        requestSha256: 'done',
        status: 202,
        body: '{"id":1}',
        lockedUntil: 0,
        committed: false,
      });
      // Another request under that key is this space's own, as is the key without a former space.
      expect(await storage.idempotency.claim({ ...claim, requestSha256: 'other' })).toBeNull();
      expect(await storage.idempotency.claim({ ...claim, key: 'k2', requestSha256: 'done' })).toBeNull();
      // A former row claimed before the claimant's key was made is not its own.
      const later = { ...claim, key: 'k1', requestSha256: 'done', formerExpiresFrom: legacy.expiresAt + 1 };
      expect(await storage.idempotency.claim({ ...later, principal: 'admin-key:k10' })).toBeNull();
      // A first request of the former space still running holds the key until its lock passes.
      expect(await storage.idempotency.claim({ ...legacy, key: 'k3', requestSha256: 'run' })).toBeNull();
      expect(await storage.idempotency.claim({ ...claim, key: 'k3', requestSha256: 'run' })).toMatchObject({
        status: null,
      });
      expect(await storage.idempotency.claim({ ...claim, key: 'k3', requestSha256: 'run', now: at + 100 })).toBeNull();
    });

    it('appends nothing of a call when one message is refused', async () => {
      const valid = {
        channelId: 'room',
        senderId: 'oz',
        role: 'user' as const,
        content: 'kept?',
        topicId: null,
        createdAt: at,
      };
      await expect(
        storage.messages.append([valid, { ...valid, role: 'robot' as never, content: 'refused' }]),
      ).rejects.toBeInstanceOf(MnemeError);
      expect(await storage.messages.listAfter('room', 0, 10)).toEqual([]);
    });

    it('keeps maintenance state per channel and task, changing only the fields given', async () => {
      expect(await storage.maintenanceState.get('room', 'extraction')).toBeNull();
      expect(await storage.maintenanceState.set('room', 'extraction', { watermark: 7 })).toEqual({
        channelId: 'room',
        task: 'extraction',
        watermark: 7,
        lastRunAt: null,
        details: null,
      });
      await storage.maintenanceState.set('room', 'extraction', { lastRunAt: at, details: { runs: 2 } });
      await storage.maintenanceState.set('other', 'extraction', { watermark: 1 });
      await storage.maintenanceState.set('room', 'decay', { watermark: 99 });
      expect(await storage.maintenanceState.get('room', 'extraction')).toEqual({
        channelId: 'room',
        task: 'extraction',
        watermark: 7,
        lastRunAt: at,
        details: { runs: 2 },
      });
      expect(
        (await storage.maintenanceState.list('extraction')).map((state) => [state.channelId, state.watermark]),
      ).toEqual([
        ['other', 1],
        ['room', 7],
      ]);
      await storage.maintenanceState.set('room', 'extraction', { watermark: null, details: null });
      expect(await storage.maintenanceState.get('room', 'extraction')).toMatchObject({
        watermark: null,
        details: null,
      });
      // Removing deletes that row only; a row that is not there is no error.
      await storage.maintenanceState.remove('room', 'extraction');
      await storage.maintenanceState.remove('nowhere', 'extraction');
      expect(await storage.maintenanceState.get('room', 'extraction')).toBeNull();
      expect(await storage.maintenanceState.get('room', 'decay')).toMatchObject({ watermark: 99 });
    });

    it('writes an insert and the maintenance state it carries in one transaction, or neither', async () => {
      const [said] = await storage.messages.append([
        { channelId: 'room', senderId: 'ann', role: 'user', content: 'we met', topicId: null, createdAt: at },
      ]);
      await storage.maintenanceState.set('room', 'episodes', { watermark: 1, lastRunAt: at, details: { runs: 1 } });
      const episode = await newMemory('Ann and the team met', { sourceMessageIds: [said?.id ?? 0], source: 'episode' });
      const stored = await storage.memories.insert([episode], context, {
        sourcesMustExist: true,
        state: { channelId: 'room', task: 'episodes', changes: { watermark: said?.id ?? 0 } },
      });
      expect(stored.map((memory) => memory.content)).toEqual(['Ann and the team met']);
      // Only the fields given change, as with `set`; a row that is not there yet is created.
      expect(await storage.maintenanceState.get('room', 'episodes')).toEqual({
        channelId: 'room',
        task: 'episodes',
        watermark: said?.id ?? 0,
        lastRunAt: at,
        details: { runs: 1 },
      });
      await storage.memories.insert([await newMemory('A pattern of meetings', { source: 'dream' })], context, {
        state: { channelId: 'owner-record', task: 'dream-owner', changes: { watermark: 42, lastRunAt: at + 1 } },
      });
      expect(await storage.maintenanceState.get('owner-record', 'dream-owner')).toEqual({
        channelId: 'owner-record',
        task: 'dream-owner',
        watermark: 42,
        lastRunAt: at + 1,
        details: null,
      });
      const total = (await storage.memories.stats(at)).total;
      // A refused insert moves no state.
      const gone = await newMemory('A meeting nobody had', { sourceMessageIds: [9999], source: 'episode' });
      await expect(
        storage.memories.insert([gone], context, {
          sourcesMustExist: true,
          state: { channelId: 'room', task: 'episodes', changes: { watermark: 9999 } },
        }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // A state that cannot be written (details that are no JSON) takes the memories with it.
      await expect(
        storage.memories.insert([await newMemory('Ann met the team again')], context, {
          state: { channelId: 'room', task: 'episodes', changes: { watermark: 9999, details: { runs: 2n } } },
        }),
      ).rejects.toThrow();
      expect((await storage.memories.stats(at)).total).toBe(total);
      expect(await storage.maintenanceState.get('room', 'episodes')).toMatchObject({
        watermark: said?.id ?? 0,
        details: { runs: 1 },
      });
    });

    it('replaces the provenance of a memory on update without a version of its own', async () => {
      const [memory] = await storage.memories.insert(
        [await newMemory('Oz likes tea', { sourceMessageIds: [1] })],
        context,
      );
      const updated = await storage.memories.update(memory?.id ?? 0, { sourceMessageIds: [1, 4] }, context);
      expect(updated.sourceMessageIds).toEqual([1, 4]);
      expect(await storage.memories.history(memory?.id ?? 0)).toHaveLength(1);
    });

    it('keeps when a memory was said apart from when it was stored, and moves it on update without a version', async () => {
      const said = Date.parse('2023-01-02T03:04:05.000Z');
      const [memory] = await storage.memories.insert(
        [{ ...(await newMemory('Oz likes tea')), validFrom: said }],
        context,
      );
      expect(memory).toMatchObject({ validFrom: '2023-01-02T03:04:05.000Z', createdAt: '2024-06-15T12:00:00.000Z' });
      const later = Date.parse('2023-02-01T00:00:00.000Z');
      const updated = await storage.memories.update(memory?.id ?? 0, { validFrom: later }, context);
      expect(updated.validFrom).toBe('2023-02-01T00:00:00.000Z');
      expect(await storage.memories.history(memory?.id ?? 0)).toHaveLength(1);
    });

    describe('extraction', () => {
      const lease = (owner: string, ttlMs = 60_000): ExtractionLease => ({
        channelId: 'room',
        task: 'extraction',
        owner,
        ttlMs,
      });
      const factContext = { at, actor: 'extractor:test', reason: 'from message 7' };
      // The steps below cite messages 1 to 12 of the log.
      beforeEach(async () => {
        const message = { channelId: 'room', senderId: 'ann', role: 'user' as const, topicId: null, replyTo: null };
        await storage.messages.append(
          Array.from({ length: 12 }, (_, index) => ({ ...message, content: `message ${index + 1}`, createdAt: at })),
        );
      });
      const roomMemory = (content: string, overrides: Partial<NewMemory> = {}) =>
        newMemory(content, { scope: 'room', channelId: 'room', source: 'extraction', ...overrides }, false);
      /** One step of a worker's lease (messages 1 to 7) inserting `inserts`, the i-th superseding memory `superseded[i]`. */
      const superseding = async (inserts: NewMemory[], superseded: number[]) => {
        await storage.extraction.claim(lease('worker'));
        return storage.extraction.apply(lease('worker'), {
          from: 0,
          to: 7,
          at: at + 1,
          facts: {
            context: factContext,
            updates: [],
            inserts,
            linked: [],
            supersedes: superseded.map((memoryId, insert) => ({ insert, memoryId })),
          },
        });
      };
      const exchange = async (messageId: number, chunks: string[]) => ({
        context: { at, actor: 'exchange' },
        messageId,
        chunks: await Promise.all(
          chunks.map((chunk) => roomMemory(chunk, { category: 'exchange', source: 'exchange' })),
        ),
      });

      it('claims a free lease, refuses it to another holder while it is live, renews it for its holder, frees it on release', async () => {
        expect(await storage.extraction.claim(lease('first'))).toBe(true);
        expect(await storage.extraction.claim(lease('second'))).toBe(false);
        expect(await storage.extraction.claim(lease('first'))).toBe(true);
        expect(await storage.extraction.claim({ ...lease('second'), task: 'conversation' })).toBe(true);
        await storage.extraction.release(lease('second'));
        expect(await storage.extraction.claim(lease('second'))).toBe(false);
        await storage.extraction.release(lease('first'));
        expect(await storage.extraction.claim(lease('second'))).toBe(true);
      });

      it('reads the texts of the active memories consolidation may merge, leaving out pinned, superseded, episodes and exchanges', async () => {
        const [kept, pinned, episode, exchanged, monday, archived, last] = await storage.memories.insert(
          [
            await roomMemory('The release train leaves on Tuesday'),
            await roomMemory('Ann prefers tea', { pinned: true }),
            await roomMemory('Ann and Lee planned the launch', { category: 'episode' }),
            await roomMemory('Ann: shall we ship?', { category: 'exchange' }),
            await roomMemory('The standup is on Monday'),
            await roomMemory('The build is red'),
            await roomMemory('Lee likes green tea'),
          ],
          context,
        );
        expect([pinned?.pinned, episode?.category, exchanged?.category]).toEqual([true, 'episode', 'exchange']);
        await storage.memories.archive([archived?.id ?? 0], context);
        const applied = await superseding([await roomMemory('The standup moved to Wednesday')], [monday?.id ?? 0]);
        const [wednesday] = applied?.created ?? [];
        const texts = await storage.maintenance.mergeableTextsAfter(0, 10);
        expect(texts).toEqual(
          [kept, last, wednesday].map((memory) => ({ id: memory?.id, owner: 'room:room', content: memory?.content })),
        );
        expect(await storage.maintenance.mergeableTextsAfter(kept?.id ?? 0, 1)).toEqual([texts[1]]);
      });

      it('marks a memory superseded by the new fact that changes it, links it, and makes it current again when that fact is archived', async () => {
        const [monday, forgotten] = await storage.memories.insert(
          [await roomMemory('The standup is on Monday'), await roomMemory('The standup is at 9')],
          context,
        );
        await storage.memories.archive([forgotten?.id ?? 0], context);
        const applied = await superseding(
          [await roomMemory('The standup moved to Wednesday'), await roomMemory('The standup is at 10')],
          [monday?.id ?? 0, forgotten?.id ?? 0],
        );
        const [wednesday, ten] = applied?.created ?? [];
        const [older, archived] = await storage.memories.get([monday?.id ?? 0, forgotten?.id ?? 0]);
        expect(older).toMatchObject({ supersededBy: wednesday?.id, archivedAt: null });
        expect(archived?.supersededBy).toBeNull();
        expect(
          (await storage.links.of(monday?.id ?? 0)).map((link) => [link.sourceId, link.targetId, link.type]),
        ).toEqual([[wednesday?.id, monday?.id, 'supersedes']]);
        expect((await storage.links.of(ten?.id ?? 0)).filter((link) => link.type === 'supersedes')).toEqual([]);
        expect(await storage.memories.history(monday?.id ?? 0)).toHaveLength(1);

        await storage.memories.archive([wednesday?.id ?? 0], context);
        expect((await storage.memories.get([monday?.id ?? 0]))[0]?.supersededBy).toBeNull();

        // Restored, the new fact supersedes again what it superseded, unless that was archived meanwhile.
        await storage.memories.restore(wednesday?.id ?? 0, null, context);
        expect((await storage.memories.get([monday?.id ?? 0]))[0]?.supersededBy).toBe(wednesday?.id);
        await storage.memories.archive([wednesday?.id ?? 0, monday?.id ?? 0], context);
        await storage.memories.restore(wednesday?.id ?? 0, null, context);
        expect((await storage.memories.get([monday?.id ?? 0]))[0]).toMatchObject({ supersededBy: null });
        expect((await storage.memories.get([monday?.id ?? 0]))[0]?.archivedAt).not.toBeNull();
      });

      it('lets another holder take over a lease that expired', async () => {
        expect(await storage.extraction.claim(lease('dead', 0))).toBe(true);
        expect(await storage.extraction.claim(lease('successor'))).toBe(true);
        expect(await storage.extraction.claim(lease('dead'))).toBe(false);
        expect(await storage.extraction.apply(lease('dead'), { from: 0, to: 3, at })).toBeNull();
        expect(await storage.maintenanceState.get('room', 'extraction')).toBeNull();
      });

      it("applies a message's updates, new facts, links and exchange chunks with the watermark, in one step", async () => {
        const [matched] = await storage.memories.insert([await roomMemory('The team meets on Mondays')], context);
        const matchedId = matched?.id ?? 0;
        await storage.extraction.claim(lease('worker'));
        const applied = await storage.extraction.apply(lease('worker'), {
          from: 0,
          to: 8,
          at: at + 1,
          facts: {
            context: factContext,
            updates: [{ id: matchedId, changes: { content: 'The team meets on Tuesdays', sourceMessageIds: [7] } }],
            inserts: [await roomMemory('The team lead is Ana'), await roomMemory('The office is in Oslo')],
            linked: [matchedId],
          },
          exchange: await exchange(7, ['first chunk of the turn', 'second chunk of the turn']),
        });
        expect(applied?.updated.map((memory) => memory.content)).toEqual(['The team meets on Tuesdays']);
        expect(applied?.created.map((memory) => memory.content)).toEqual([
          'The team lead is Ana',
          'The office is in Oslo',
        ]);
        expect(applied?.chunks.map((memory) => memory.content)).toEqual([
          'first chunk of the turn',
          'second chunk of the turn',
        ]);
        const [lead, office] = applied?.created.map((memory) => memory.id) ?? [];
        const links = await storage.links.of(lead ?? 0);
        expect(links.map((link) => [link.sourceId, link.targetId, link.type]).sort()).toEqual(
          [
            [matchedId, lead, 'co_extracted'],
            [lead, office, 'co_extracted'],
          ].sort(),
        );
        expect((await storage.memories.history(matchedId)).map((version) => version.reason)).toEqual([
          null,
          'from message 7',
        ]);
        expect(await storage.maintenanceState.get('room', 'extraction')).toMatchObject({
          watermark: 8,
          lastRunAt: at + 1,
        });
      });

      it('refuses a step whose watermark another holder moved, or from a holder without the lease, writing nothing', async () => {
        await storage.extraction.claim(lease('worker'));
        expect(await storage.extraction.apply(lease('worker'), { from: 0, to: 5, at })).not.toBeNull();
        const refused = [
          { holder: 'worker', from: 0, turn: 'a turn applied from a stale watermark' },
          { holder: 'stranger', from: 5, turn: 'a turn applied without the lease' },
        ];
        for (const { holder, from, turn } of refused) {
          const step = { from, to: 9, at, exchange: await exchange(9, [turn]) };
          expect(await storage.extraction.apply(lease(holder), step)).toBeNull();
        }
        expect((await storage.memories.list(allActive())).memories).toEqual([]);
        expect(await storage.maintenanceState.get('room', 'extraction')).toMatchObject({ watermark: 5 });
      });

      it('checks every step of a batch against the watermark its steps moved, and leaves the lease renewed at the end', async () => {
        // Claimed with an expiry already past: only the batch's renewal keeps another holder out afterwards.
        await storage.extraction.claim(lease('worker', 0));
        const results = await storage.extraction.batch(async () => [
          await storage.extraction.apply(lease('worker'), { from: 0, to: 3, at }),
          await storage.extraction.apply(lease('worker'), { from: 3, to: 5, at: at + 1 }),
          await storage.extraction.apply(lease('worker'), {
            from: 3,
            to: 9,
            at,
            exchange: await exchange(9, ['stale']),
          }),
          await storage.extraction.apply(lease('stranger'), {
            from: 5,
            to: 9,
            at,
            exchange: await exchange(9, ['not']),
          }),
          await storage.extraction.apply(lease('worker'), { from: 5, to: 6, at: at + 2 }),
        ]);
        expect(results.map((result) => result !== null)).toEqual([true, true, false, false, true]);
        expect((await storage.memories.list(allActive())).memories).toEqual([]);
        expect(await storage.maintenanceState.get('room', 'extraction')).toMatchObject({
          watermark: 6,
          lastRunAt: at + 2,
        });
        expect(await storage.extraction.claim(lease('successor'))).toBe(false);
      });

      it('stores each exchange chunk of a message once, however often the message is applied', async () => {
        await storage.extraction.claim(lease('worker'));
        const first = await storage.extraction.apply(lease('worker'), {
          from: 0,
          to: 7,
          at,
          exchange: await exchange(7, ['the first chunk']),
        });
        const again = await storage.extraction.apply(lease('worker'), {
          from: 7,
          to: 8,
          at,
          exchange: await exchange(7, ['the first chunk again', 'a second chunk']),
        });
        expect(first?.chunks.map((memory) => memory.content)).toEqual(['the first chunk']);
        expect(again?.chunks.map((memory) => memory.content)).toEqual(['a second chunk']);
        await storage.memories.archive([first?.chunks[0]?.id ?? 0], context);
        const afterForget = await storage.extraction.apply(lease('worker'), {
          from: 8,
          to: 9,
          at,
          exchange: await exchange(7, ['the first chunk, forgotten']),
        });
        expect(afterForget?.chunks).toEqual([]);
      });

      it('writes no facts or chunks of a message purged after it was read, and still moves the watermark', async () => {
        const [extra] = await storage.messages.append([
          {
            channelId: 'room',
            senderId: 'zed',
            role: 'user',
            content: 'Zed likes kites',
            topicId: null,
            replyTo: null,
            createdAt: at,
          },
        ]);
        const messageId = extra?.id ?? 0;
        await storage.memories.purgeUser('zed');
        await storage.extraction.claim(lease('worker'));
        const applied = await storage.extraction.apply(lease('worker'), {
          from: 0,
          to: messageId,
          at,
          facts: { context: factContext, updates: [], inserts: [await roomMemory('Zed likes kites')], linked: [] },
          exchange: await exchange(messageId, ['Zed likes kites']),
        });
        expect(applied).toEqual({ created: [], updated: [], chunks: [] });
        expect((await storage.memories.list(allActive())).memories).toEqual([]);
        expect(await storage.maintenanceState.get('room', 'extraction')).toMatchObject({ watermark: messageId });
      });

      it('writes nothing of a step when one of its writes fails', async () => {
        await storage.extraction.claim(lease('worker'));
        const orphan = await newMemory('Notes of a missing session', { scope: 'session', topicId: 'missing' }, false);
        await expect(
          storage.extraction.apply(lease('worker'), {
            from: 0,
            to: 4,
            at,
            exchange: await exchange(3, ['a turn written before the failure']),
            facts: { context: factContext, updates: [], inserts: [orphan], linked: [] },
          }),
        ).rejects.toMatchObject({ code: ErrorCode.NotFound });
        expect((await storage.memories.list(allActive())).memories).toEqual([]);
        expect(await storage.maintenanceState.get('room', 'extraction')).toBeNull();
      });

      it('finds the active memories of the given owners that cite a message', async () => {
        const [cited, updated, archived, elsewhere] = await storage.memories.insert(
          [
            await roomMemory('Cited at once', { sourceMessageIds: [3] }),
            await roomMemory('Cited once updated', { sourceMessageIds: [1] }),
            await roomMemory('Cited but forgotten', { sourceMessageIds: [3] }),
            await newMemory(
              'Cited in another scope',
              { scope: 'personal', userId: 'oz', sourceMessageIds: [3] },
              false,
            ),
          ],
          context,
        );
        await storage.memories.update(updated?.id ?? 0, { sourceMessageIds: [1, 3] }, context);
        await storage.memories.archive([archived?.id ?? 0], context);
        const citing = await storage.extraction.citing(3, [ownerKey('room', { channelId: 'room' })]);
        expect(citing.map((memory) => memory.id)).toEqual([cited?.id, updated?.id]);
        expect((await storage.extraction.citing(3, ['user:oz'])).map((memory) => memory.id)).toEqual([elsewhere?.id]);
        expect(await storage.extraction.citing(1, ['user:oz'])).toEqual([]);
        await storage.memories.update(updated?.id ?? 0, { sourceMessageIds: [1] }, context);
        expect(
          (await storage.extraction.citing(3, [ownerKey('room', { channelId: 'room' })])).map((memory) => memory.id),
        ).toEqual([cited?.id]);
      });
    });
  });
}

function allActive() {
  return { archived: 'exclude' as const, limit: 50, offset: 0, owners: null };
}
