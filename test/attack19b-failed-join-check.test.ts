import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, MnemeError } from '../src/core/errors.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { Storage } from '../src/storage/storage.js';
import {
  closeEngineStores,
  type EngineStore,
  openMaintenanceEngine,
  prepareEngineStore,
  serverEngineStores,
} from './maintenance-engine.js';

/**
 * Ingest writes a sender's new membership with an audience mark of the space, in the append's transaction, and checks
 * the space once the append is in (session 19). When that check fails (the store busy, a lost connection), the
 * caller gets an error for a message that is stored, and retries it with the same externalId: the retry is a
 * duplicate, which writes no membership and so no mark, and the mark of the first attempt, younger than a minute,
 * waited for a `maintain` after the minute. Meanwhile the new member read the room's memory citing a channel they are
 * not in.
 */

/** A memory of `owner` citing message `cited`, as an earlier audience change may have left it. */
async function memoryCiting(
  storage: Storage,
  space: { scope: 'room'; channelId: string } | { scope: 'project'; projectId: string },
  cited: number,
  at: number,
): Promise<number> {
  const [memory] = await storage.memories.insert(
    [
      {
        content: 'The vault code is 4471',
        category: 'fact',
        sector: 'semantic',
        scope: space.scope,
        owner: space.scope === 'room' ? `room:${space.channelId}` : `project:${space.projectId}`,
        userId: null,
        channelId: space.scope === 'room' ? space.channelId : null,
        projectId: space.scope === 'project' ? space.projectId : null,
        topicId: null,
        source: 'extraction',
        importance: 0.5,
        pinned: false,
        sourceMessageIds: [cited],
        sourceIds: [],
        embedding: null,
      },
    ],
    { at, actor: 'test' },
  );
  return memory?.id ?? 0;
}

/** The space Bob joins with his message: the team room, or (his message in its topic) the project Ann alone is in. */
const joined = [
  { space: 'room', viewer: { channelId: 'team' }, topicId: undefined },
  { space: 'project', viewer: { projectId: 'deal' }, topicId: 'pricing' },
] as const;

/** Makes the audience check's first read of the cited channels fail, as a busy store does; `failed()` once it has. */
function failCheckOnce(storage: Storage): { failed(): boolean } {
  const cited = storage.memories.citedChannels.bind(storage.memories);
  let failures = 1;
  storage.memories.citedChannels = async (query) => {
    if (failures > 0) {
      failures--;
      throw new MnemeError(ErrorCode.StoreBusy, 'the store is busy; retry');
    }
    return cited(query);
  };
  return { failed: () => failures === 0 };
}

