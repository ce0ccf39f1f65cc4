import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-attack7-lengths-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function lengths(path: string): { stored: Map<number, number>; recounted: Map<number, number> } {
  const raw = new Database(path);
  try {
    raw.exec("CREATE VIRTUAL TABLE temp.recount USING fts5vocab(main, 'memories_fts', 'instance')");
    const recounted = new Map(
      raw.prepare<[], [number, number]>('SELECT doc, count(*) FROM temp.recount GROUP BY doc').raw().all(),
    );
    const stored = new Map(
      raw.prepare<[], [number, number]>('SELECT id, tokens FROM memories WHERE tokens > 0 ORDER BY id').raw().all(),
    );
    return { stored, recounted: new Map([...recounted].sort((a, b) => a[0] - b[0])) };
  } finally {
    raw.close();
  }
}

describe("attack7: a memory's length in tokens (migration 20) through mneme copy and edits", () => {
  it('is recounted right in a SQLite file copied from another, and the lexical ranking is the same', async () => {
    const source = join(folder, 'source.db');
    const target = join(folder, 'target.db');
    const mneme = await createMneme({ path: source });
    const ids: number[] = [];
    for (const content of [
      'Ann edits kestrels and herons every day',
      'the kestrel of the room, the kestrel of the dune',
      'Bob keeps a café kestrel — naïve, très naïve',
      'ospreys plunge feet first after trout',
    ]) {
      ids.push((await mneme.remember({ content })).id);
    }
    await mneme.forget(ids[3] ?? 0);
    const before = (await mneme.recall({ query: 'kestrel café', topK: 5 })).hits.map(
      (hit) => `${hit.memory.id}:${hit.score.toFixed(6)}`,
    );
    expect(before.length).toBeGreaterThan(1);
    await mneme.close();
    const raw = new Database(source);
    raw.prepare("UPDATE memories SET search_context = 'who keeps the kestrels of the dune?' WHERE id = ?").run(ids[1]);
    raw.close();
    const sourceLengths = lengths(source);
    expect(sourceLengths.stored).toEqual(sourceLengths.recounted);

    await copyDatabase({ from: source, to: target, batchSize: 2 });
    const targetLengths = lengths(target);
    expect(targetLengths.stored).toEqual(targetLengths.recounted);
    expect(targetLengths.stored).toEqual(sourceLengths.stored);
    const copy = await createMneme({ path: target });
    try {
      const after = (await copy.recall({ query: 'kestrel café', topK: 5 })).hits.map(
        (hit) => `${hit.memory.id}:${hit.score.toFixed(6)}`,
      );
      expect(after.map((hit) => hit.split(':')[0])).toEqual(before.map((hit) => hit.split(':')[0]));
    } finally {
      await copy.close();
    }
  }, 60_000);
});
