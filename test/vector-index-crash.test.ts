import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { describe, expect, it } from 'vitest';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { crashTest } from './kill-mid-write.js';

const { folder, built, isBuilt, killMidWrite } = crashTest('vector-crash');

/**
 * A process that writes memories with vectors as fast as it can, through the built library: remembers
 * in personal, room and global scope, forgets one in five and edits one in seven (a new vector), and
 * prints a line after each acknowledged write.
 */
const writer = `
  const { createMneme } = await import(${JSON.stringify(built('index.js'))});
  const { createFakeEmbeddingModel } = await import(${JSON.stringify(built('testing.js'))});
  const mneme = await createMneme({ path: process.argv[1], embedder: createFakeEmbeddingModel({ dimensions: 64 }), backfill: false });
  const round = Number(process.argv[2]);
  for (let index = 0; ; index++) {
    const scope = ['personal', 'room', 'global'][index % 3];
    const memory = await mneme.remember({
      content: 'note ' + round + ' ' + index + ' about kestrels and mills number ' + (index % 17),
      scope,
      ...(scope === 'personal' ? { userId: 'user-' + (index % 40) } : {}),
      ...(scope === 'room' ? { channelId: 'room-' + (index % 7) } : {}),
    });
    if (index % 5 === 4) await mneme.forget({ id: memory.id });
    else if (index % 7 === 6) await mneme.update({ id: memory.id, content: 'edited ' + memory.content });
    process.stdout.write('written\\n');
  }
`;

/** What does not agree between the memories and the vector index of the file at `path`. */
function disagreements(path: string): string[] {
  const database = new Database(path, { readonly: true });
  sqliteVec.load(database);
  try {
    const rows = <T>(sql: string) => database.prepare<[], T>(sql).all();
    const problems: string[] = [];
    const indexed = rows<{ id: number; owner: string; bucket: number; owner_id: number }>(
      `SELECT b.memory_id AS id, m.owner AS owner, b.bucket AS bucket, b.owner_id AS owner_id
      FROM memory_vector_bits b LEFT JOIN memories m ON m.id = b.memory_id ORDER BY b.memory_id`,
    );
    const embedded = rows<{ id: number }>(
      `SELECT id FROM memories WHERE archived_at IS NULL
      AND embedding_model = (SELECT model FROM vector_index WHERE id = 1) ORDER BY id`,
    ).map((row) => row.id);
    const sliced = rows<{ id: number }>('SELECT DISTINCT key / 64 AS id FROM memory_vector_slices ORDER BY id').map(
      (row) => row.id,
    );
    if (JSON.stringify(indexed.map((row) => row.id)) !== JSON.stringify(embedded)) {
      problems.push('the bit index and the memories with a vector differ');
    }
    if (JSON.stringify(sliced) !== JSON.stringify(embedded)) {
      problems.push('the float32 slices and the memories with a vector differ');
    }
    const owners = new Map(
      rows<{ id: number; owner: string; vectors: number }>('SELECT id, owner, vectors FROM vector_owners').map(
        (row) => [row.id, row],
      ),
    );
    const counted = new Map<string, number>();
    for (const row of indexed) {
      const owner = owners.get(row.owner_id);
      if (owner?.owner !== row.owner) problems.push(`memory ${row.id} is indexed under another owner`);
      const bucket = row.owner === 'global' ? 0 : 1 + (row.owner_id % 31);
      if (row.bucket !== bucket) problems.push(`memory ${row.id} is in bucket ${row.bucket}, not ${bucket}`);
      counted.set(row.owner, (counted.get(row.owner) ?? 0) + 1);
    }
    for (const owner of owners.values()) {
      if (counted.get(owner.owner) !== owner.vectors) {
        problems.push(
          `${owner.owner} counts ${owner.vectors} vectors, the index holds ${counted.get(owner.owner) ?? 0}`,
        );
      }
    }
    return problems;
  } finally {
    database.close();
  }
}

describe('the vector index after kill -9 in the middle of writes', () => {
  it('holds exactly the vectors of the memories that have one, counted per owner, and finds them', async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'crash.db');
    for (let round = 0; round < 3; round++) {
      await killMidWrite(writer, path, round, 60 + 40 * round);
      expect(disagreements(path), `after kill ${round + 1}`).toEqual([]);
    }
    const storage = createSqliteStorage({ path });
    try {
      const { createFakeEmbeddingModel } = await import('../src/testing.js');
      const model = createFakeEmbeddingModel({ dimensions: 64 });
      const { memories } = await storage.memories.list({ archived: 'exclude', limit: 20, offset: 0, owners: null });
      expect(memories.length).toBeGreaterThan(0);
      for (const memory of memories) {
        const [vector] = await model.embed([memory.content], 'query');
        const owner =
          memory.scope === 'personal'
            ? `user:${memory.userId}`
            : memory.scope === 'room'
              ? `room:${memory.channelId}`
              : 'global';
        const [best] = await storage.memories.searchVector({
          vector: vector ?? new Float32Array(64),
          model: model.modelId,
          owners: [owner],
          limit: 1,
        });
        expect(best).toEqual({ id: memory.id, score: expect.closeTo(1, 5) });
      }
    } finally {
      await storage.close();
    }
  }, 120_000);
});
