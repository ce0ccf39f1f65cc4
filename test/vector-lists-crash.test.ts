import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { describe, expect, it } from 'vitest';
import { cosine } from '../src/core/maintenance/consolidate-task.js';
import { openSqliteDatabase } from '../src/storage/sqlite/sqlite-database.js';
import { createSqliteVectorIndex } from '../src/storage/sqlite/sqlite-vector-index.js';
import { BANDS, bandUnder, residualCode } from '../src/storage/sqlite/sqlite-vector-lists.js';
import { crashTest } from './kill-mid-write.js';

const { folder, built, isBuilt, killMidWrite } = crashTest('vector-lists-crash');

const DIMENSIONS = 128;
const LIST_MIN_VECTORS = 300;

/**
 * A process that writes to the vector index of the file as fast as it can, through the built library:
 * each transaction is either one step of the inverted lists (training, assignment, the switch to a new
 * training as the store grows) or ten new vectors (clustered, one in ten far from every centre, some near
 * copies) and three removed; it prints a line after each commit. Now and then another connection deletes 50 residual
 * rows (migration 24), as vectors listed by a process of the previous release lack them: later steps fill them again.
 */
const writer = `
  const { openSqliteDatabase } = await import(${JSON.stringify(built('storage/sqlite/sqlite-database.js'))});
  const { createSqliteVectorIndex } = await import(${JSON.stringify(built('storage/sqlite/sqlite-vector-index.js'))});
  const database = openSqliteDatabase({ path: process.argv[1] });
  const index = createSqliteVectorIndex(database, { listMinVectors: ${LIST_MIN_VECTORS} });
  if (!index.info()) index.configure({ model: 'm', dimensions: ${DIMENSIONS} });
  let seed = Number(process.argv[2]) * 7919 + 1;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  const normal = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const centres = Array.from({ length: 6 }, (_, c) => Float32Array.from({ length: ${DIMENSIONS} }, (_, i) => Math.sin(c * 31 + i * 7)));
  let next = (database.prepare('SELECT max(key) FROM memory_vector_slices').pluck().get() ?? 0) / 64 + 1;
  next = Math.floor(next) + 1;
  const owners = ['global', 'global', 'user:a', 'room:b'];
  const older = openSqliteDatabase({ path: process.argv[1] });
  for (;;) {
    if (random() < 0.05) {
      older.exec('DELETE FROM memory_vector_residuals WHERE memory_id IN (SELECT memory_id FROM memory_vector_residuals ORDER BY random() LIMIT 50)');
      process.stdout.write('written\\n');
      continue;
    }
    database.transaction(() => {
      if (random() < 0.5 && index.indexStep()) return;
      for (let n = 0; n < 10; n++) {
        const centre = centres[Math.floor(random() * centres.length)];
        const vector = n === 9 ? centre.map(() => normal() * 1.22) : centre.map((value) => value + normal() * 1.22);
        index.put(next++, owners[Math.floor(random() * owners.length)], { model: 'm', vector });
        if (n % 3 === 0) index.put(next++, 'global', { model: 'm', vector: vector.map((value) => value + normal() * 0.1) });
      }
      const ids = database.prepare('SELECT key / 64 FROM memory_vector_slices WHERE key % 64 = 0 ORDER BY random() LIMIT 3').pluck().all();
      index.remove(ids);
    }).immediate();
    process.stdout.write('written\\n');
  }
`;

/** What does not agree between the bit index and the inverted lists of the file at `path`. */
function disagreements(path: string, complete = false): string[] {
  const database = new Database(path, { readonly: true });
  sqliteVec.load(database);
  try {
    const problems: string[] = [];
    const state = database
      .prepare<[], { maintained: number; watermark: number | null }>(
        'SELECT maintained, watermark FROM vector_list_state WHERE id = 1',
      )
      .get();
    if (!state?.maintained) return problems;
    const owners = new Map(
      database
        .prepare<[], { id: number; owner_id: number }>('SELECT memory_id AS id, owner_id FROM memory_vector_bits')
        .all()
        .map((row) => [row.id, row.owner_id]),
    );
    const listed = database
      .prepare<[], { id: number; owner_id: number }>('SELECT memory_id AS id, owner_id FROM memory_vector_list_bits')
      .all();
    for (const row of listed) {
      if (owners.get(row.id) !== row.owner_id) problems.push(`memory ${row.id} is listed without its vector or owner`);
    }
    if (state.watermark === null && listed.length !== owners.size) {
      problems.push(`the lists are complete with ${listed.length} of ${owners.size} vectors`);
    }
    problems.push(...misplaced(database));
    problems.push(...residualsWrong(database, state.watermark === null && complete));
    return problems;
  } finally {
    database.close();
  }
}

/**
 * Listed vectors not in the band of their angle to their list's centroid, or outside the list's band range
 * (a search skips a band by that range and angle: such a vector would be missed; attack of session 5).
 */
