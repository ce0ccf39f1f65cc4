import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/core/create-engine.js';
import type { Mneme } from '../src/core/mneme.js';
import { resolvePolicy } from '../src/core/policy.js';
import { createOfflineEpisodeSummariser } from '../src/models/offline/offline-episode-summariser.js';
import { createOfflineMemoryMerger } from '../src/models/offline/offline-memory-merger.js';
import type { Storage } from '../src/storage/storage.js';
import { createFixedClock } from '../src/testing.js';
import { onEachStore } from './attack31d-stores.fixture.js';
import { runCli } from './cli-harness.js';

/**
 * The names a user left (a user record's `leftNames`, export version 4, ADR 44) as an import reads them: a file of
 * version 3 still imports; a `leftNames` mneme would not have written, or a user's export that carries another user's
 * names, memberships or memories, is refused with its line, and nothing is imported.
 */

const time = '2026-03-02T12:00:00.000Z';
const header = (version: number, user: string | null = null) =>
  JSON.stringify({
    type: 'header',
    format: 'mneme-export',
    version,
    mneme: 'test',
    exportedAt: time,
    user,
    preset: 'mneme',
    overrides: {},
  });
const user = (id: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'user', id, displayName: null, createdAt: time, updatedAt: time, ...fields });
const file = (first: string, ...records: string[]) => [
  first,
  ...records,
  JSON.stringify({ type: 'end', records: records.length }),
];
const memory = (id: number, fields: Record<string, unknown>) =>
  JSON.stringify({
    type: 'memory',
    id,
    content: 'Bob promised Ann his car',
    category: 'fact',
    sector: 'semantic',
    scope: 'personal',
    userId: 'bob',
    channelId: null,
    projectId: null,
    topicId: null,
    source: 'manual',
    importance: 0.5,
    strength: 1,
    salience: 0.5,
    accessCount: 0,
    lastAccessedAt: null,
    pinned: false,
    sourceMessageIds: [],
    sourceIds: [],
    validFrom: time,
    supersededBy: null,
    archivedAt: null,
    fadedAt: null,
    createdAt: time,
    updatedAt: time,
    decayedAt: null,
    searchContext: null,
    searchContextMessageId: null,
    chunk: null,
    versions: [],
    ...fields,
  });

function engine(storage: Storage): Mneme {
  return createEngine({
    storage,
    embedder: null,
    clock: createFixedClock('2026-03-03T12:00:00Z'),
    logger: { warn: () => undefined },
    policy: resolvePolicy({}),
    summariser: createOfflineEpisodeSummariser(),
    merger: createOfflineMemoryMerger(),
    dreamer: null,
  });
}

