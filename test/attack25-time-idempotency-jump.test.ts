import { afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import type { EmbeddingModel } from '../src/models/embedding-model.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createFixedClock } from '../src/testing.js';

const MINUTE = 60_000;
let mneme: Mneme | null = null;
afterEach(async () => {
  await mneme?.close();
  mneme = null;
});

/**
 * Attack 25 (time): a keyed request holds its Idempotency-Key for 5 minutes by the clock (ADR 14). A `POST
 * /api/memories` waiting for its embedding model when the system clock jumps forward (a machine resumed after a
 * suspension, NTP correcting a slow clock) looks dead to the retry its client sends: the retry took the key over and
 * stored the memory, then the first request, alive, stored it a second time. Its transaction now finds the claim
 * gone when it counts itself on the key, and writes nothing.
 */
describe.each([
  ['SQLite', ':memory:'],
  ['PGlite', 'pglite:memory:'],
])('a keyed request in flight when the clock jumps forward on %s', (_store, path) => {
  it.each([
    ['six minutes', 6 * MINUTE],
    ['a day', 24 * 60 * MINUTE + MINUTE],
  ])(
    'is done once when the jump is %s and the client retries meanwhile',
    async (_jump, jump) => {
      const fake = createFakeEmbeddingModel({ dimensions: 8 });
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let calls = 0;
      const embedder: EmbeddingModel = {
        modelId: 'custom:slow',
        dimensions: 8,
        embed: async (texts, purpose) => {
          calls++;
          if (calls === 1) await gate;
          return fake.embed(texts, purpose);
        },
      };
      const clock = createFixedClock('2026-06-01T10:00:00.000Z');
      mneme = await createMneme({ path, clock, embedder, backfill: false, logger: { warn: () => {}, info: () => {} } });
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const send = () =>
        app.request('/api/memories', {
          method: 'POST',
          headers: { 'content-type': 'application/json', host: 'localhost', 'idempotency-key': 'k-1' },
          body: JSON.stringify({ content: 'The backup runs at 02:00', scope: 'personal', userId: 'ann' }),
        });
      const first = send();
      while (calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      clock.advance(jump);
      const retry = await send();
      expect(retry.status).toBe(201);
      const stored = (await retry.json()) as { id: number };
      release();
      const late = await first;
      expect(late.status).toBe(409);
      expect(late.headers.get('content-type')).toContain('application/problem+json');
      expect(await late.text()).toContain('lost its claim');

      const { memories } = await mneme.list({ userId: 'ann' });
      expect(memories.map((memory) => memory.id)).toEqual([stored.id]);
      // A third try replays the stored answer.
      const again = await send();
      expect(again.status).toBe(201);
      expect(((await again.json()) as { id: number }).id).toBe(stored.id);
    },
    120_000,
  );
});

/**
 * Attack 25 (time): a keyed request whose process died while the clock ran an hour fast left its claim locked until
 * an hour and 5 minutes ahead of the right time. Once the clock was set back, every retry was told "still running"
 * for that hour. A claim locked further ahead than twice the lock's length is now taken over.
 */
describe.each([
  ['SQLite', ':memory:'],
  ['PGlite', 'pglite:memory:'],
])('a keyed request that died while the clock ran an hour fast on %s', (_store, path) => {
  it('is done by the retry once the clock is set back, not refused for an hour', async () => {
    const clock = createFixedClock('2026-06-01T11:00:00.000Z');
    mneme = await createMneme({ path, clock, backfill: false, logger: { warn: () => {}, info: () => {} } });
    const request = {
      principal: { kind: 'admin' as const, label: 'open' },
      key: 'k-2',
      request: { method: 'POST', path: '/api/memories', body: { content: 'The backup runs at 02:00' } },
    };
    const claim = await mneme.idempotency.begin(request);
    expect('complete' in claim).toBe(true);
    // Its process dies here, its claim held; NTP sets the clock back an hour.
    clock.advance(-60 * MINUTE);
    const retry = await mneme.idempotency.begin(request);
    expect('complete' in retry).toBe(true);
  }, 120_000);

  it('still tells a retry that a live request holds the key', async () => {
    const clock = createFixedClock('2026-06-01T10:00:00.000Z');
    mneme = await createMneme({ path, clock, backfill: false, logger: { warn: () => {}, info: () => {} } });
    const request = { principal: { kind: 'admin' as const, label: 'open' }, key: 'k-3', request: { n: 1 } };
    await mneme.idempotency.begin(request);
    clock.advance(MINUTE);
    await expect(mneme.idempotency.begin(request)).rejects.toMatchObject({ code: 'CONFLICT' });
  }, 120_000);
});