function misplaced(database: Database.Database): string[] {
  const floats = (buffer: Buffer) => new Float32Array(Uint8Array.from(buffer).buffer);
  const lists = new Map(
    database
      .prepare<[], { list: number; centroid: Buffer; low_band: number | null; high_band: number | null }>(
        'SELECT list, centroid, low_band, high_band FROM vector_lists',
      )
      .all()
      .map((row) => [row.list, { ...row, values: floats(row.centroid).subarray(0, DIMENSIONS) }]),
  );
  const slices = new Map<number, Buffer[]>();
  for (const row of database
    .prepare<[], { key: number; vector: Buffer }>('SELECT key, vector FROM memory_vector_slices ORDER BY key')
    .all()) {
    const id = Math.floor(row.key / 64);
    slices.set(id, [...(slices.get(id) ?? []), row.vector]);
  }
  const problems: string[] = [];
  for (const { id, part } of database
    .prepare<[], { id: number; part: number }>(
      'SELECT memory_id AS id, part FROM memory_vector_list_bits WHERE part >= 0',
    )
    .all()) {
    const list = Math.floor(part / BANDS);
    const band = part % BANDS;
    const row = lists.get(list);
    const stored = slices.get(id);
    if (!row || !stored) {
      problems.push(`memory ${id} in part ${part}: no list ${list} or no vector`);
      continue;
    }
    const expected = bandUnder(floats(Buffer.concat(stored)).subarray(0, DIMENSIONS), row.values);
    if (expected !== band) problems.push(`memory ${id}: band ${band} of list ${list}, its angle's is ${expected}`);
    if (row.low_band === null || row.high_band === null || band < row.low_band || band > row.high_band) {
      problems.push(`memory ${id}: band ${band} outside list ${list}'s ${row.low_band}-${row.high_band}`);
    }
  }
  return problems;
}

/**
 * Residual rows (migration 24) that are not the residual code of their memory's vector under the centroid of the list
 * it is in, or of a vector not in a list; with `complete` (the index steps all done), listed vectors without one.
 */
function residualsWrong(database: Database.Database, complete: boolean): string[] {
  const floats = (buffer: Buffer) => new Float32Array(Uint8Array.from(buffer).buffer);
  const generation = database
    .prepare<[], number>('SELECT generation FROM vector_list_state WHERE id = 1')
    .pluck()
    .get();
  const centroids = new Map(
    database
      .prepare<[], { list: number; centroid: Buffer }>('SELECT list, centroid FROM vector_lists')
      .all()
      .map((row) => [row.list, floats(row.centroid).subarray(0, DIMENSIONS)]),
  );
  const parts = new Map(
    database
      .prepare<[], { id: number; part: number }>('SELECT memory_id AS id, part FROM memory_vector_list_bits')
      .all()
      .map((row) => [row.id, row.part]),
  );
  const slices = new Map<number, Buffer[]>();
  for (const row of database
    .prepare<[], { key: number; vector: Buffer }>('SELECT key, vector FROM memory_vector_slices ORDER BY key')
    .all()) {
    const id = Math.floor(row.key / 64);
    slices.set(id, [...(slices.get(id) ?? []), row.vector]);
  }
  const problems: string[] = [];
  const rows = database
    .prepare<[number], { id: number; code: Buffer }>(
      'SELECT memory_id AS id, code FROM memory_vector_residuals WHERE generation = ?',
    )
    .all(generation ?? -1);
  for (const { id, code } of rows) {
    const part = parts.get(id);
    const centroid = part === undefined ? undefined : centroids.get(Math.floor(part / BANDS));
    const stored = slices.get(id);
    if (part === undefined || part < 0 || !centroid || !stored) {
      problems.push(`memory ${id} has a residual row but no list row, no vector, or is in the overflow`);
      continue;
    }
    const vector = floats(Buffer.concat(stored)).subarray(0, DIMENSIONS);
    if (!code.equals(residualCode(vector, centroid))) problems.push(`memory ${id}: a residual row of another vector`);
  }
  if (complete) {
    const held = new Set(rows.map((row) => row.id));
    for (const [id, part] of parts) if (part >= 0 && !held.has(id)) problems.push(`memory ${id}: no residual row`);
  }
  return problems;
}

describe('the inverted lists of the vector index after kill -9 in the middle of writes and steps', () => {
  it('list only vectors the bit index holds, under their owners, and find every close neighbour once rebuilt', async () => {
    expect(isBuilt(), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'crash.db');
    const phases = new Set<string>();
    for (let round = 0; round < 6; round++) {
      await killMidWrite(writer, path, round, 40 + 37 * round);
      expect(disagreements(path), `after kill ${round + 1}`).toEqual([]);
      const probe = new Database(path, { readonly: true });
      const state = probe
        .prepare<[], { training_steps: number | null; watermark: number | null }>(
          'SELECT training_steps, watermark FROM vector_list_state WHERE id = 1',
        )
        .get();
      probe.close();
      phases.add(state?.training_steps != null ? 'training' : state?.watermark != null ? 'assigning' : 'complete');
    }
    // The kills found the lists in more than one phase.
    expect(phases.size).toBeGreaterThan(1);
    const database = openSqliteDatabase({ path });
    try {
      const index = createSqliteVectorIndex(database, { listMinVectors: LIST_MIN_VECTORS });
      while (database.transaction(() => index.indexStep()).immediate());
      expect(disagreements(path, true)).toEqual([]);
      // The far vectors went to the overflow partition.
      expect(
        database.prepare<[], number>('SELECT overflow_vectors FROM vector_list_state WHERE id = 1').pluck().get(),
      ).toBeGreaterThan(0);
      const ids = database
        .prepare<[], number>('SELECT key / 64 FROM memory_vector_slices WHERE key % 64 = 0 ORDER BY key')
        .pluck()
        .all();
      const vectors = index.vectors(ids);
      for (const id of ids.filter((_, position) => position % 25 === 0)) {
        const query = vectors.get(id) ?? new Float32Array(DIMENSIONS);
        const expected = [...vectors]
          .map(([other, vector]) => ({ id: other, score: cosine(query, vector) }))
          .filter((hit) => hit.score >= 0.85)
          .sort((a, b) => b.score - a.score || a.id - b.id)
          .slice(0, 11)
          .map((hit) => hit.id);
        expect(index.searchNear(query, 'm', null, 11, 0.85).map((hit) => hit.id)).toEqual(expected);
      }
    } finally {
      database.close();
    }
  }, 180_000);
});
