import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';

/**
 * Attack 15 (left open then): API keys are not exported, and a database whose service never had a key
 * answers every caller as an administrator. So a restored backup of a database that required keys ran
 * open: any local process read every user's memories, and a user's old key (sent by her agent, as
 * before the restore) was answered as an administrator. A restored database requires keys as its
 * source did.
 */
const folder = mkdtempSync('/tmp/mneme-restored-keys-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));

async function exported(mneme: Mneme): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of mneme.exportData()) lines.push(line);
  return lines;
}

/** What the restored database's HTTP service answers to `GET /api/memories?userId=bob` with this header. */
async function answer(mneme: Mneme, authorization?: string): Promise<number> {
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  const response = await app.request('/api/memories?userId=bob', {
    headers: authorization === undefined ? {} : { authorization },
  });
  return response.status;
}

/**
 * What the keyed case does on PGlite: two engines, each a PostgreSQL started in WebAssembly with initdb (3 to 6 s on an
 * idle machine), the first of the test worker also compiling it (6 to 11 s). On a loaded machine that passed the
 * default 30 s.
 */
const TWO_PGLITE_STARTS_MS = 120_000;

describe.each([
  ['SQLite', (name: string) => join(folder, `${name}.db`)],
  ['PGlite', () => 'pglite:memory:'],
])('an export restored on %s', (store, pathOf) => {
  it(
    'requires an API key when the exported database did, and refuses the old keys',
    async () => {
      const source = await createMneme({ path: pathOf('keyed-source') });
      const restored = await createMneme({ path: pathOf('keyed-restored') });
      try {
        await source.remember({ content: "Bob's vault code is 4411", scope: 'personal', userId: 'bob' });
        const ann = await source.apiKeys.create({ label: 'ann', userId: 'ann' });
        // Revoked since: the service still required a key (revoking the last key does not reopen it).
        await source.apiKeys.revoke(ann.prefix);
        const kept = await source.apiKeys.create({ label: 'ops' });
        const lines = await exported(source);
        expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ type: 'header', apiKeys: true });

        const report = await restored.importData(lines);
        expect(report).toMatchObject({ memories: 1, apiKeysRequired: true });
        expect(await restored.apiKeys.list()).toEqual([]);
        expect(await answer(restored)).toBe(401);
        expect(await answer(restored, `Bearer ${ann.key}`)).toBe(401);
        expect(await answer(restored, `Bearer ${kept.key}`)).toBe(401);
        // The administrator makes a key with the CLI's call, and the service answers it.
        const made = await restored.apiKeys.create({ label: 'ops' });
        expect(await answer(restored, `Bearer ${made.key}`)).toBe(200);
      } finally {
        await source.close();
        await restored.close();
      }
    },
    TWO_PGLITE_STARTS_MS,
  );

  // One store is enough for what the header leaves out: PGlite takes seconds to start.
  it.skipIf(store === 'PGlite')(
    'stays open on loopback when the exported database never had a key, as its source was',
    async () => {
      const source = await createMneme({ path: pathOf('open-source') });
      const restored = await createMneme({ path: pathOf('open-restored') });
      try {
        await source.remember({ content: 'Bob likes green tea', scope: 'personal', userId: 'bob' });
        const lines = await exported(source);
        expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ type: 'header', apiKeys: false });
        expect(await restored.importData(lines)).toMatchObject({ memories: 1, apiKeysRequired: false });
        expect(await answer(restored)).toBe(200);
      } finally {
        await source.close();
        await restored.close();
      }
    },
  );
});

it('imports a file written before the header named API keys as one from a database without keys', async () => {
  const source = await createMneme({ path: join(folder, 'old-source.db') });
  const restored = await createMneme({ path: join(folder, 'old-restored.db') });
  try {
    await source.remember({ content: 'Bob likes green tea', scope: 'personal', userId: 'bob' });
    const [header = '{}', ...rest] = await exported(source);
    const { apiKeys: _dropped, ...older } = JSON.parse(header) as Record<string, unknown>;
    expect(await restored.importData([JSON.stringify(older), ...rest])).toMatchObject({ apiKeysRequired: false });
    expect(await answer(restored)).toBe(200);
  } finally {
    await source.close();
    await restored.close();
  }
});
