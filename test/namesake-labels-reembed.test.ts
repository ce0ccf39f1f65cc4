import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { type FakeProviderServer, startFakeProviderServer } from '../src/models/fake/fake-provider-server.fixture.js';
import { createFixedClock } from '../src/testing.js';

/**
 * A label written when a namesake arrives or a user renames themselves (ADR 44) changes a memory's text and clears its
 * `embedding_model`: the memory counts as missing a vector. A running service (`mneme serve`, an engine with an
 * embedding model) re-embedded only at its start, so the labelled memories stayed lexical-only until `mneme reembed`
 * or a restart. It now looks again when labels made vectors stale, whichever process wrote them.
 */

const folder = mkdtempSync(join(tmpdir(), 'mneme-label-reembed-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const clock = createFixedClock('2026-03-02T10:00:00Z');
const quiet = { warn: () => {}, info: () => {} };

let provider: FakeProviderServer | undefined;
const engines: Mneme[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  await provider?.close();
  provider = undefined;
});

/** An engine as `mneme serve` opens one with Ollama's embedding model, here a real HTTP server on loopback. */
async function serving(path: string): Promise<{ mneme: Mneme; provider: FakeProviderServer }> {
  provider = await startFakeProviderServer();
  const mneme = await createMneme({
    path,
    clock,
    embedder: 'ollama',
    providers: { ollamaUrl: provider.url },
    backfillEveryMs: 50,
    logger: quiet,
  });
  engines.push(mneme);
  return { mneme, provider };
}

/** Whether the provider was asked to embed a text holding `text`. */
function embedded(server: FakeProviderServer, text: string): boolean {
  return server.requests.some(
    (request) =>
      request.path === '/api/embed' && JSON.stringify((request.body as { input?: unknown }).input).includes(text),
  );
}

describe.each([':memory:', 'pglite:memory:'])('on %s', (path) => {
  it('gives a memory labelled by a rename through the API its vector without a restart', {
    timeout: 60_000,
  }, async () => {
    const { mneme, provider } = await serving(path);
    await mneme.setDisplayName({ userId: 'eve', displayName: 'Dana' });
    await mneme.remember({ content: 'Dana prefers green tea in the morning', userId: 'eve' });
    expect((await mneme.vectorStatus()).missing).toBe(0);
    // Eve renames herself with her own key: the name she leaves is labelled, the vector is the old text's.
    const key = (await mneme.apiKeys.create({ label: 'eve', userId: 'eve' })).key;
    const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
    const renamed = await app.request('/api/users/eve', {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ displayName: 'Dora' }),
    });
    expect(renamed.status).toBe(200);
    expect((await mneme.list({ limit: 10 })).memories.map((memory) => memory.content)).toEqual([
      'Dana (eve) prefers green tea in the morning',
    ]);
    await expect.poll(async () => (await mneme.vectorStatus()).missing, { timeout: 30_000 }).toBe(0);
    expect(embedded(provider, 'Dana (eve) prefers green tea')).toBe(true);
    const [memory] = (await mneme.list({ limit: 10 })).memories;
    expect(memory?.embeddingModel).toBe('ollama:nomic-embed-text');
  });
});

it('gives a memory labelled by another process its vector without a restart', { timeout: 60_000 }, async () => {
  const path = join(folder, 'shared.db');
  const { mneme, provider } = await serving(path);
  await mneme.putChannel({ id: 'finance', visibility: 'private', members: ['eve', 'ann'] });
  await mneme.setDisplayName({ userId: 'eve', displayName: 'Bob' });
  await mneme.remember({ content: 'Bob approves supplier invoices', userId: 'eve' });
  expect((await mneme.vectorStatus()).missing).toBe(0);
  // The real Bob joins the room through another process (a CLI without a model): Eve's memory is labelled there.
  const cli = await createMneme({ path, clock, embedder: 'none', logger: quiet });
  await cli.putChannel({ id: 'finance', visibility: 'private', members: ['eve', 'ann', 'bob'] });
  await cli.close();
  await expect.poll(async () => (await mneme.vectorStatus()).missing, { timeout: 30_000 }).toBe(0);
  expect(embedded(provider, 'Bob (eve) approves supplier invoices')).toBe(true);
});
