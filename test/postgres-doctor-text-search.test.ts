import { afterAll, describe, expect, it } from 'vitest';
import {
  hasPostgresBinaries,
  postgresBinaries,
  startTestPostgresServer,
  type TestPostgresServer,
} from '../src/storage/postgres/postgres-server.fixture.js';
import { runCli } from './cli-harness.js';

/*
 * ADR 49 left this open: on a PostgreSQL database whose LC_CTYPE is `C`, full text keeps letters outside ASCII
 * capitalised (`ελένη` does not find `Ελένη`). `createMneme` warns when it opens one, so `serve`, `proxy` and `mcp`
 * print it, but `mneme doctor` opened the database with its warnings silenced and said nothing of it.
 */

let server: Promise<TestPostgresServer> | undefined;
let databases = 0;

/** A new database of the test server whose character classification is `ctype`. */
async function databaseWithCtype(ctype: string): Promise<string> {
  server ??= startTestPostgresServer();
  return (await server).database(`doctor_ctype_${++databases}`, ['--template=template0', `--lc-ctype=${ctype}`]);
}

afterAll(async () => {
  await (await server)?.stop();
});

const offline = { MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };

describe.skipIf(!hasPostgresBinaries)('mneme doctor on a PostgreSQL 15 server', () => {
  it('reports a database whose LC_CTYPE is C as one whose full text misses capital letters outside ASCII, with the way out', async () => {
    const url = await databaseWithCtype('C');
    const text = await runCli(url, ['doctor'], { env: offline });
    expect(text.code).toBe(0);
    const warnings = text.stdout.split('\n').filter((line) => line.startsWith('  WARNING: '));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/LC_CTYPE C\) lowers no letter outside ASCII/);
    expect(warnings[0]).toMatch(/LC_CTYPE 'C\.UTF-8'.*mneme copy/);

    const json = await runCli(url, ['--json', 'doctor'], { env: offline });
    expect(json.code).toBe(0);
    const { database } = JSON.parse(json.stdout) as { database: { warnings: string[] } };
    expect(database.warnings).toEqual([warnings[0]?.slice('  WARNING: '.length)]);
  }, 120_000);

  it('reports nothing of full text on a database whose LC_CTYPE is UTF-8', async () => {
    const url = await databaseWithCtype('C.UTF-8');
    const text = await runCli(url, ['doctor'], { env: offline });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('database: postgres://');
    expect(text.stdout).not.toContain('WARNING');
    const json = await runCli(url, ['--json', 'doctor'], { env: offline });
    expect(JSON.parse(json.stdout)).toMatchObject({ database: { warnings: [] } });
  }, 120_000);
});

if (!hasPostgresBinaries) {
  describe(`mneme doctor on a PostgreSQL 15 server (skipped: no initdb and pg_ctl in ${postgresBinaries}; set MNEME_PG_BIN or install postgresql-15)`, () => {
    it.skip('reports a database whose LC_CTYPE is C', () => {});
  });
}
