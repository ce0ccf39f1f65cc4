import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterAll, describe, expect, it } from 'vitest';
import { killMidWrite } from './kill-mid-write.js';

// Attack (session 5, wt-attack5): after kill -9 in the middle of writes and of the lists' steps (training
// with the balanced splits, the switch, the assignment), every listed vector sits in the band of its exact
// angle to its own list's centroid, inside that list's band range: the invariant near()'s exactness rests on
// (test/vector-lists-crash.test.ts checks membership and owners only).
const dist = resolve(import.meta.dirname, '../dist');
const folder = mkdtempSync(join(tmpdir(), 'wt-attack5-lists-crash-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const DIMENSIONS = 128;
const LIST_MIN_VECTORS = 300;
const BAND = Math.PI / 180;
const BANDS = 181;

const writer = `
  const { openSqliteDatabase } = await import(${JSON.stringify(pathToFileURL(join(dist, 'storage/sqlite/sqlite-database.js')).href)});
  const { createSqliteVectorIndex } = await import(${JSON.stringify(pathToFileURL(join(dist, 'storage/sqlite/sqlite-vector-index.js')).href)});
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
  for (;;) {
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

/** As the lists compute it (sqlite-vector-lists.ts `dot`, `unit`). */
function dot(vector: Float32Array, values: Float32Array, offset: number): number {
  const length = vector.length;
  let first = 0;
  let second = 0;
  let third = 0;
  let fourth = 0;
  let index = 0;
  for (; index + 3 < length; index += 4) {
    const at = offset + index;
    first += (vector[index] ?? 0) * (values[at] ?? 0);
    second += (vector[index + 1] ?? 0) * (values[at + 1] ?? 0);
    third += (vector[index + 2] ?? 0) * (values[at + 2] ?? 0);
    fourth += (vector[index + 3] ?? 0) * (values[at + 3] ?? 0);
  }
  for (; index < length; index++) first += (vector[index] ?? 0) * (values[offset + index] ?? 0);
  return first + second + third + fourth;
}
function unit(vector: Float32Array): Float32Array {
  const copy = Float32Array.from(vector);
  let sum = 0;
  for (const value of copy) sum += value ** 2;
  if (sum === 0) return copy;
  const scale = 1 / Math.sqrt(sum);
  for (let index = 0; index < copy.length; index++) copy[index] = (copy[index] ?? 0) * scale;
  return copy;
}
const floats = (buffer: Buffer) => new Float32Array(Uint8Array.from(buffer).buffer);

/** Listed vectors whose band is not that of their angle to their list's centroid, or outside its band range. */
function misplaced(path: string): string[] {
  const database = new Database(path, { readonly: true });
  sqliteVec.load(database);
  try {
    const state = database
      .prepare<[], { maintained: number }>('SELECT maintained FROM vector_list_state WHERE id = 1')
      .get();
    if (!state?.maintained) return [];
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
      .prepare<[], { id: number; part: number }>('SELECT memory_id AS id, part FROM memory_vector_list_bits')
      .all()) {
      if (part < 0) continue;
      const list = Math.floor(part / BANDS);
      const band = part % BANDS;
      const row = lists.get(list);
      const stored = slices.get(id);
      if (!row || !stored) {
        problems.push(`memory ${id} in part ${part}: no list ${list} or no vector`);
        continue;
      }
      const vector = unit(floats(Buffer.concat(stored)).subarray(0, DIMENSIONS));
      const angle = Math.acos(Math.min(1, Math.max(-1, dot(vector, row.values, 0))));
      const expected = Math.min(BANDS - 1, Math.floor(angle / BAND));
      if (expected !== band) problems.push(`memory ${id}: band ${band} of list ${list}, its angle's is ${expected}`);
      if (row.low_band === null || row.high_band === null || band < row.low_band || band > row.high_band) {
        problems.push(`memory ${id}: band ${band} outside list ${list}'s ${row.low_band}-${row.high_band}`);
      }
    }
    return problems;
  } finally {
    database.close();
  }
}

describe('attack5: the inverted lists after kill -9', () => {
  it("keep every listed vector in the band of its angle to its own list, within the list's range, at every kill", async () => {
    expect(existsSync(join(dist, 'index.js')), 'run `npm run build` first').toBe(true);
    const path = join(folder, 'crash.db');
    let checked = 0;
    for (let round = 0; round < 8; round++) {
      await killMidWrite(writer, path, round, 30 + 41 * round, children);
      expect(misplaced(path), `after kill ${round + 1}`).toEqual([]);
      const probe = new Database(path, { readonly: true });
      sqliteVec.load(probe);
      const hasLists = probe
        .prepare("SELECT count(*) FROM sqlite_master WHERE name = 'memory_vector_list_bits'")
        .pluck()
        .get();
      if (hasLists)
        checked +=
          probe.prepare<[], number>('SELECT count(*) FROM memory_vector_list_bits WHERE part >= 0').pluck().get() ?? 0;
      probe.close();
    }
    expect(checked).toBeGreaterThan(0);
  }, 240_000);
});
