import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { copyDatabase } from '../src/config/copy-database.js';
import { createMneme } from '../src/config/create-mneme.js';
import { createHttpApp } from '../src/http/http-app.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { stdioSession } from '../src/mcp/mcp-session.js';
import { runCli } from './cli-harness.js';
import { storesIn } from './data-from-before.js';
import { expectImportRefused } from './export-file-fixture.js';

// Until 2026-12-05 SQLite stored text holding U+0000 where PostgreSQL refused it (422 naming no field), so a SQLite
// database holding one could not be copied to PostgreSQL. Every face now refuses it on every store (ADR 43).
const folder = mkdtempSync(join(tmpdir(), 'mneme-nul-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const refusal = (field: string) => new RegExp(`${field.replaceAll('.', '\\.')}: text must not hold the NUL character`);
const quiet = { warn: () => {}, info: () => {} };

/** A SQLite file holding a memory whose content has a NUL, as mneme stored it before ADR 43, and that memory's id. */
async function sqliteFileWithNul(name: string): Promise<{ path: string; id: number }> {
  const path = join(folder, `${name}.db`);
  const mneme = await createMneme({ path, logger: quiet });
  await mneme.ingest({ channelId: 'room', sender: 'ann', content: 'Ann waters the plants' });
  const { id } = await mneme.remember({ content: 'Ann likes tea', scope: 'personal', userId: 'ann' });
  await mneme.close();
  const database = new Database(path);
  database.prepare("UPDATE memories SET content = 'Ann likes ' || char(0) || ' tea' WHERE id = ?").run(id);
  database.close();
  return { path, id };
}

describe.each(storesIn(folder))('the NUL character on %s', (store, pathOf) => {
  it('is refused at every face with a 422 or exit 2 naming the field, and nothing of it is stored', async () => {
    const path = pathOf('faces');
    const mneme = await createMneme({ path, logger: quiet });
    const errors: unknown[] = [];
    try {
      const app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => errors.push(error) });
      const legit = { channelId: 'room', sender: 'ann', content: 'Ann waters the plants' };
      const refused: Array<[string, string, unknown, string]> = [
        ['POST', '/api/messages', { ...legit, content: 'hello\u0000there' }, 'content'],
        ['POST', '/api/messages', { ...legit, externalId: 'e\u0000' }, 'externalId'],
        [
          'POST',
          '/api/messages/batch',
          { messages: [legit, { ...legit, content: 'two\u0000' }] },
          'messages.1.content',
        ],
        ['POST', '/api/memories', { content: 'x\u0000y', scope: 'personal', userId: 'ann' }, 'content'],
        ['POST', '/api/memories', { content: 'xy', scope: 'personal', userId: 'ann', category: 'c\u0000' }, 'category'],
        ['POST', '/api/projects', { id: 'p\u0000', name: 'Launch' }, 'id'],
        ['POST', '/api/memories/search', { query: 'kestrel\u0000field' }, 'query'],
        ['GET', '/api/channels/ro%00om', undefined, 'id'],
        ['GET', '/api/memories?userId=a%00nn', undefined, 'userId'],
      ];
      for (const [method, route, body, field] of refused) {
        const response = await app.request(route, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const problem = (await response.json()) as { code: string; detail: string };
        expect({ route, field, status: response.status, type: response.headers.get('content-type') }).toEqual({
          route,
          field,
          status: 422,
          type: 'application/problem+json',
        });
        expect(problem.code).toBe('INVALID_INPUT');
        expect(problem.detail, route).toMatch(refusal(field));
      }

      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await createMcpServer({ session: stdioSession(mneme, { userId: 'ann', channelId: 'room' }) }).connect(serverSide);
      const client = new Client({ name: 'nul', version: '1.0.0' });
      await client.connect(clientSide);
      const result = (await client.callTool({ name: 'remember', arguments: { content: 'Ann \u0000 tea' } })) as {
        isError?: boolean;
        content: Array<{ text?: string }>;
      };
      await client.close();
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toMatch(/^INVALID_INPUT: invalid memory: content: text must not hold the NUL/);

      await mneme.whenIdle();
      const stats = await mneme.stats();
      expect({ messages: stats.messages, memories: stats.total, errors }).toEqual({
        messages: 0,
        memories: 0,
        errors: [],
      });
    } finally {
      await mneme.close();
    }

    const lines = join(folder, `nul-${store}.jsonl`);
    writeFileSync(
      lines,
      `${JSON.stringify(legit())}\n${JSON.stringify({ ...legit(), content: 'Ann likes \u0000 tea' })}\n`,
    );
    const ingested = await runCli(path, ['ingest', '--no-progress', lines]);
    expect(ingested.code).toBe(2);
    expect(ingested.stderr).toMatch(/^mneme: line 2: invalid message: content: text must not hold the NUL character/);
    expect(ingested.stderr.split('\n')).toHaveLength(2);
    // As `mneme ingest` documents, the lines before the refused one were written; nothing of line 2 was.
    const stats = JSON.parse((await runCli(path, ['--json', 'stats'])).stdout) as { messages: number };
    expect(stats.messages).toBe(1);
  }, 120_000);

  it('in an export of a SQLite file that stored one is refused by import with its line, and imports once taken out', async () => {
    const { path: source } = await sqliteFileWithNul(`export-source-${store}`);
    const file = join(folder, `export-${store}.jsonl`);
    const exported = await runCli(source, ['export', '--out', file]);
    expect(exported.code, exported.stderr).toBe(0);
    const target = pathOf('import');
    await expectImportRefused(target, file, /^mneme: line \d+: content: text must not hold the NUL character/);

    // The way ADR 43 documents: the user takes the NUL out of the line, and the file imports.
    writeFileSync(file, readFileSync(file, 'utf8').replace('Ann likes \\u0000 tea', 'Ann likes tea'));
    const imported = await runCli(target, ['import', file]);
    expect(imported.code, imported.stderr).toBe(0);
    const listed = JSON.parse((await runCli(target, ['--json', 'list', '--user', 'ann'])).stdout) as {
      memories: Array<{ content: string }>;
    };
    expect(listed.memories.map((memory) => memory.content)).toContain('Ann likes tea');
  }, 120_000);
});

describe('a copy of a SQLite file that stored a NUL', () => {
  it('into PostgreSQL stops at the row holding it, naming its table, id and column, and alters no text', async () => {
    const { path: source, id } = await sqliteFileWithNul('copy-source');
    const copied = copyDatabase({ from: source, to: `pglite:${join(folder, 'copy-target')}` });
    await expect(copied).rejects.toThrow(
      new RegExp(
        `^the memories row \\(id ${id}\\) holds the NUL character \\(\\\\u0000\\) in its content, which PostgreSQL cannot store.*Export the source`,
      ),
    );
    // Into SQLite the text is carried as it is.
    const intoSqlite = join(folder, 'copy-target.db');
    await copyDatabase({ from: source, to: intoSqlite });
    const database = new Database(intoSqlite, { readonly: true });
    const row = database.prepare('SELECT content FROM memories WHERE id = ?').get(id) as { content: string };
    database.close();
    expect(row.content).toBe('Ann likes \u0000 tea');
  }, 120_000);

  it('into PostgreSQL names a row of a table without an id by the columns of its key', async () => {
    const { path: source } = await sqliteFileWithNul('copy-member-source');
    const database = new Database(source);
    database
      .prepare("INSERT INTO members (kind, space_id, user_id, added_at) VALUES ('channel', 'room', 'b' || char(0), 1)")
      .run();
    database.close();
    const copied = copyDatabase({ from: source, to: `pglite:${join(folder, 'copy-member-target')}` });
    await expect(copied).rejects.toThrow(
      /^the members row \(kind "channel", space_id "room", user_id "b\\u0000"\) holds the NUL character \(\\u0000\) in its user_id/,
    );
  }, 120_000);
});

function legit() {
  return { channelId: 'room', sender: 'ann', content: 'Ann waters the plants' };
}
