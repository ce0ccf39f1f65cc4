import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Memory } from '../src/core/types.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFixedClock } from '../src/testing.js';
import { insertUserKey, storesIn, writeBelowTheEngine } from './data-from-before.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack27a-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * Wt-attack27a, identifiers: an assistant reply is stored with a sender id (`assistant` unless the caller names
 * another), which was also a user id any person could hold. A user whose key is bound to `assistant` purged herself, and
 * the purge took every message sent by that id: the assistant's replies to everyone, in every channel, and every
 * memory built on them (the turns of Ann's and Bob's conversations). Her export of her own data (a data-subject
 * request) held every message sent under her id too: the assistant's replies to Ann and Bob in their private channels.
 *
 * Since ADR 38 nobody becomes a user under `assistant` (no key, membership or user message); a database from before
 * may still hold one, written here below the engine, and the purge and export keep to what she said.
 */

/** The person called assistant as a database from before ADR 38 may hold her: in the lobby, with what she said there. */
async function addTheNamesake(path: string, at: number): Promise<string> {
  let key = '';
  await writeBelowTheEngine(path, async (storage) => {
    await storage.memberships.putChannel({ id: 'lobby', visibility: 'private', members: ['assistant'] }, at);
    await storage.messages.append([
      {
        channelId: 'lobby',
        senderId: 'assistant',
        role: 'user',
        content: 'I keep my spare keys in the lobby drawer',
        topicId: null,
        createdAt: at,
      },
    ]);
    key = await insertUserKey(storage, 'assistant', 'the person called assistant', at);
  });
  return key;
}

describe.each(storesIn(folder))('on %s', (_name, pathOf) => {
  const open = (path: string) =>
    createMneme({
      path,
      clock: createFixedClock('2026-03-02T10:00:00Z'),
      logger: { warn: () => {}, info: () => {} },
    });

  it('exports to the user called assistant only what she said and may see, not the replies to others', {
    timeout: 60_000,
  }, async () => {
    const path = pathOf('export');
    const before = await open(path);
    await before.putChannel({ id: 'ann-desk', visibility: 'private', members: ['ann'] });
    await before.ingestExchange({
      channelId: 'ann-desk',
      userId: 'ann',
      userMessage: 'Where did I park the van yesterday evening?',
      assistantReply: 'You parked the van on level three of the harbour garage.',
    });
    await before.close();
    await addTheNamesake(path, Date.parse('2026-03-02T10:00:00Z'));
    const mneme = await open(path);
    try {
      await mneme.whenIdle();
      const her = mneme.as({ kind: 'user', userId: 'assistant', label: 'the person called assistant' });
      const lines: string[] = [];
      for await (const line of her.exportData({ userId: 'assistant' })) lines.push(line);
      const exported = lines.join('\n');
      expect(exported).toContain('lobby drawer');
      expect(exported).not.toContain('harbour garage');
      expect(exported).not.toContain('ann-desk');
    } finally {
      await mneme.close();
    }
  });

  it('purges only what the user said, not the assistant replies sent under the same id', {
    timeout: 60_000,
  }, async () => {
    const path = pathOf('purge');
    const before = await open(path);
    await before.putChannel({ id: 'ann-desk', visibility: 'private', members: ['ann'] });
    await before.putChannel({ id: 'bob-desk', visibility: 'private', members: ['bob'] });
    await before.ingestExchange({
      channelId: 'ann-desk',
      userId: 'ann',
      userMessage: 'Where did I park the van yesterday evening?',
      assistantReply: 'You parked the van on level three of the harbour garage.',
    });
    await before.ingestExchange({
      channelId: 'bob-desk',
      userId: 'bob',
      userMessage: 'What is the code for the bike shed lock?',
      assistantReply: 'The bike shed lock code is 7719.',
    });
    await before.whenIdle();
    await before.close();
    const key = await addTheNamesake(path, Date.parse('2026-03-02T10:00:00Z'));
    const mneme = await open(path);
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const send = async (method: string, path: string, body?: unknown) => {
        const response = await app.request(path, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, json: (await response.json()) as Record<string, unknown> };
      };
      await mneme.whenIdle();
      const turnsBefore = (await mneme.list({ category: 'exchange', limit: 100 })).memories;
      expect(turnsBefore.map((memory: Memory) => memory.channelId).sort()).toEqual(['ann-desk', 'bob-desk', 'lobby']);

      const purged = await send('DELETE', '/api/users/assistant/data');
      expect(purged.status).toBe(200);
      expect(purged.json.messages).toBe(1);

      for (const channelId of ['ann-desk', 'bob-desk']) {
        const turns = await mneme.turns({ channelId, count: 10 });
        expect(turns.map((turn) => turn.role).sort(), channelId).toEqual(['assistant', 'user']);
      }
      const turnsAfter = (await mneme.list({ category: 'exchange', limit: 100 })).memories;
      expect(turnsAfter.map((memory: Memory) => memory.channelId).sort()).toEqual(['ann-desk', 'bob-desk']);
      expect(turnsAfter.map((memory) => memory.content).join('\n')).toContain('7719');
    } finally {
      await mneme.close();
    }
  });
});
