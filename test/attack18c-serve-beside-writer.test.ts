import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type MaintenanceEngine, openMaintenanceEngine } from './maintenance-engine.js';
import { startServeProcess } from './serve-process.js';

/**
 * wt-attack18c (ADR 27): a real `mneme serve` process holds the full-text owner index in memory through another
 * connection's commits to its file, brought up to date from the record of changed memories. Another engine on the
 * same file (another process's connection, as `mneme mcp` beside the server) writes, moves, forgets and restores;
 * after each, Ann and Bob search through the server with their own API keys: each finds at once what they may see
 * now, and nothing else.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack18c-serve-'));
const children: ChildProcess[] = [];
let writer: MaintenanceEngine | null = null;
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await writer?.mneme.close();
  rmSync(folder, { recursive: true, force: true });
});

interface Hit {
  memory: { id: number; scope: string; userId: string | null; channelId: string | null; content: string };
}

describe('a served store beside another connection that writes to its file', () => {
  it('gives each key at once what its user may see after each write of the other connection, and nothing else', {
    timeout: 120_000,
  }, async () => {
    const path = join(folder, 'served.db');
    writer = await openMaintenanceEngine({ path });
    const { mneme } = writer;
    await mneme.putChannel({ id: 'both', members: ['ann', 'bob'] });
    await mneme.putChannel({ id: 'bobs', members: ['bob'] });
    for (let index = 0; index < 60; index++) await mneme.remember({ content: `harbour ferry timetable ${index}` });
    const ann = await mneme.remember({ content: 'ann harbour diary', scope: 'personal', userId: 'ann' });
    await mneme.remember({ content: 'bob harbour vault', scope: 'personal', userId: 'bob' });
    await mneme.remember({ content: 'bobs room harbour plan', scope: 'room', channelId: 'bobs' });
    const keys = {
      ann: (await mneme.apiKeys.create({ label: 'ann', userId: 'ann' })).key,
      bob: (await mneme.apiKeys.create({ label: 'bob', userId: 'bob' })).key,
    };
    const server = await startServeProcess(path, children);
    const rooms = { ann: ['both'], bob: ['both', 'bobs'] };
    const search = async (user: 'ann' | 'bob', query: string, channelId = 'both') => {
      const answer = await server.call(
        'POST',
        '/api/memories/search',
        { query, topK: 100, viewer: { channelId } },
        keys[user],
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const hits = (answer.body.hits as Hit[]).map((hit) => hit.memory);
      for (const memory of hits) {
        if (memory.scope === 'personal') expect(memory.userId, `${user}: ${memory.content}`).toBe(user);
        if (memory.scope === 'room') {
          expect(rooms[user], `${user}: ${memory.content}`).toContain(memory.channelId);
          expect(memory.channelId, `${user}: ${memory.content}`).toBe(channelId);
        }
      }
      return hits.map((memory) => memory.id);
    };
    // Enough quiet searches for the server to hold the owner index.
    for (let index = 0; index < 80; index++) {
      await search(index % 2 === 0 ? 'ann' : 'bob', `harbour ferry ${index}`, index % 4 === 3 ? 'bobs' : 'both');
    }
    expect(await search('ann', 'harbour diary')).toContain(ann.id);
    // A new memory of Ann's, written by the other connection: Ann finds it, Bob does not.
    const newer = await mneme.remember({ content: 'ann harbour lighthouse note', scope: 'personal', userId: 'ann' });
    expect(await search('ann', 'lighthouse')).toEqual([newer.id]);
    expect(await search('bob', 'lighthouse')).toEqual([]);
    // A global memory moved into Bob's room by the other connection: Bob finds it, Ann no longer.
    const [moved] = await search('ann', 'timetable 7');
    expect(moved).toBeDefined();
    await writer.storage.memories.moveTo(
      moved as number,
      { scope: 'room', channelId: 'bobs' },
      { at: Date.now(), actor: null, reason: 'test: moved into a room' },
    );
    expect(await search('ann', 'timetable 7')).not.toContain(moved);
    expect(await search('bob', 'timetable 7', 'bobs')).toContain(moved);
    expect(await search('bob', 'timetable 7')).not.toContain(moved);
    // Forgotten, then restored, by the other connection.
    await mneme.forget(newer.id);
    expect(await search('ann', 'lighthouse')).toEqual([]);
    await mneme.restore(newer.id);
    expect(await search('ann', 'lighthouse')).toEqual([newer.id]);
    // Ann's diary moved into the room of both by the other connection: Bob finds it now.
    await writer.storage.memories.moveTo(
      ann.id,
      { scope: 'room', channelId: 'both' },
      { at: Date.now(), actor: null, reason: 'test: shared' },
    );
    expect(await search('bob', 'harbour diary')).toContain(ann.id);
    // Ann purged by the other connection (its VACUUM too): Bob no longer finds her diary, nor his room less.
    await mneme.purgeUser('ann');
    expect(await search('bob', 'harbour diary')).not.toContain(ann.id);
    expect(await search('bob', 'timetable 7', 'bobs')).toContain(moved);
  });
});
