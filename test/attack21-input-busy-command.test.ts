import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createFakeEmbeddingModel, createFixedClock } from '../src/testing.js';
import { holdWriteLock } from './write-lock.js';

/**
 * wt-crash21: a write the service cannot finish because another process holds the database's write lock past the
 * busy timeout is answered 503 with Retry-After (reliability, promise 3), which tells the client it was not done and
 * to send it again. `POST /api/messages` of a `/remember` appends the message in one transaction and runs the command
 * in another: when the lock is taken in between (another process writing), the command's insert times out, the
 * client is answered 503, and the message is stored all the same. Retried as told with its externalId, it is a
 * duplicate (202, no command run): the /remember is never stored. Retried without one, the message is stored twice.
 * Since session 22 the command is written in its message's transaction (ADR 30): a 503 leaves neither.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack21-busy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * The fake embedding model, which takes the file's write lock from another connection (another process's write) when
 * it is asked for the /remember memory's vector: the append is committed by then, the command's insert comes next.
 */
function lockingEmbedder(path: string, word: string): { model: EmbeddingModel; release(): void } {
  const fake = createFakeEmbeddingModel();
  let held: { release(): void } | null = null;
  const model: EmbeddingModel = {
    modelId: fake.modelId,
    dimensions: fake.dimensions,
    embed: async (texts, purpose) => {
      if (purpose === 'document' && held === null && texts.some((text) => text.includes(word)))
        held = holdWriteLock(path);
      return fake.embed(texts, purpose);
    },
  };
  return {
    model,
    release() {
      held?.release();
      held = { release() {} };
    },
  };
}

function counts(path: string) {
  const database = new Database(path, { readonly: true });
  try {
    return {
      messages: database.prepare('SELECT count(*) FROM messages').pluck().get(),
      commands: database.prepare("SELECT count(*) FROM memories WHERE source = 'command'").pluck().get(),
    };
  } finally {
    database.close();
  }
}

describe('a /remember whose command meets another process holding the write lock', () => {
  for (const withId of [true, false]) {
    it(`stores the message and its memory once when the 503 is retried as told (${withId ? 'with' : 'without'} an externalId)`, {
      timeout: 60_000,
    }, async () => {
      const path = join(folder, `busy-${withId ? 'id' : 'no-id'}.db`);
      const locking = lockingEmbedder(path, 'peanuts');
      const mneme = await createMneme({
        path,
        embedder: locking.model,
        busyTimeoutMs: 300,
        logger: { warn: () => {}, info: () => {} },
      });
      try {
        const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
        const post = () =>
          app.request('/api/messages', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              channelId: 'kitchen',
              sender: 'ann',
              content: '/remember I am allergic to peanuts',
              ...(withId ? { externalId: 'event-7' } : {}),
            }),
          });
        const first = await post();
        const firstStatus = first.status;
        const firstBody = await first.text();
        locking.release();
        if (firstStatus === 503) {
          // Answered "not done, send it again": nothing of it may be stored.
          expect.soft(counts(path), `503 answered: ${firstBody}`).toEqual({ messages: 0, commands: 0 });
        }
        const retried = await post();
        expect(retried.status).toBe(202);
        await mneme.whenIdle();
        expect(counts(path)).toEqual({ messages: 1, commands: 1 });
      } finally {
        locking.release();
        await mneme.close();
      }
    });
  }
});

describe('a /remember sent under an Idempotency-Key whose command meets another process holding the write lock', () => {
  it('does the message once: the 503 retried under the same key neither waits on a claim nor appends it again', {
    timeout: 60_000,
  }, async () => {
    const path = join(folder, 'busy-key.db');
    const locking = lockingEmbedder(path, 'peanuts');
    const clock = createFixedClock('2024-06-15T12:00:00.000Z');
    const mneme = await createMneme({
      path,
      embedder: locking.model,
      busyTimeoutMs: 300,
      clock,
      logger: { warn: () => {}, info: () => {} },
    });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const post = () =>
        app.request('/api/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'remember-peanuts-1' },
          body: JSON.stringify({ channelId: 'kitchen', sender: 'ann', content: '/remember I am allergic to peanuts' }),
        });
      const first = await post();
      expect(first.status).toBe(503);
      locking.release();
      const statuses = [first.status];
      // Retried as Retry-After says, then again after the 5 minutes a claim is held.
      const soon = await post();
      statuses.push(soon.status);
      clock.advance(5 * 60 * 1000 + 1);
      const later = await post();
      statuses.push(later.status);
      await mneme.whenIdle();
      expect
        .soft(statuses, 'a retry answered 409 "still running" for a request that is not running')
        .not.toContain(409);
      expect(counts(path)).toEqual({ messages: 1, commands: 1 });
    } finally {
      locking.release();
      await mneme.close();
    }
  });
});

describe('a batch of /remember messages whose second command meets another process holding the write lock', () => {
  it('writes none of the batch when it answers 503', { timeout: 60_000 }, async () => {
    const path = join(folder, 'busy-batch.db');
    // The lock is taken when the second command's memory is embedded: the batch and the first command are in.
    const locking = lockingEmbedder(path, 'walnuts');
    const mneme = await createMneme({
      path,
      embedder: locking.model,
      busyTimeoutMs: 300,
      logger: { warn: () => {}, info: () => {} },
    });
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const response = await app.request('/api/messages/batch', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          messages: ['peanuts', 'walnuts', 'cashews'].map((nut, index) => ({
            channelId: 'kitchen',
            sender: 'ann',
            content: `/remember I am allergic to ${nut}`,
            externalId: `event-${index}`,
          })),
        }),
      });
      const text = await response.text();
      locking.release();
      expect(response.status, text).toBe(503);
      // A refused batch leaves nothing: no message, no memory.
      expect(counts(path)).toEqual({ messages: 0, commands: 0 });
    } finally {
      locking.release();
      await mneme.close();
    }
  });
});
