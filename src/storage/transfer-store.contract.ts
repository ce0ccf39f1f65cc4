import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ownerKey } from '../core/scope.js';
import type { Scope } from '../core/types.js';
import type { NewMemory } from './memory-store.js';
import type { NewMessage } from './message-store.js';
import type { Storage } from './storage.js';
import type { ImportedMemory, TransferFilter, TransferIngestFile } from './transfer-store.js';

const at = Date.parse('2024-06-15T12:00:00.000Z');
const context = { at, actor: 'tester' };

function memory(content: string, scope: Scope, ids: Partial<Pick<NewMemory, 'userId' | 'channelId'>> = {}): NewMemory {
  const owners = { userId: ids.userId ?? null, channelId: ids.channelId ?? null, projectId: null, topicId: null };
  return {
    content,
    category: 'fact',
    sector: 'semantic',
    scope,
    owner: ownerKey(scope, owners),
    ...owners,
    source: 'manual',
    importance: 0.5,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    embedding: null,
  };
}

function imported(content: string, overrides: Partial<ImportedMemory> = {}): ImportedMemory {
  return {
    ...memory(content, 'personal', { userId: 'ann' }),
    strength: 0.7,
    salience: 0.4,
    accessCount: 3,
    lastAccessedAt: at + 5,
    validFrom: at - 10,
    archivedAt: null,
    fadedAt: null,
    createdAt: at - 10,
    updatedAt: at,
    decayedAt: null,
    searchContext: null,
    searchContextMessageId: null,
    chunkMessageId: null,
    chunkIndex: null,
    ...overrides,
  };
}

/** One message of a file `mneme ingest` reads, appended with the file's progress (`ingest_files`), as ingest does. */
async function ingestLine(storage: Storage, file: TransferIngestFile, content = `line ${file.line}`): Promise<void> {
  const message: NewMessage = { channelId: 'dm', senderId: 'ann', role: 'user', content, topicId: null, createdAt: at };
  const { updatedAt, ...progress } = file;
  await storage.messages.append([message], { file: { ...progress, at: updatedAt } });
}

const sha = (digit: string) => digit.repeat(64);

/**
 * What every storage backend's TransferStore must do (export's paged reads, the import's one
 * transaction). Call it from a backend's test file with a function that opens a fresh, empty storage.
 */
