import { describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import { isMnemeError } from '../src/core/errors.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';

const quiet = { warn: () => {}, info: () => {} };

async function lines(mneme: Mneme, userId?: string): Promise<string[]> {
  const all: string[] = [];
  for await (const line of mneme.exportData(userId === undefined ? {} : { userId })) all.push(line);
  return all;
}

/** Ann's remember under an Idempotency-Key, as her client sends it (and sends it again when no answer came). */
async function remember(mneme: Mneme, key: string, idempotencyKey: string): Promise<Response> {
  const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
  return app.request('/api/memories', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ content: 'Ann keeps the spare office key in the blue drawer' }),
  });
}

async function drawerMemories(mneme: Mneme): Promise<number> {
  return (await mneme.list({ limit: 50 })).memories.filter((memory) => /blue drawer/.test(memory.content)).length;
}

/**
 * Attack finding (wt-b, attack 27b): idempotency keys were not exported. Ann's client sent a remember under an
 * Idempotency-Key, the service wrote it and died before the answer reached her; the database was restored from an
 * export taken after the write (the memory in it) into a new one, and her client, given a new key for her, sent the
 * request again with the same Idempotency-Key: the restored database had no record of the key and stored the memory a
 * second time. A full export now carries each key whose work was done (version 3), and the restored database answers
 * the retry 409 ("done before"), writing nothing; the stored response is not carried, since the import gives rows new
 * ids and a replayed body would name the wrong rows.
 */
describe.each([
  ['SQLite', ':memory:'],
  ['PGlite', 'pglite:memory:'],
])('a retry under an Idempotency-Key after a restore on %s', (_store, path) => {
  it('is not done a second time, and the key stays out of a user export', async () => {
    const source = await createMneme({ path, logger: quiet });
    const target = await createMneme({ path, logger: quiet });
    const fresh = await createMneme({ path: ':memory:', logger: quiet });
    try {
      await source.apiKeys.create({ label: 'ops' });
      const annKey = (await source.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      const first = await remember(source, annKey, 'ann-remember-1');
      expect(first.status).toBe(201);
      expect(await drawerMemories(source)).toBe(1);

      const full = await lines(source);
      const report = await target.importData(full);
      expect(report).toMatchObject({ memories: 1 });
      const newAnnKey = (await target.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      const retry = await remember(target, newAnnKey, 'ann-remember-1');
      expect(await drawerMemories(target)).toBe(1);
      expect(retry.status).toBe(409);
      expect(await retry.text()).toMatch(/was done before/);
      expect(report).toMatchObject({ idempotencyKeys: 1 });
      expect(JSON.parse(full[0] ?? '{}')).toMatchObject({ type: 'header', version: 3 });
      expect(full.filter((line) => JSON.parse(line).type === 'idempotencyKey')).toHaveLength(1);
      // A new key for a new request is done.
      expect((await remember(target, newAnnKey, 'ann-remember-2')).status).toBe(201);

      const ofAnn = await lines(source, 'ann');
      expect(ofAnn.some((line) => JSON.parse(line).type === 'idempotencyKey')).toBe(false);
      expect(await fresh.importData(ofAnn)).toMatchObject({ idempotencyKeys: 0 });
    } finally {
      await Promise.all([source.close(), target.close(), fresh.close()]);
    }
  }, 120_000);
});

describe('an idempotencyKey record where the format has none', () => {
  it('is refused with its line in a version 2 file, in a user export and when it names a key twice', async () => {
    const source = await createMneme({ path: ':memory:', logger: quiet });
    try {
      await source.apiKeys.create({ label: 'ops' });
      const annKey = (await source.apiKeys.create({ label: 'ann', userId: 'ann' })).key;
      expect((await remember(source, annKey, 'ann-remember-1')).status).toBe(201);
      const full = await lines(source);
      const keyLine = full.find((line) => JSON.parse(line).type === 'idempotencyKey') ?? '';
      const withEnd = (body: string[], header: string) => [
        header,
        ...body,
        JSON.stringify({ type: 'end', records: body.length }),
      ];
      const body = full.slice(1, -1);
      const header = JSON.parse(full[0] ?? '{}') as Record<string, unknown>;
      const cases: Array<[string, string[], RegExp]> = [
        [
          'version 2',
          withEnd(body, JSON.stringify({ ...header, version: 2 })),
          /an idempotencyKey record in a version 2 file: the record came with version 3/,
        ],
        [
          'user export',
          withEnd(body, JSON.stringify({ ...header, user: 'ann' })),
          /an idempotencyKey record in the export of user ann: only an export of the whole database carries them/,
        ],
        [
          'twice',
          withEnd([...body, keyLine], full[0] ?? ''),
          /a second record of Idempotency-Key ann-remember-1 of user:ann/,
        ],
      ];
      for (const [name, crafted, message] of cases) {
        const target = await createMneme({ path: ':memory:', logger: quiet });
        try {
          const error = await target.importData(crafted).then(
            () => null,
            (caught: unknown) => caught,
          );
          expect(isMnemeError(error) && error.code, name).toBe('INVALID_INPUT');
          expect((error as Error).message, name).toMatch(/^line \d+: /);
          expect((error as Error).message, name).toMatch(message);
          expect((await target.list({ limit: 10 })).memories, name).toEqual([]);
        } finally {
          await target.close();
        }
      }
    } finally {
      await source.close();
    }
  }, 60_000);
});
