import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';

/**
 * wt-attack10b: the full-text leg's audience snapshot (ADR 25, 2026-12-02, session 10) seen from the HTTP service
 * with two users' real API keys. The server's connection holds the snapshot (at once, and after the default 32 quiet
 * searches); another connection (another process in production) and the server itself write between its requests:
 * forget, a new memory, a member leaving a room, a purge whose highest id is then given to another user's memory,
 * a commit that was in flight while the server read its snapshot. After each write, the next search and context of
 * each key are that key's user's only, never a forgotten or purged memory, and a new memory is found at once.
 */
const folder = mkdtempSync('/tmp/wt-attack10b-http-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const engines: MaintenanceEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.mneme.close();
});

interface Hit {
  memory: { id: number; content: string };
}

describe('attack10b: the audience snapshot through HTTP with two keys', () => {
  for (const textSnapshotAfter of [0, undefined]) {
    it(`keeps each key to its user's memories across writes between requests (snapshot after ${textSnapshotAfter ?? 'the default 32'} quiet searches)`, async () => {
      const path = join(folder, `http-${textSnapshotAfter ?? 'default'}.db`);
      const writer = await openMaintenanceEngine({ path });
      const server = await openMaintenanceEngine({
        path,
        ...(textSnapshotAfter === undefined ? {} : { textSnapshotAfter }),
      });
      engines.push(writer, server);
      await writer.mneme.putChannel({ id: 'r1', members: ['ann', 'bob'] });
      const id = async (input: Parameters<typeof writer.mneme.remember>[0]) => (await writer.mneme.remember(input)).id;
      const annOld = await id({ content: 'ann zebrafinch diary entry', scope: 'personal', userId: 'ann' });
      const annKeep = await id({ content: 'ann keeps a zebrafinch named Pip', scope: 'personal', userId: 'ann' });
      const bobSecret = await id({ content: 'bob zebrafinch secret vault code', scope: 'personal', userId: 'bob' });
      const room = await id({ content: 'room zebrafinch plan', scope: 'room', channelId: 'r1', userId: 'bob' });
      const global = await id({ content: 'a zebrafinch is a small bird', scope: 'global' });
      await writer.mneme.apiKeys.create({ label: 'ops' });
      const keys: Record<'ann' | 'bob', string> = {
        ann: (await writer.mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key,
        bob: (await writer.mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
      };
      const app = createHttpApp({ mneme: server.mneme, apiKeys: server.mneme.apiKeys, logError: () => {} });

      /** The ids `user` gets from the search route and the context route (both must agree on the audience). */
      async function ask(user: 'ann' | 'bob', viewer: Record<string, string> = {}): Promise<number[]> {
        const found = new Set<number>();
        for (const [route, body] of [
          ['/api/memories/search', { query: 'zebrafinch', topK: 50, viewer }],
          ['/api/context', { query: 'zebrafinch', topK: 50, viewer }],
        ] as const) {
          server.clock.advance(1000);
          const response = await app.request(route, {
            method: 'POST',
            headers: { authorization: `Bearer ${keys[user]}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          const text = await response.text();
          expect(response.status, `${route} ${text}`).toBe(200);
          const hits = (JSON.parse(text) as { hits: Hit[] }).hits;
          if (route === '/api/memories/search') for (const hit of hits) found.add(hit.memory.id);
          else for (const hit of hits) expect(found.has(hit.memory.id), `${route}: ${hit.memory.id}`).toBe(true);
        }
        return [...found].sort((left, right) => left - right);
      }
      /**
       * Quiet searches enough for the server to hold its snapshot, and to serve it long enough (64 searches) that the
       * next one is read as soon again; then requests (their touches do not drop it).
       */
      async function warm(): Promise<void> {
        for (let turn = 0; turn < 100; turn++) {
          await server.storage.memories.searchText({
            terms: ['zebrafinch'],
            owners: ['user:bob'],
            limit: 50,
            includeFaded: false,
          });
        }
        for (let turn = 0; turn < 4; turn++) await ask(turn % 2 === 0 ? 'ann' : 'bob');
      }
      const sorted = (...ids: number[]) => ids.sort((left, right) => left - right);

      await warm();
      expect(await ask('ann')).toEqual(sorted(annOld, annKeep, global));
      expect(await ask('bob')).toEqual(sorted(bobSecret, global));
      expect(await ask('ann', { channelId: 'r1' })).toEqual(sorted(annOld, annKeep, room, global));

      // Another connection forgets ann's old memory: gone at once, for ann, and never shown to bob.
      await writer.mneme.forget(annOld);
      expect(await ask('ann')).toEqual(sorted(annKeep, global));
      await warm();
      // Another connection adds one: found at once by ann only.
      const annNew = await id({ content: 'ann zebrafinch laid an egg', scope: 'personal', userId: 'ann' });
      expect(await ask('ann')).toEqual(sorted(annKeep, annNew, global));
      expect(await ask('bob')).toEqual(sorted(bobSecret, global));
      await warm();
      // Ann leaves the room (membership is another table): the room's memory is no longer hers to see.
      await writer.mneme.putChannel({ id: 'r1', members: ['bob'] });
      const inRoom = await ask('ann', { channelId: 'r1' }).catch(() => [] as number[]);
      expect(inRoom).not.toContain(room);
      expect(await ask('bob', { channelId: 'r1' })).toEqual(sorted(bobSecret, room, global));
      await warm();
      // A commit in flight (begun before the server read its snapshot) lands between two requests.
      const raw = new Database(path);
      raw.pragma('busy_timeout = 5000');
      raw.exec('BEGIN IMMEDIATE');
      raw.prepare('UPDATE memories SET archived_at = 1 WHERE id = ?').run(annKeep);
      raw
        .prepare("UPDATE memories SET owner = 'user:ann', user_id = 'ann', scope = 'personal' WHERE id = ?")
        .run(bobSecret);
      // Recall's touch would wait for the write lock: the server's full-text search alone, quiet, meanwhile.
      for (let turn = 0; turn < 40; turn++) {
        const hits = await server.storage.memories.searchText({
          terms: ['zebrafinch'],
          owners: ['user:ann'],
          limit: 50,
          includeFaded: false,
        });
        expect(hits.map((hit) => hit.id).sort((left, right) => left - right)).toEqual(sorted(annKeep, annNew));
      }
      raw.exec('COMMIT');
      raw.close();
      expect(await ask('ann')).toEqual(sorted(annNew, bobSecret, global));
      expect(await ask('bob')).toEqual(sorted(global));
      await warm();
      // The server's own connection writes (forget, then restore): seen at its next request.
      await server.mneme.forget(annNew);
      expect(await ask('ann')).toEqual(sorted(bobSecret, global));
      await warm();
      await server.mneme.restore(annNew);
      expect(await ask('ann')).toEqual(sorted(annNew, bobSecret, global));
      await warm();
      // A memory the server's own connection writes: found at its next request, by ann only.
      const annOwn = (await server.mneme.remember({ content: 'ann zebrafinch sang', scope: 'personal', userId: 'ann' }))
        .id;
      expect(await ask('ann')).toEqual(sorted(annNew, bobSecret, annOwn, global));
      expect(await ask('bob')).toEqual(sorted(global));
      await warm();
      // Ann purged by another connection (with bob's moved memory, hers now), then a new memory of bob's.
      await writer.mneme.purgeUser('ann');
      // The purge revoked ann's key; a new one for the same user id.
      keys.ann = (await writer.mneme.apiKeys.create({ label: 'ann again', userId: 'ann' })).key;
      expect(await ask('ann')).toEqual(sorted(global));
      await warm();
      const bobNew = await id({ content: 'bob zebrafinch moved house', scope: 'personal', userId: 'bob' });
      expect(await ask('ann')).toEqual(sorted(global));
      expect(await ask('bob')).toEqual(sorted(bobNew, global));
    }, 120_000);
  }
});
