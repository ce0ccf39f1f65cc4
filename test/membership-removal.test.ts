import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';

/**
 * An attack angle that held (wt-attack, 2026-12-01): a member removed from a room keeps nothing of the
 * room through any route of the HTTP face or MCP, neither what was extracted before the removal nor after
 * it; what she said herself stays hers (personal facts of her own messages).
 */
describe('a member removed from a room', () => {
  it("sees none of the room's memories before or after the removal, through any HTTP route or MCP tool", async () => {
    const mneme = await createMneme({ path: ':memory:', logger: { warn: () => {}, info: () => {} } });
    try {
      await mneme.apiKeys.create({ label: 'ops' });
      const ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
      await mneme.putChannel({ id: 'war-room', members: ['ann', 'bob'] });
      await mneme.ingest({
        channelId: 'war-room',
        sender: 'ann',
        senderName: 'Ann',
        content: 'I prefer tea in the mornings',
      });
      await mneme.ingestExchange({
        channelId: 'war-room',
        userId: 'bob',
        userName: 'Bob',
        userMessage: 'The quokka-before vault code is 7731',
        assistantReply: 'Noted: the quokka-before vault code is 7731.',
      });
      await mneme.remember({
        content: 'The quokka-room budget is 40k',
        scope: 'room',
        channelId: 'war-room',
        userId: 'bob',
      });
      await mneme.whenIdle();
      const roomIds = (await mneme.list({ viewer: { channelId: 'war-room' }, scope: 'room', limit: 100 })).memories.map(
        (memory) => memory.id,
      );
      expect(roomIds.length).toBeGreaterThan(0);
      // Before the removal the same search finds the room's memories for her.
      const before = await mneme
        .as({ kind: 'user', userId: 'ann', label: 'ann app' })
        .recall({ query: 'vault code budget password', viewer: { channelId: 'war-room' } });
      expect(JSON.stringify(before.hits)).toMatch(/7731/);
      expect(JSON.stringify(before.hits)).toMatch(/40k/);

      await mneme.putChannel({ id: 'war-room', members: ['bob'] });
      await mneme.ingest({
        channelId: 'war-room',
        sender: 'bob',
        senderName: 'Bob',
        content: 'The quokka-after password is swordfish',
      });
      await mneme.whenIdle();
      const after = (await mneme.list({ viewer: { channelId: 'war-room' }, limit: 100 })).memories.map((m) => m.id);

      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => console.error(error) });
      const seen: string[] = [];
      const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const response = await app.request(path, {
          method,
          headers: { authorization: `Bearer ${ann}`, 'content-type': 'application/json', ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        seen.push(text);
        return response.status;
      };
      for (const viewer of [undefined, { channelId: 'war-room' }]) {
        await send('POST', '/api/memories/search', { query: 'vault code budget password', viewer });
        await send('POST', '/api/context', { query: 'vault code budget password', viewer });
      }
      await send('GET', '/api/memories?limit=200');
      await send('GET', '/api/memories?channelId=war-room');
      await send('GET', '/api/channels');
      expect(await send('GET', '/api/channels/war-room')).toBe(403);
      expect(await send('GET', '/api/channels/war-room/messages')).toBe(403);
      expect(await send('GET', '/api/channels/war-room/turns')).toBe(403);
      for (const id of [...roomIds, ...after]) {
        for (const path of [`/api/memories/${id}`, `/api/memories/${id}/history`, `/api/memories/${id}/sources`]) {
          expect([403, 404]).toContain(await send('GET', path));
        }
        expect([403, 404]).toContain(await send('PATCH', `/api/memories/${id}`, { importance: 1 }));
        expect([403, 404]).toContain(await send('DELETE', `/api/memories/${id}`));
      }
      const mcp = { accept: 'application/json, text/event-stream' };
      for (const headers of [mcp, { ...mcp, 'mneme-channel': 'war-room' }]) {
        for (const [name, args] of [
          ['recall', { query: 'vault code budget password' }],
          ['context', { query: 'vault code budget password' }],
          ['list', {}],
        ] as const) {
          await send(
            'POST',
            '/mcp',
            { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
            headers,
          );
        }
      }
      const everything = seen.join('\n');
      expect(everything).not.toMatch(/quokka|7731|40k|swordfish/i);
      // What Ann said herself stays hers.
      const own = await send('POST', '/api/memories/search', { query: 'tea mornings' });
      expect(own).toBe(200);
      expect(seen.at(-1)).toMatch(/tea/i);
      expect((await mneme.list({ archived: 'include', limit: 200 })).total).toBeGreaterThanOrEqual(roomIds.length);
    } finally {
      await mneme.close();
    }
  }, 60_000);
});
