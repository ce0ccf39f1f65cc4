import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

/**
 * wt-crash21: `mneme ingest` records a file's progress (ADR 14, `ingest_files`) so that `--resume` never appends a
 * committed line twice; `mneme copy` carries that record, `mneme export` does not (docs/export-format.md lists what is
 * not exported: vectors, API keys, leases). A database restored from its export and told to `--resume` the same file
 * ingests every line again: each message twice, and each exchange memory written again from the copies.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack21-export-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function count(path: string, sql: string): number {
  const database = new Database(path, { readonly: true });
  try {
    return database.prepare(sql).pluck().get() as number;
  } finally {
    database.close();
  }
}

describe('a file ingested, the database exported and restored, then the file resumed', () => {
  it('appends none of the lines the restored database already holds', { timeout: 60_000 }, async () => {
    const file = join(folder, 'chat.jsonl');
    const lines = Array.from({ length: 20 }, (_, index) =>
      JSON.stringify({
        channelId: 'kitchen',
        userId: 'ann',
        userMessage: `I planted tomato row ${index} beside the basil and the mint`,
        assistantReply: `Noted, row ${index} of tomatoes next to the herbs.`,
        createdAt: new Date(Date.parse('2024-06-01T00:00:00Z') + index * 60_000).toISOString(),
      }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    const source = join(folder, 'source.db');
    expect((await runCli(source, ['ingest', file, '--no-progress'])).code).toBe(0);
    const exported = join(folder, 'export.jsonl');
    expect((await runCli(source, ['export', '--out', exported])).code).toBe(0);
    const restored = join(folder, 'restored.db');
    const imported = await runCli(restored, ['import', exported]);
    expect(imported.code, imported.stderr).toBe(0);
    const messages = count(restored, 'SELECT count(*) FROM messages');
    const exchanges = count(restored, "SELECT count(*) FROM memories WHERE source = 'exchange'");
    expect(messages).toBe(40);
    const resumed = await runCli(restored, ['ingest', file, '--resume', '--no-progress']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(count(restored, 'SELECT count(*) FROM messages')).toBe(messages);
    expect(count(restored, "SELECT count(*) FROM memories WHERE source = 'exchange'")).toBe(exchanges);
  });
});
