import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createMneme } from '../src/config/create-mneme.js';
import type { Mneme } from '../src/core/mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createFakeEmbeddingModel } from '../src/models/fake/fake-embedding-model.js';
import { createFixedClock } from '../src/testing.js';
import { runCli } from './cli-harness.js';

/**
 * Held (wt-attack9): the full-text leg's owner and state checked from the owner index's entry found by id
 * (`+m.owner`, `+m.faded_at`, seekById the default since 20719a5) returns no memory of an owner key the viewer
 * may not see, no forgotten (archived) memory, and a faded one only when the policy recalls faded memories;
 * through the library (every viewer shape, a user who left a room) and HTTP with a second user's real key.
 */
const folder = mkdtempSync('/tmp/wt-attack9-aud-');
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const silent = { warn: () => {}, info: () => {} };

async function open(path: string): Promise<Mneme> {
  return createMneme({
    path,
    clock: createFixedClock(Date.parse('2024-06-15T12:00:00.000Z')),
    embedder: createFakeEmbeddingModel(),
    logger: silent,
  });
}

describe('attack9: the full-text leg by id-seek keeps to the audience', () => {
  it('returns only what each viewer may see, faded only when recalled, over every viewer shape and HTTP', async () => {
    const path = join(folder, 'audience.db');
    let mneme = await open(path);
    await mneme.putChannel({ id: 'r1', members: ['ann', 'bob'] });
    await mneme.putChannel({ id: 'r2', members: ['ann', 'bob'] });
    const made: Record<string, number> = {};
    const add = async (name: string, input: Parameters<Mneme['remember']>[0]) => {
      made[name] = (await mneme.remember(input)).id;
    };
    // Each memory a different length (the ranking's lengths come from the same index entry).
    await add('annPersonal', { content: 'Ann quokkazz note personal', scope: 'personal', userId: 'ann' });
    await add('bobPersonal', {
      content: 'Bob quokkazz quokkazz secret personal vault',
      scope: 'personal',
      userId: 'bob',
    });
    await add('room1', { content: 'Room one quokkazz plan', scope: 'room', channelId: 'r1', userId: 'bob' });
    await add('room2', {
      content: 'Room two quokkazz secret budget here',
      scope: 'room',
      channelId: 'r2',
      userId: 'bob',
    });
    await add('global', { content: 'Global quokkazz fact', scope: 'global' });
    await add('annFaded', { content: 'Ann faded quokkazz thing again', scope: 'personal', userId: 'ann' });
    await add('annForgotten', { content: 'Ann forgotten quokkazz', scope: 'personal', userId: 'ann' });
    await add('bobFaded', { content: 'Bob faded quokkazz secret', scope: 'personal', userId: 'bob' });
    await mneme.forget(made.annForgotten as number);
    await mneme.putChannel({ id: 'r2', members: ['bob'] });
    await mneme.close();
    // Faded (archived, still searchable) set as maintenance's fade sets it (sqlite-memory-writes: vectors kept); archived
    // without fading is what `forget` does (above).
    const raw = new Database(path);
    raw
      .prepare('UPDATE memories SET archived_at = ?, faded_at = ? WHERE id IN (?, ?)')
      .run(Date.now(), Date.now(), made.annFaded, made.bobFaded);
    raw.close();

    const nameOf = new Map(Object.entries(made).map(([name, id]) => [id, name]));
    const names = (hits: ReadonlyArray<{ memory: { id: number } }>) =>
      hits.map((hit) => nameOf.get(hit.memory.id) ?? `other ${hit.memory.id}`).sort();
    for (const fadedWeight of [0, 0.95]) {
      mneme = await open(path);
      await mneme.setPolicy({ settings: { 'recall.fadedWeight': fadedWeight }, actor: 'attack9' });
      const faded = fadedWeight > 0 ? ['annFaded'] : [];
      const ann = mneme.as({ kind: 'user', userId: 'ann', label: 'ann app' });
      const cases: Array<[Mneme, Parameters<Mneme['recall']>[0]['viewer'], string[]]> = [
        [mneme, {}, ['global']],
        [mneme, { userId: 'ann' }, ['annPersonal', 'global', ...faded]],
        [mneme, { userId: 'ann', channelId: 'r1' }, ['annPersonal', 'global', 'room1', ...faded]],
        [ann, { channelId: 'r1' }, ['annPersonal', 'global', 'room1', ...faded]],
        [ann, {}, ['annPersonal', 'global', ...faded]],
      ];
      for (const [face, viewer, expected] of cases) {
        const { hits } = await face.recall({ query: 'quokkazz', viewer, topK: 50, inspect: true });
        expect(names(hits), JSON.stringify({ fadedWeight, viewer })).toEqual([...expected].sort());
      }
      // Ann left r2: asking for it as herself finds none of its memories (refused or left out).
      const left = await ann.recall({ query: 'quokkazz secret budget', viewer: { channelId: 'r2' }, topK: 50 }).then(
        (result) => names(result.hits),
        () => [],
      );
      expect(left).not.toContain('room2');
      expect(left).not.toContain('bobPersonal');
      // HTTP with ann's real key.
      await mneme.apiKeys.create({ label: 'ops' });
      const key = (await mneme.apiKeys.create({ label: 'ann http', userId: 'ann' })).key;
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: () => {} });
      const statuses: number[] = [];
      for (const body of [
        { query: 'quokkazz secret', topK: 50 },
        { query: 'quokkazz secret budget vault', viewer: { channelId: 'r2' }, topK: 50 },
        { query: 'quokkazz', viewer: { channelId: 'r1', userId: 'bob' }, topK: 50 },
      ]) {
        const response = await app.request('/api/memories/search', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await response.text();
        statuses.push(response.status);
        if (response.status === 200) expect(text).toMatch(/quokkazz/);
        expect(text).not.toMatch(/Bob quokkazz|Room two|Bob faded|Ann forgotten/);
      }
      expect(statuses[0]).toBe(200);
      await mneme.close();
      // The CLI face (`mneme search`), as ann and as ann in r1.
      for (const [flags, expected] of [
        [
          ['--user', 'ann'],
          ['annPersonal', 'global', ...faded],
        ],
        [
          ['--user', 'ann', '--channel', 'r1'],
          ['annPersonal', 'global', 'room1', ...faded],
        ],
      ] as const) {
        const run = await runCli(path, ['--json', 'search', 'quokkazz', '--top', '50', ...flags]);
        expect(run.code, run.stderr).toBe(0);
        expect(names(JSON.parse(run.stdout).hits), flags.join(' ')).toEqual([...expected].sort());
      }
    }
  });
});
