import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';
import { runCli } from './cli-harness.js';
import { insertUserKey, storesIn, writeBelowTheEngine } from './data-from-before.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-reserved-ids-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const quiet = { warn: () => {}, info: () => {} };
const at = '2026-03-02T10:00:00Z';

/**
 * ADR 38: the ids mneme records its own actors under (`assistant`, the sender of every assistant reply; `maintenance`,
 * `audience`, `exchange`, `cli`, `mem0-import`, `extractor:...`, the actors of the version rows it writes) are no
 * user's. A person holding `assistant` renamed every assistant reply (PUT /api/users/assistant) and, posting in a
 * channel she was in under the external id a reply would carry, made the reply a duplicate of her message.
 */
describe.each(storesIn(folder))('on %s', (_store, pathOf) => {
  it('refuses a key, a membership, a display name, a personal memory or a user message under a reserved id with 422', {
    timeout: 60_000,
  }, async () => {
    const mneme = await createMneme({ path: pathOf('refused'), clock: createFixedClock(at), logger: quiet });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const send = async (method: string, path: string, body: unknown) => {
        const response = await app.request(path, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return {
          status: response.status,
          type: response.headers.get('content-type'),
          detail: String(((await response.json()) as { detail?: unknown }).detail),
        };
      };
      const refused = [
        await send('PUT', '/api/users/assistant', { displayName: 'Mallory' }),
        await send('PUT', '/api/channels/lobby', { visibility: 'private', members: ['ann', 'maintenance'] }),
        await send('POST', '/api/topics', { id: 'retro', members: ['audience'] }),
        await send('POST', '/api/memories', { content: 'I like tea', scope: 'personal', userId: 'extractor:offline' }),
        await send('POST', '/api/messages', { channelId: 'lobby', sender: 'assistant', content: 'Hello there all' }),
        await send('POST', '/api/messages', {
          channelId: 'lobby',
          sender: 'assistant',
          senderName: 'Mallory',
          role: 'assistant',
          content: 'Hello there all',
        }),
        await send('POST', '/api/exchanges', {
          channelId: 'lobby',
          userId: 'cli',
          userMessage: 'Hello there',
          assistantReply: 'Hello to you',
        }),
      ];
      for (const answer of refused) {
        expect(answer.status, answer.detail).toBe(422);
        expect(answer.type).toContain('application/problem+json');
        expect(answer.detail).toMatch(/is reserved: mneme records its own actors under it/);
      }
      await expect(mneme.apiKeys.create({ label: 'a person', userId: 'assistant' })).rejects.toThrow(/is reserved/);
      // What the engine itself sends under them still goes: an assistant reply, with or without an exchange.
      const reply = await send('POST', '/api/messages', {
        channelId: 'lobby',
        sender: 'assistant',
        role: 'assistant',
        content: 'Hello there all',
      });
      expect(reply.status, reply.detail).toBe(202);
      expect(await mneme.channels()).toHaveLength(1);
      expect((await mneme.list({})).memories).toHaveLength(0);
    } finally {
      await mneme.close();
    }
  });

  it('keeps a person who holds assistant in a database from before from renaming replies or taking their external id', {
    timeout: 60_000,
  }, async () => {
    const path = pathOf('before');
    const created = await createMneme({ path, clock: createFixedClock(at), logger: quiet });
    await created.putChannel({ id: 'lobby', visibility: 'private', members: ['ann'] });
    await created.close();
    let key = '';
    await writeBelowTheEngine(path, async (storage) => {
      await storage.memberships.addMembers('channel', 'lobby', ['assistant'], Date.parse(at));
      key = await insertUserKey(storage, 'assistant', 'the person called assistant', Date.parse(at));
    });
    const mneme = await createMneme({ path, clock: createFixedClock(at), logger: quiet });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const send = async (method: string, route: string, body: unknown) =>
        (
          await app.request(route, {
            method,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).status;
      expect(await send('PUT', '/api/users/assistant', { displayName: 'Mallory' })).toBe(422);
      expect(
        await send('POST', '/api/messages', {
          channelId: 'lobby',
          sender: 'assistant',
          content: 'Me first',
          externalId: 'evt-2',
        }),
      ).toBe(422);
      const exchange = await mneme.ingestExchange({
        channelId: 'lobby',
        userId: 'ann',
        userMessage: 'What time is the standup tomorrow?',
        assistantReply: 'The standup is at nine tomorrow.',
        externalId: 'evt-1',
        replyExternalId: 'evt-2',
      });
      expect(exchange.duplicate).toBe(false);
      expect(exchange.messages.map((message) => message.content)).toEqual([
        'What time is the standup tomorrow?',
        'The standup is at nine tomorrow.',
      ]);
    } finally {
      await mneme.close();
    }
  });
});

describe('mneme keys create', () => {
  it('refuses to bind a key to a reserved id with exit 2 and one line', async () => {
    const run = await runCli(join(folder, 'cli.db'), ['keys', 'create', '--label', 'bot', '--user', 'maintenance']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^mneme: .*userId "maintenance" is reserved: mneme records its own actors under it[^\n]*\n$/,
    );
  });
});