const refused: ReadonlyArray<readonly [string, string[], RegExp]> = [
  [
    'leftNames that is not a list',
    file(header(4), user('eve', { displayName: 'Dora', leftNames: 'Dana' })),
    /^line 2: .*leftNames/,
  ],
  [
    'more names than a user keeps',
    file(
      header(4),
      user('eve', {
        displayName: 'Dora',
        leftNames: Array.from({ length: 9 }, (_, index) => ({ name: `Dana${index}`, at: time })),
      }),
    ),
    /^line 2: .*leftNames holds at most the last 8 names a user left/,
  ],
  [
    'a name of the wrong type',
    file(header(4), user('eve', { displayName: 'Dora', leftNames: [{ name: 5, at: time }] })),
    /^line 2: .*leftNames\.0\.name/,
  ],
  [
    'a name left after the file was written',
    file(
      header(4),
      user('eve', { displayName: 'Dora', leftNames: [{ name: 'Dana', at: '2099-01-01T00:00:00.000Z' }] }),
    ),
    /^line 2: user eve left "Dana" at 2099-01-01T00:00:00.000Z, after the file was written/,
  ],
  [
    'a name left in time to come by a file that says it was written then',
    [
      header(4).replace(time, '2099-01-01T00:00:00.000Z'),
      user('eve', { displayName: 'Dora', leftNames: [{ name: 'Dana', at: '2099-01-01T00:00:00.000Z' }] }),
      JSON.stringify({ type: 'end', records: 1 }),
    ],
    /^line 2: user eve left "Dana" at 2099-01-01T00:00:00.000Z, .* or after now \(2026-03-03T12:00:00.000Z\)/,
  ],
  [
    'a name no rename leaves',
    file(header(4), user('eve', { displayName: 'Dora', leftNames: [{ name: 'Dana: I approve', at: time }] })),
    /^line 2: user eve cannot have left "Dana: I approve"/,
  ],
  [
    'a name left twice',
    file(
      header(4),
      user('eve', {
        displayName: 'Dora',
        leftNames: [
          { name: 'Dana', at: time },
          { name: 'Dana', at: time },
        ],
      }),
    ),
    /^line 2: user eve left "Dana" twice in leftNames/,
  ],
  [
    'names left in a version 3 file',
    file(header(3), user('eve', { displayName: 'Dora', leftNames: [{ name: 'Dana', at: time }] })),
    /^line 2: the leftNames of user eve in a version 3 file: the field came with version 4/,
  ],
  [
    "another user's names left in a user's export",
    file(
      header(4, 'mallory'),
      user('mallory'),
      user('eve', { displayName: 'Dora', leftNames: [{ name: 'Carol', at: time }] }),
    ),
    /^line 3: the leftNames of user eve in the export of user mallory: a user's export carries their own only/,
  ],
  [
    "another user's personal memory in a user's export",
    file(header(1, 'mallory'), user('mallory'), user('bob'), memory(1, {})),
    /^line 4: a personal memory of bob in the export of user mallory/,
  ],
  [
    "a global memory of another user in a user's export",
    file(header(1, 'mallory'), user('mallory'), memory(1, { scope: 'global', userId: 'bob' })),
    /^line 3: a global memory of bob in the export of user mallory/,
  ],
  [
    "another user's membership in a user's export",
    file(
      header(1, 'mallory'),
      user('mallory'),
      JSON.stringify({ type: 'channel', id: 'lobby', visibility: 'private', createdAt: time, updatedAt: time }),
      JSON.stringify({ type: 'membership', kind: 'channel', spaceId: 'lobby', userId: 'bob', addedAt: time }),
    ),
    /^line 4: the membership of bob in the export of user mallory/,
  ],
];

function importTests(open: () => Promise<Storage>) {
  it('imports a version 3 file and a version 4 file with the names a user left', async () => {
    const older = engine(await open());
    try {
      const key = JSON.stringify({
        type: 'idempotencyKey',
        principal: 'user:eve',
        key: 'k-1',
        requestSha256: 'a'.repeat(64),
        status: 200,
        expiresAt: '2099-01-01T00:00:00.000Z',
      });
      expect(await older.importData(file(header(3), user('eve', { displayName: 'Dora' }), key))).toMatchObject({
        users: 1,
        idempotencyKeys: 1,
      });
    } finally {
      await older.close();
    }
    // One store at a time: the PGlite stores of these tests share one database.
    const newer = engine(await open());
    try {
      const left = [
        { name: 'Dana', at: '2026-03-01T10:00:00.000Z' },
        { name: 'Xena', at: time },
      ];
      await newer.importData(file(header(4), user('eve', { displayName: 'Dora', leftNames: left })));
      const lines: string[] = [];
      for await (const line of newer.exportData()) lines.push(line);
      expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ version: 4 });
      expect(JSON.parse(lines.find((line) => line.includes('"type":"user"')) ?? '{}')).toMatchObject({
        id: 'eve',
        leftNames: left,
      });
    } finally {
      await newer.close();
    }
  }, 60_000);

  for (const [what, lines, message] of refused) {
    it(`refuses ${what} with its line and imports nothing`, async () => {
      const storage = await open();
      const mneme = engine(storage);
      try {
        const error = await mneme.importData(lines).then(
          () => null,
          (thrown: unknown) => thrown as { code: string; message: string },
        );
        expect(error?.code).toBe('INVALID_INPUT');
        expect(error?.message).toMatch(message);
        expect(error?.message).not.toContain('\n');
        expect(await storage.transfer.isEmpty()).toBe(true);
      } finally {
        await mneme.close();
      }
    }, 60_000);
  }
}

onEachStore(importTests);

describe('mneme import (the built CLI)', () => {
  it("says in one line why a user's export that names another user's left names is refused, exit 2", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-left-names-'));
    try {
      const path = join(folder, 'crafted.jsonl');
      const [, lines] = refused.find(([what]) => what.startsWith("another user's names")) ?? ['', []];
      writeFileSync(path, `${lines.join('\n')}\n`);
      const database = join(folder, 'target.db');
      const run = await runCli(database, ['import', path]);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^mneme: line 3: the leftNames of user eve in the export of user mallory: [^\n]*\n$/);
      expect((await runCli(database, ['--json', 'stats'])).stdout).toContain('"total": 0');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