export function describeTransferStoreContract(
  name: string,
  open: () => Promise<Storage>,
  options: { snapshots?: boolean } = {},
): void {
  const snapshots = options.snapshots ?? true;
  describe(`TransferStore contract: ${name}`, () => {
    let storage: Storage;
    beforeEach(async () => {
      storage = await open();
    });
    afterEach(async () => {
      await storage.close();
    });

    it(
      snapshots
        ? 'reads through a snapshot the database as it was when it opened, whatever commits before it is closed'
        : 'reads through a snapshot the database as it is (a store of one connection holds no snapshot open)',
      async () => {
        await storage.messages.append([
          { channelId: 'dm', senderId: 'ann', role: 'user', content: 'first', topicId: null, createdAt: at },
        ]);
        const [kept] = await storage.memories.insert([memory('kept', 'personal', { userId: 'ann' })], context);
        await storage.maintenanceState.set('dm', 'extraction', { watermark: 1, lastRunAt: at });
        const snapshot = await storage.transfer.snapshot();
        try {
          const [added] = await storage.messages.append([
            { channelId: 'dm', senderId: 'ann', role: 'user', content: 'second', topicId: null, createdAt: at },
          ]);
          const [later] = await storage.memories.insert([memory('later', 'personal', { userId: 'ann' })], context);
          await storage.memories.archive([kept?.id ?? 0], { ...context, at: at + 1 });
          await storage.maintenanceState.set('dm', 'extraction', { watermark: added?.id ?? 0, lastRunAt: at + 1 });
          const ids = { messages: [1, added?.id ?? 0], memories: [kept?.id ?? 0, later?.id ?? 0] };
          const read = {
            memories: (await snapshot.memories(0, 10)).map((row) => [row.content, row.archivedAt]),
            watermarks: (await snapshot.watermarks()).map((state) => state.watermark),
            messageIds: [...(await snapshot.messageIds(ids.messages))].sort((a, b) => a - b),
            memoryIds: [...(await snapshot.memoryIds(ids.memories))].sort((a, b) => a - b),
            horizon: await snapshot.horizon(),
          };
          const now = {
            memories: [
              ['kept', new Date(at + 1).toISOString()],
              ['later', null],
            ],
            watermarks: [added?.id],
            messageIds: ids.messages,
            memoryIds: ids.memories,
            horizon: { messageId: added?.id, memoryId: later?.id, linkId: 0 },
          };
          expect(read).toEqual(
            snapshots
              ? {
                  memories: [['kept', null]],
                  watermarks: [1],
                  messageIds: [1],
                  memoryIds: [kept?.id],
                  horizon: { messageId: 1, memoryId: kept?.id, linkId: 0 },
                }
              : now,
          );
          // The store's own reads see every commit.
          expect(await storage.transfer.memoryIds(ids.memories)).toEqual(new Set(ids.memories));
        } finally {
          await snapshot.close();
        }
        // Closed, it holds nothing back: the store writes and reads as before.
        expect(await storage.memories.insert([memory('after', 'global')], context)).toHaveLength(1);
      },
    );

    it('reads every memory, archived ones too, a page at a time by id', async () => {
      const written = await storage.memories.insert(
        ['one', 'two', 'three'].map((content) => memory(content, 'global')),
        context,
      );
      await storage.memories.archive([written[1]?.id ?? 0], { ...context, at: at + 1 });
      const first = await storage.transfer.memories(0, 2);
      const second = await storage.transfer.memories(first.at(-1)?.id ?? 0, 2);
      expect([...first, ...second].map((row) => row.content)).toEqual(['one', 'two', 'three']);
      expect(first[1]).toMatchObject({ owner: 'global', archivedAt: new Date(at + 1).toISOString() });
      expect(await storage.transfer.horizon()).toMatchObject({ memoryId: written[2]?.id, messageId: 0, linkId: 0 });
      const versions = await storage.transfer.versions(written.map((row) => row.id));
      expect(versions.map((version) => [version.memoryId, version.action])).toEqual([
        [written[0]?.id, 'create'],
        [written[1]?.id, 'create'],
        [written[1]?.id, 'archive'],
        [written[2]?.id, 'create'],
      ]);
    });

    it("filters one user's rows: their channels' messages and what they sent, their owners' memories", async () => {
      await storage.messages.append([
        { channelId: 'shared', senderId: 'bob', role: 'user', content: 'in shared', topicId: null, createdAt: at },
        { channelId: 'dm-bob-cal', senderId: 'bob', role: 'user', content: 'secret', topicId: null, createdAt: at },
        { channelId: 'elsewhere', senderId: 'ann', role: 'user', content: 'ann said', topicId: null, createdAt: at },
      ]);
      const rows = await storage.memories.insert(
        [
          memory('ann personal', 'personal', { userId: 'ann' }),
          memory('bob personal', 'personal', { userId: 'bob' }),
          memory('room of shared', 'room', { channelId: 'shared' }),
          memory('room of dm', 'room', { channelId: 'dm-bob-cal' }),
          memory('global by ann', 'global', { userId: 'ann' }),
          memory('global by nobody', 'global'),
        ],
        context,
      );
      const id = (content: string) => rows.find((row) => row.content === content)?.id ?? 0;
      await storage.links.add(
        [
          { sourceId: id('ann personal'), targetId: id('room of shared'), type: 'semantic' },
          { sourceId: id('ann personal'), targetId: id('bob personal'), type: 'semantic' },
        ],
        at,
      );
      await storage.memberships.putChannel({ id: 'shared', visibility: 'private', members: ['ann', 'bob'] }, at);
      const filter: TransferFilter = { userId: 'ann', channelIds: ['shared'], owners: ['user:ann', 'room:shared'] };
      expect((await storage.transfer.messages(0, 10, filter)).map((row) => row.content)).toEqual([
        'in shared',
        'ann said',
      ]);
      expect((await storage.transfer.memories(0, 10, filter)).map((row) => row.content)).toEqual([
        'ann personal',
        'room of shared',
        'global by ann',
      ]);
      expect((await storage.transfer.links(0, 10, filter)).map((link) => link.targetId)).toEqual([
        id('room of shared'),
      ]);
      expect(await storage.transfer.links(0, 10)).toHaveLength(2);
      expect(await storage.transfer.spacesOf('ann')).toEqual([{ kind: 'channel', id: 'shared' }]);
      expect(await storage.transfer.memberships(null, 10, 'ann')).toEqual([
        { kind: 'channel', spaceId: 'shared', userId: 'ann', addedAt: at },
      ]);
      const all = await storage.transfer.memberships(null, 1);
      expect(await storage.transfer.memberships(all[0] ?? null, 10)).toEqual([
        { kind: 'channel', spaceId: 'shared', userId: 'bob', addedAt: at },
      ]);
      expect((await storage.transfer.referencedBy(filter)).userIds).toEqual(['ann', 'bob']);
    });

    it('refuses an import that must find the database empty once it holds the write lock, leaving no transaction open', async () => {
      await storage.directory.putUser({ id: 'ann', displayName: 'Ann' }, at);
      await expect(storage.transfer.beginImport({ mustBeEmpty: true })).rejects.toMatchObject({ code: 'CONFLICT' });
      await storage.directory.putUser({ id: 'bob', displayName: 'Bob' }, at);
      expect(await storage.directory.getUser('bob')).toMatchObject({ displayName: 'Bob' });
      const session = await storage.transfer.beginImport();
      await session.rollback();
    });

    it('reads the file records of mneme ingest by path, and an import writes them back as they were', async () => {
      const a: TransferIngestFile = { path: '/data/a.jsonl', line: 5, prefixSha256: sha('a'), updatedAt: at + 2 };
      const b: TransferIngestFile = { path: '/data/b.jsonl', line: 2, prefixSha256: sha('b'), updatedAt: at + 1 };
      const files = [a, b];
      await ingestLine(storage, { ...b, line: 1, prefixSha256: sha('0'), updatedAt: at });
      await ingestLine(storage, b);
      await ingestLine(storage, a);
      const read = await storage.transfer.ingestFiles();
      expect(read).toEqual(files);

      // Into a new, empty database (on PostgreSQL the schema is made anew): a rollback leaves no record.
      await storage.close();
      storage = await open();
      expect(await storage.transfer.ingestFiles()).toEqual([]);
      const failed = await storage.transfer.beginImport({ mustBeEmpty: true });
      await failed.putIngestFiles(read);
      await failed.rollback();
      expect(await storage.transfer.ingestFiles()).toEqual([]);
      const session = await storage.transfer.beginImport({ mustBeEmpty: true });
      await session.putIngestFiles(read);
      await session.commit();
      expect(await storage.transfer.ingestFiles()).toEqual(files);
      // What `mneme ingest --resume` reads, and the next batch of the file moves the record on.
      expect(await storage.messages.ingestFile('/data/a.jsonl')).toEqual({
        path: '/data/a.jsonl',
        line: 5,
        prefixSha256: sha('a'),
      });
      await ingestLine(storage, { path: '/data/a.jsonl', line: 6, prefixSha256: sha('c'), updatedAt: at + 3 });
      expect(await storage.messages.ingestFile('/data/a.jsonl')).toMatchObject({ line: 6, prefixSha256: sha('c') });
    });

    it('refuses an import of a file record for a path the database already records, and the import writes nothing', async () => {
      await ingestLine(storage, { path: '/data/a.jsonl', line: 3, prefixSha256: sha('a'), updatedAt: at });
      const session = await storage.transfer.beginImport();
      await session.putUsers([{ id: 'zed', displayName: 'Zed', createdAt: at, updatedAt: at, leftNames: [] }]);
      await expect(
        session.putIngestFiles([
          { path: '/data/new.jsonl', line: 4, prefixSha256: sha('b'), updatedAt: at },
          { path: '/data/a.jsonl', line: 9, prefixSha256: sha('c'), updatedAt: at },
        ]),
      ).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('already records how far mneme ingest got in /data/a.jsonl (line 3)'),
      });
      await session.rollback();
      expect(await storage.transfer.ingestFiles()).toEqual([
        { path: '/data/a.jsonl', line: 3, prefixSha256: sha('a'), updatedAt: at },
      ]);
      expect(await storage.directory.getUser('zed')).toBeNull();
      // The failed import left no transaction open.
      await ingestLine(storage, { path: '/data/a.jsonl', line: 4, prefixSha256: sha('d'), updatedAt: at + 1 });
      expect(await storage.messages.ingestFile('/data/a.jsonl')).toMatchObject({ line: 4 });
    });

    it('tells an import which reasons create versions already have, its own uncommitted ones included', async () => {
      const snapshot = { content: 'x', category: 'fact', importance: 0.5, pinned: false, archivedAt: null };
      const first = await storage.transfer.beginImport();
      const [id = 0] = await first.insertMemories([imported('Ann keeps bees')]);
      await first.addVersions([
        {
          memoryId: id,
          version: 1,
          action: 'create',
          actor: 'mem0',
          reason: 'from m-1',
          changes: {},
          snapshot,
          createdAt: at,
        },
      ]);
      expect(await first.createReasons(['from m-1', 'from m-2'])).toEqual(new Set(['from m-1']));
      await first.commit();
      const second = await storage.transfer.beginImport();
      expect(await second.createReasons(['from m-2', 'from m-1'])).toEqual(new Set(['from m-1']));
      expect(await second.createReasons([])).toEqual(new Set());
      await second.rollback();
    });

    it('writes an import in one transaction: a rollback leaves the database empty, a commit keeps every field', async () => {
      expect(await storage.transfer.isEmpty()).toBe(true);
      const failed = await storage.transfer.beginImport();
      await failed.putUsers([{ id: 'ann', displayName: 'Ann', createdAt: at, updatedAt: at, leftNames: [] }]);
      await failed.insertMemories([imported('rolled back')]);
      await failed.rollback();
      expect(await storage.transfer.isEmpty()).toBe(true);

      const session = await storage.transfer.beginImport();
      const [messageId = 0] = await session.appendMessages([
        {
          channelId: 'dm',
          senderId: 'ann',
          role: 'user',
          content: 'hello',
          topicId: null,
          externalId: 'evt-1',
          replyTo: null,
          createdAt: at,
        },
      ]);
      const [older = 0, newer = 0] = await session.insertMemories([
        imported('Ann lived in Oslo', { sourceMessageIds: [messageId], archivedAt: at + 1, fadedAt: at + 1 }),
        imported('Ann lives in Rome'),
      ]);
      await session.setSupersededBy([[older, newer]]);
      await session.setSourceIds([[newer, [older]]]);
      await session.addVersions([
        {
          memoryId: older,
          version: 1,
          action: 'create',
          actor: 'ann',
          reason: null,
          changes: {},
          snapshot: {
            content: 'Ann lived in Oslo',
            category: 'fact',
            importance: 0.5,
            pinned: false,
            archivedAt: null,
          },
          createdAt: at - 10,
        },
      ]);
      await session.addLinks([{ sourceId: newer, targetId: older, type: 'supersedes', strength: 1, createdAt: at }]);
      await session.setWatermarks([
        { channelId: 'dm', task: 'extraction', watermark: messageId, lastRunAt: null, details: null },
      ]);
      await session.replacePolicy([
        { version: 1, preset: 'memo-rag', overrides: {}, change: 'imported', actor: null, createdAt: at },
      ]);
      await session.commit();

      expect(await storage.transfer.isEmpty()).toBe(false);
      expect((await storage.transfer.messages(0, 10)).map((row) => row.externalId)).toEqual(['evt-1']);
      const [first, second] = await storage.transfer.memories(0, 10);
      expect(first).toMatchObject({
        content: 'Ann lived in Oslo',
        owner: 'user:ann',
        strength: 0.7,
        salience: 0.4,
        accessCount: 3,
        sourceMessageIds: [messageId],
        supersededBy: newer,
        fadedAt: new Date(at + 1).toISOString(),
        createdAt: new Date(at - 10).toISOString(),
        updatedAt: new Date(at).toISOString(),
      });
      expect(second).toMatchObject({ sourceIds: [older], supersededBy: null });
      expect(await storage.memories.history(older)).toHaveLength(1);
      expect(await storage.links.of(newer)).toHaveLength(1);
      expect(await storage.maintenanceState.get('dm', 'extraction')).toMatchObject({ watermark: messageId });
      expect(await storage.policy.current()).toMatchObject({ version: 1, preset: 'memo-rag' });
      // The store works as before once the import ended.
      expect(await storage.memories.insert([memory('after', 'global')], context)).toHaveLength(1);
    });
  });
}