describe.each(serverEngineStores)('a join whose audience check fails after the append, on %s', (store: EngineStore) => {
  beforeAll(() => prepareEngineStore(store), 120_000);
  afterAll(() => closeEngineStores());

  it.each(joined)(
    'keeps the memory of the $space from the new member once the message is retried',
    { timeout: 60_000 },
    async ({ space, viewer, topicId }) => {
      const { mneme, storage, clock } = await openMaintenanceEngine({ store });
      try {
        await mneme.putChannel({ id: 'secret', members: ['ann'] });
        await mneme.putChannel({ id: 'team', members: ['ann', ...(space === 'project' ? ['bob'] : [])] });
        await mneme.createProject({ id: 'deal', name: 'Deal', members: ['ann'] });
        await mneme.createTopic({ id: 'pricing', projectId: 'deal', members: ['ann'] });
        const said = await mneme.ingest({ channelId: 'secret', sender: 'ann', content: 'The vault code is 4471' });
        const cites = said.messages[0]?.id ?? 0;
        const written = await memoryCiting(
          storage,
          space === 'room' ? { scope: 'room', channelId: 'team' } : { scope: 'project', projectId: 'deal' },
          cites,
          clock.now(),
        );

        // The check after Bob's append fails once.
        const failing = failCheckOnce(storage);
        const message = {
          channelId: 'team',
          sender: 'bob',
          content: 'Morning all',
          externalId: 'bob-1',
          ...(topicId ? { topicId } : {}),
        };
        await expect(mneme.ingest(message)).rejects.toThrow(/were stored.*busy.*same externalId/);
        expect(failing.failed()).toBe(true);

        const retried = await mneme.ingest(message);

        expect(retried.duplicate).toBe(true);
        expect(
          await storage.memberships.isMember(
            space === 'room' ? 'channel' : 'project',
            space === 'room' ? 'team' : 'deal',
            'bob',
          ),
        ).toBe(true);
        const [memory] = await storage.memories.get([written]);
        expect([memory?.scope, memory?.channelId]).toEqual(['room', 'secret']);
        const asBob = await mneme.recall({ query: 'vault code', viewer: { userId: 'bob', ...viewer } });
        expect(asBob.hits.map((hit) => hit.memory.id)).not.toContain(written);
      } finally {
        await mneme.close();
      }
    },
  );
  it('writes the chat command of the message once, with the message, and not again at the retry', {
    timeout: 60_000,
  }, async () => {
    const { mneme, storage } = await openMaintenanceEngine({ store });
    try {
      await mneme.putChannel({ id: 'team', members: ['ann'] });
      failCheckOnce(storage);
      const message = {
        channelId: 'team',
        sender: 'bob',
        content: '/remember The launch moved to Friday',
        externalId: 'bob-1',
      };
      await expect(mneme.ingest(message)).rejects.toThrow(/were stored/);

      const retried = await mneme.ingest(message);
      const again = await mneme.ingest(message);

      expect(retried.duplicate).toBe(true);
      // Written in the append's transaction (ADR 30), before the check failed: the retry finds it done.
      expect(retried.command).toBeNull();
      expect(again.command).toBeNull();
      const remembered = (await mneme.list({ limit: 50 })).memories.filter((memory) =>
        memory.content.includes('launch moved'),
      );
      expect(remembered.length).toBe(1);
    } finally {
      await mneme.close();
    }
  });
  it('keeps the room memory from the new member when the HTTP request is sent again under its Idempotency-Key', {
    timeout: 60_000,
  }, async () => {
    const { mneme, storage, clock } = await openMaintenanceEngine({ store });
    try {
      const ops = (await mneme.apiKeys.create({ label: 'ops' })).key;
      const bob = (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key;
      await mneme.putChannel({ id: 'secret', members: ['ann'] });
      await mneme.putChannel({ id: 'team', members: ['ann'] });
      const said = await mneme.ingest({ channelId: 'secret', sender: 'ann', content: 'The vault code is 4471' });
      const written = await memoryCiting(
        storage,
        { scope: 'room', channelId: 'team' },
        said.messages[0]?.id ?? 0,
        clock.now(),
      );
      failCheckOnce(storage);
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      // The operator's bridge posts Bob's first message in the team channel, with no externalId of its own.
      const post = () =>
        app.request('/api/messages', {
          method: 'POST',
          headers: { authorization: `Bearer ${ops}`, 'content-type': 'application/json', 'idempotency-key': 'bob-1' },
          body: JSON.stringify({ channelId: 'team', sender: 'bob', content: 'Morning all' }),
        });
      expect((await post()).status).toBe(503);
      expect((await post()).status).toBe(202);

      const search = await app.request('/api/memories/search', {
        method: 'POST',
        headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'vault code', viewer: { channelId: 'team' } }),
      });
      expect(search.status).toBe(200);
      const found = (await search.json()) as { hits: Array<{ memory: { id: number } }> };
      expect(found.hits.map((hit) => hit.memory.id)).not.toContain(written);
      const [memory] = await storage.memories.get([written]);
      expect([memory?.scope, memory?.channelId]).toEqual(['room', 'secret']);
    } finally {
      await mneme.close();
    }
  });
});

describe('a join whose audience check fails in one process, retried in another on the same SQLite file', () => {
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack19b-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('keeps the room memory from the new member once the retry reaches the other process', {
    timeout: 60_000,
  }, async () => {
    const path = join(folder, 'two.db');
    const first = await openMaintenanceEngine({ path });
    const second = await openMaintenanceEngine({ path });
    try {
      await first.mneme.putChannel({ id: 'secret', members: ['ann'] });
      await first.mneme.putChannel({ id: 'team', members: ['ann'] });
      const said = await first.mneme.ingest({ channelId: 'secret', sender: 'ann', content: 'The vault code is 4471' });
      const written = await memoryCiting(
        first.storage,
        { scope: 'room', channelId: 'team' },
        said.messages[0]?.id ?? 0,
        first.clock.now(),
      );
      // The first process's check fails, and it is never asked again (as one that died there).
      first.storage.memories.citedChannels = async () => {
        throw new MnemeError(ErrorCode.StoreBusy, 'the store is busy; retry');
      };
      const message = { channelId: 'team', sender: 'bob', content: 'Morning all', externalId: 'bob-1' };
      await expect(first.mneme.ingest(message)).rejects.toThrow(/were stored/);

      const retried = await second.mneme.ingest(message);

      expect(retried.duplicate).toBe(true);
      const [memory] = await second.storage.memories.get([written]);
      expect([memory?.scope, memory?.channelId]).toEqual(['room', 'secret']);
      const asBob = await second.mneme.recall({ query: 'vault code', viewer: { userId: 'bob', channelId: 'team' } });
      expect(asBob.hits.map((hit) => hit.memory.id)).not.toContain(written);
    } finally {
      await second.mneme.close();
      await first.mneme.close();
    }
  });
});
