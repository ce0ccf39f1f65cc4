import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';

/**
 * wt-attack24b: `mneme ingest` waits for extraction before it exits, and said "ingested ...; 0 new memories" with
 * exit code 0 when extraction failed (a full disk under the memories' writes, a chat model that does not answer):
 * the worker logged that it would try again, in a command that was about to end. Now the run says the lines were
 * written but their messages were not extracted, with exit code 7; `--resume` then appends nothing and extracts.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack24b-ingest-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function pastWatermark(path: string): number {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return database
      .prepare<[], number>(
        `SELECT COUNT(*) FROM messages m LEFT JOIN maintenance_state s ON s.channel_id = m.channel_id
           AND s.task = 'extraction' WHERE m.id > COALESCE(s.watermark, 0)`,
      )
      .pluck()
      .get() as number;
  } finally {
    database.close();
  }
}

describe('mneme ingest when extraction fails', () => {
  it('does not exit 0 when the messages it appended were not extracted, and --resume extracts them', {
    timeout: 120_000,
  }, async () => {
    const database = join(folder, 'mneme.db');
    const file = join(folder, 'lines.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ channelId: 'desk', sender: 'ann', content: 'I moved to Lisbon last spring and I keep bees' })}\n`,
    );
    // A chat model nobody answers for: every extraction step fails (as the memories' writes do on a full disk).
    const failing = await runCli(database, ['ingest', file, '--no-progress'], {
      env: { MNEME_EMBEDDER: 'none', MNEME_CHAT: 'ollama:llama3', MNEME_OLLAMA_URL: 'http://127.0.0.1:9' },
    });
    expect(pastWatermark(database)).toBe(1);
    expect(failing.code).toBe(7);
    expect(failing.stderr).toMatch(
      /mneme: the lines were written \(1 messages appended; mneme ingest --resume appends none of them again\), but extracting memories from the messages of channel desk failed/,
    );
    const resumed = await runCli(database, ['ingest', file, '--resume', '--no-progress']);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^ingested 0 messages .* after line 1; [1-9]\d* new memories/);
    expect(pastWatermark(database)).toBe(0);
  });
});
