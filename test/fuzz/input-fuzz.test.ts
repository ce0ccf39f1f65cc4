/**
 * The fuzz corpus: inputs the faces must refuse with a clear 4xx problem+json (HTTP) or exit code and
 * one line (CLI), never a 5xx, an "unexpected error", a stack trace or a change to the database.
 * Each new bad input found goes into http-corpus.json or cli-corpus.json, not into a new test.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMneme } from '../../src/config/create-mneme.js';
import type { Mneme } from '../../src/core/mneme.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { createFixedClock } from '../../src/testing.js';
import { runCli } from '../cli-harness.js';

interface HttpCase {
  name: string;
  method: string;
  path: string;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as it is. */
  body?: string;
  /** Sent as these bytes (hex): for bodies no JSON string can hold, such as invalid UTF-8. */
  bodyHex?: string;
  headers?: Record<string, string>;
  status: number;
  /** A pattern the problem's `detail` matches. */
  detail?: string;
}

interface CliCase {
  name: string;
  /** The database path, when not the seeded copy. */
  db?: string;
  argv: string[];
  /** Written to the file `{input}` names. */
  input?: string;
  stdin?: string;
  exit: number;
  /** A pattern stderr matches. */
  stderr?: string;
  /** The messages in the database afterwards, for a refusal that keeps the lines before it. */
  messagesAfter?: number;
}

const folder = mkdtempSync(join(tmpdir(), 'mneme-fuzz-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const regularFile = join(folder, 'regular-file');
writeFileSync(regularFile, 'not a folder');

/** Stack frames, source files and Node internals: what no answer may show. */
const stackText =
  /\n\s+at |\bat [^\s]+ \(|\.(?:ts|js|mjs):\d+|node:internal|\/(?:src|dist|node_modules)\/[^\s]*\.(?:ts|js)/;

/** Expands `{{repeat:<text>:<count>}}` in every string of a corpus value. */
function expand<T>(value: T): T {
  if (typeof value === 'string') {
    return value.replaceAll(/\{\{repeat:(.*?):(\d+)\}\}/gs, (_, text: string, count: string) =>
      text.repeat(Number(count)),
    ) as T;
  }
  if (Array.isArray(value)) return value.map(expand) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expand(item)])) as T;
  }
  return value;
}

function corpus<Case>(name: string): Case[] {
  const { cases } = JSON.parse(readFileSync(join(import.meta.dirname, name), 'utf8')) as { cases: Case[] };
  return cases.map(expand);
}

/** A digest of every row of every table (full-text and vector shadow tables included). */
function digest(path: string): string {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const hash = createHash('sha256');
    const tables = database
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
      )
      .all();
    for (const { name } of tables) {
      hash.update(name);
      for (const row of database.prepare(`SELECT * FROM "${name}"`).raw().all()) {
        hash.update(JSON.stringify(row, (_, value) => (Buffer.isBuffer(value) ? value.toString('hex') : value)));
      }
    }
    return hash.digest('hex');
  } finally {
    database.close();
  }
}

function messageCount(path: string): number {
  const database = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (database.prepare('SELECT count(*) AS count FROM messages').get() as { count: number }).count;
  } finally {
    database.close();
  }
}

/** Ann's message 1 in channel general, memory 1, and topic t1. */
async function seed(mneme: Mneme): Promise<void> {
  await mneme.ingest({ channelId: 'general', sender: 'ann', senderName: 'Ann', content: 'I prefer green tea' });
  await mneme.remember({ content: 'Ann prefers green tea', scope: 'personal', userId: 'ann' });
  await mneme.createTopic({ id: 't1' });
  await mneme.whenIdle();
}

describe('the HTTP fuzz corpus', () => {
  const path = join(folder, 'http.db');
  const logged: unknown[] = [];
  let mneme: Mneme;
  let app: ReturnType<typeof createHttpApp>;

  beforeAll(async () => {
    mneme = await createMneme({ path, clock: createFixedClock('2024-06-15T12:00:00.000Z') });
    await seed(mneme);
    app = createHttpApp({ mneme, apiKeys: mneme.apiKeys, logError: (error) => logged.push(error) });
  });
  afterAll(async () => {
    await mneme.close();
  });

  it.each(corpus<HttpCase>('http-corpus.json').map((entry) => [entry.name, entry] as const))(
    'answers %s without a 5xx or a stack trace, changing nothing when it refuses',
    async (_, entry) => {
      // The background work of an earlier accepted case (extraction) is not this case's change.
      await mneme.whenIdle();
      const before = digest(path);
      const loggedBefore = logged.length;
      const body =
        entry.bodyHex !== undefined
          ? new Uint8Array(Buffer.from(entry.bodyHex, 'hex'))
          : entry.json === undefined
            ? entry.body
            : JSON.stringify(entry.json);
      const response = await app.request(entry.path, {
        method: entry.method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...entry.headers },
        ...(body === undefined ? {} : { body }),
      });
      const text = await response.text();
      expect(text).not.toMatch(stackText);
      expect(logged.slice(loggedBefore)).toEqual([]);
      expect(response.status).toBe(entry.status);
      if (response.status < 400) return;
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      const problem = JSON.parse(text) as { status: number; code: string; detail: string };
      expect(problem).toMatchObject({ status: entry.status, code: expect.stringMatching(/^[A-Z_]+$/) });
      if (entry.detail) expect(problem.detail).toMatch(new RegExp(entry.detail));
      await mneme.whenIdle();
      expect(digest(path)).toBe(before);
    },
  );
});

describe('the CLI fuzz corpus', () => {
  const seeded = join(folder, 'seeded.db');

  beforeAll(async () => {
    const mneme = await createMneme({ path: seeded, clock: createFixedClock('2024-06-15T12:00:00.000Z') });
    await seed(mneme);
    await mneme.close();
  });

  it.each(corpus<CliCase>('cli-corpus.json').map((entry, index) => [entry.name, entry, index] as const))(
    'runs %s to a clear exit code and one line, never an unexpected error',
    async (_, entry, index) => {
      const database = join(folder, `cli-${index}.db`);
      copyFileSync(seeded, database);
      const input = join(folder, `input-${index}.jsonl`);
      if (entry.input !== undefined) writeFileSync(input, entry.input);
      const place = (text: string) =>
        text.replaceAll('{input}', input).replaceAll('{file}', regularFile).replaceAll('{folder}', folder);
      const before = digest(database);
      const result = await runCli(
        entry.db === undefined ? database : place(entry.db),
        entry.argv.map(place),
        entry.stdin === undefined ? {} : { stdin: Readable.from([entry.stdin]) },
      );
      expect(`${result.stdout}${result.stderr}`).not.toMatch(stackText);
      expect(result.stderr).not.toMatch(/unexpected error/);
      expect({ exit: result.code, stderr: result.stderr }).toMatchObject({ exit: entry.exit });
      if (entry.stderr) expect(result.stderr).toMatch(new RegExp(entry.stderr));
      if (entry.exit === 0) {
        expect(messageCount(database)).toBe(entry.messagesAfter ?? messageCount(seeded));
        return;
      }
      expect(result.stderr).toMatch(/^mneme: [^\n]+\n$/);
      expect(result.stdout).toBe('');
      if (entry.messagesAfter === undefined) expect(digest(database)).toBe(before);
      else expect(messageCount(database)).toBe(entry.messagesAfter);
    },
  );
});
