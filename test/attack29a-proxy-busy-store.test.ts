import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { startProxyServer } from '../src/proxy/proxy-server.js';
import { startFakeUpstream } from './fake-openai-upstream.js';
import { holdWriteLock } from './write-lock.js';

/**
 * Attack finding (helper 151, 2026-12-05): while another process held the database's write lock (an import, a
 * maintenance run) for longer than the busy timeout, `mneme proxy` answered the chat with 200 and then lost its
 * exchange, one log line the only trace. The HTTP API answers 503 and its client sends the write again; the proxy's
 * client has its reply and sends nothing again. The exchange now waits for the lock (up to a minute of pauses).
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack29a-busy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Resolves once `predicate` holds, checking every few milliseconds (the test's own timeout bounds it). */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('an exchange the proxy ingests while another process holds the database', () => {
  it.each([false, true])(
    'is written once the lock is released, not lost (streamed: %s)',
    async (stream) => {
      const path = join(folder, `busy-${stream}.db`);
      const mneme = await createMneme({ path, busyTimeoutMs: 50, logger: { warn: () => {}, info: () => {} } });
      const ann = (await mneme.apiKeys.create({ label: 'ann app', userId: 'ann' })).key;
      const upstream = await startFakeUpstream();
      const log: string[] = [];
      const proxy = await startProxyServer({ mneme, upstream: upstream.url, port: 0, log: (line) => log.push(line) });
      try {
        const lock = holdWriteLock(path);
        let released = false;
        try {
          const response = await fetch(`${proxy.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${ann}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'fake-model',
              stream,
              messages: [{ role: 'user', content: 'I always take green tea in the morning' }],
            }),
          });
          expect(response.status).toBe(200);
          expect(await response.text()).toContain('mornings');
          // The first attempt met the lock (and said it waits, or gave up); the lock goes away only after that.
          await until(() => log.some((line) => /waits: .*busy|failed/.test(line)));
          lock.release();
          released = true;
        } finally {
          if (!released) lock.release();
        }
        await proxy.whenIdle();
        const turns = (await mneme.messages({ channelId: 'proxy:ann' })).messages;
        expect(turns.map((message) => `${message.senderId}: ${message.content}`)).toEqual([
          'ann: I always take green tea in the morning',
          'assistant: Green tea suits your mornings.',
        ]);
        expect(log.filter((line) => /failed/.test(line))).toEqual([]);
        expect(log.filter((line) => /waits/.test(line))).toHaveLength(1);
      } finally {
        await proxy.close();
        await upstream.close();
        await mneme.close();
      }
    },
    30_000,
  );
});
