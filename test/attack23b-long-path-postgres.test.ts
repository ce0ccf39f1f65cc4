import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';

/**
 * README, Ingest: with every batch, mneme records the file's resolved path in `ingest_files`. On PostgreSQL the
 * path is that table's primary key, a btree whose entries hold at most 2,704 bytes: a file whose path is longer
 * (Linux allows 4,096 bytes) cannot be ingested there at all, though SQLite ingests it, and the error is the
 * server's own words about an index.
 */
describe.skipIf(!hasPostgresBinaries)('mneme ingest of a file with a long path on PostgreSQL (postgresql-15)', () => {
  let server: TestPostgresServer;
  const folder = mkdtempSync(join(tmpdir(), 'mneme-attack23b-path-'));
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  it('ingests a file whose path is 3,000 bytes long as it does on SQLite, and resumes it', async () => {
    // Twelve folders of 120 random bytes each (240 hexadecimal characters): a path the server cannot compress.
    let where = folder;
    for (let level = 0; level < 12; level++) where = join(where, randomBytes(120).toString('hex'));
    mkdirSync(where, { recursive: true });
    const file = join(where, 'chat.jsonl');
    expect(Buffer.byteLength(file)).toBeGreaterThan(2900);
    writeFileSync(
      file,
      `${JSON.stringify({ channelId: 'kitchen', sender: 'ann', content: 'Row one of the beans is sown today' })}\n`,
    );

    const onSqlite = await runCli(join(folder, 'sqlite.db'), ['ingest', file, '--no-progress']);
    expect(onSqlite.code, onSqlite.stderr).toBe(0);

    const url = await server.database('long_path');
    const ingested = await runCli(url, ['ingest', file, '--no-progress']);
    expect(ingested.code, ingested.stderr).toBe(0);
    const resumed = await runCli(url, ['--json', 'ingest', file, '--resume', '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ resumedAfter: 1, lines: 0 });
  });
});
