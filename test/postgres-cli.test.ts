import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hasPostgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';

describe.skipIf(!hasPostgresBinaries)('the CLI on a PostgreSQL URL (postgresql-15, no pgvector)', () => {
  let server: TestPostgresServer;
  beforeAll(async () => {
    server = await startTestPostgresServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('stores and recalls through --db postgres://..., and MNEME_DB takes the same URL', async () => {
    const url = await server.database('cli');
    const added = await runCli(url, ['add', 'The deploy runs on Kubernetes', '--json']);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const found = await runCli(url, ['search', 'kubernetes', '--json']);
    expect(found.code).toBe(0);
    expect(JSON.stringify(JSON.parse(found.stdout))).toContain('The deploy runs on Kubernetes');

    const { main } = await import('../src/cli/cli-main.js');
    let stdout = '';
    const code = await main(['list', '--json'], {
      stdout: (text) => {
        stdout += text;
      },
      stderr: () => {},
      env: { MNEME_EMBEDDER: 'none', MNEME_DB: url },
    });
    expect(code).toBe(0);
    expect(stdout).toContain('The deploy runs on Kubernetes');
  });

  it('doctor says vector search is unavailable without pgvector, why and how to add it, and never prints the password', async () => {
    const url = (await server.database('doctor')).replace('mneme@', 'mneme:secret-word@');
    const result = await runCli(url, ['doctor'], { env: { MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' } });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/vector search: unavailable: the PostgreSQL server has no pgvector extension/);
    expect(result.stdout).toMatch(/install pgvector on the server/);
    expect(result.stdout).not.toContain('secret-word');
    expect(result.stdout).toContain('mneme:***@127.0.0.1');
  });

  it('runs mneme bench on the server with --db, in a database of its own that it drops afterwards', async () => {
    const bench = await runCli(server.url, ['bench', '--sizes', '40', '--queries', '2', '--messages', '3']);
    expect(bench.code).toBe(0);
    expect(bench.stdout).toMatch(/40 memories/);
    expect(bench.stdout).toMatch(/recall lexical, scoped: p95 ms/);
    const { createPgPoolDatabase } = await import('../src/storage/postgres/postgres-database.js');
    const admin = createPgPoolDatabase(server.url);
    const { rows } = await admin.query("SELECT datname FROM pg_database WHERE datname LIKE 'mneme_bench_%'");
    await admin.close();
    expect(rows).toEqual([]);
  }, 120_000);

  it('exports a PostgreSQL database, per user too, and imports the file into another that exports the same rows', async () => {
    const source = await server.database('export_source');
    await runCli(source, ['add', 'Ann keeps bees on the roof', '--scope', 'personal', '--user', 'ann']);
    await runCli(source, ['add', 'Bob plays the cello', '--scope', 'personal', '--user', 'bob']);
    await runCli(source, ['add', 'The office closes on Mondays']);
    const exported = await runCli(source, ['export']);
    expect(exported).toMatchObject({ code: 0, stderr: '' });
    const lines = exported.stdout.trim().split('\n');
    expect(lines.filter((line) => line.includes('"type":"memory"'))).toHaveLength(3);
    const annOnly = await runCli(source, ['export', '--user', 'ann']);
    expect(annOnly.code).toBe(0);
    expect(annOnly.stdout).toContain('Ann keeps bees on the roof');
    expect(annOnly.stdout).not.toContain('Bob plays the cello');

    const folder = mkdtempSync(join(tmpdir(), 'mneme-pg-export-'));
    const file = join(folder, 'all.jsonl');
    writeFileSync(file, exported.stdout);
    const target = await server.database('export_target');
    const imported = await runCli(target, ['import', file]);
    expect(imported).toMatchObject({ code: 0, stderr: '' });
    const again = await runCli(target, ['export']);
    const memories = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; content?: string; owner?: string })
        .filter((record) => record.type === 'memory')
        .map((record) => [record.content, record.owner]);
    expect(memories(again.stdout)).toEqual(memories(exported.stdout));
    const refused = await runCli(target, ['import', file]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^mneme: the database is not empty/);
    expect(memories((await runCli(target, ['export'])).stdout)).toEqual(memories(exported.stdout));
    rmSync(folder, { recursive: true, force: true });
  });

  it('restores where mneme ingest got in a file, so resuming it on the restored database appends only the new line', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mneme-pg-resume-'));
    const file = join(folder, 'chat.jsonl');
    const line = (index: number) =>
      JSON.stringify({ channelId: 'kitchen', sender: 'ann', content: `Row ${index} of beans is sown` });
    writeFileSync(file, `${[1, 2, 3].map(line).join('\n')}\n`);
    const source = await server.database('resume_source');
    expect((await runCli(source, ['ingest', file, '--no-progress'])).code).toBe(0);
    const exported = join(folder, 'export.jsonl');
    expect((await runCli(source, ['export', '--out', exported])).code).toBe(0);
    const target = await server.database('resume_target');
    const imported = await runCli(target, ['import', exported]);
    expect(imported).toMatchObject({ code: 0, stderr: '' });
    expect(imported.stdout).toContain('how far mneme ingest got in 1 file (');
    writeFileSync(file, `${[1, 2, 3, 4].map(line).join('\n')}\n`);
    const resumed = await runCli(target, ['--json', 'ingest', file, '--resume', '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ resumedAfter: 3, lines: 1, messages: 1 });
    rmSync(folder, { recursive: true, force: true });
  });

  it('fails with one clear line when the server cannot be reached', async () => {
    const url = (await server.database('cli')).replace(/:\d+\//, ':1/');
    const result = await runCli(url, ['list']);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^mneme: .*cannot reach the PostgreSQL server.*check the URL/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
