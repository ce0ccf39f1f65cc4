import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the fault suite's quick variant (`node bench/faults.mjs --quick`, docs/reliability.md) against
// the built package once, then checks each promise on its figures. The suite kills real processes at
// seeded moments, fuzzes a real server on 127.0.0.1 and scans the raw database files.

const root = resolve(import.meta.dirname, '..');
const folder = mkdtempSync(join(tmpdir(), 'mneme-faults-test-'));
let suite: ChildProcess | undefined;
afterAll(() => {
  if (suite && suite.exitCode === null) suite.kill('SIGTERM');
  rmSync(folder, { recursive: true, force: true });
});

interface Duplicates {
  extra: number;
  examples: string[];
}
interface Extraction {
  integrity: string[];
  duplicates: Duplicates;
  unextracted: { count: number };
}
interface LockPhase {
  answeredWhileLocked: number;
  timeouts: number;
  writesBusyWithRetryAfter: number;
  writesTimedOut: number;
}
interface FaultResults {
  errors: Record<string, string>;
  crash: {
    serve: Extraction & { kills: number; acknowledged: number; lost: number };
    ingest: Extraction & { kills: number; partialWrites: number };
  };
  concurrency: {
    mixed: Extraction & { acknowledged: number; lost: number; httpErrors: number; cliFailures: number };
    importers: Extraction & { failures: number; rounds: { failureExamples: string[] }[] };
    newFile: { failures: string[] };
  };
  fuzz: {
    http: {
      requests: number;
      unreadableCases: number;
      serverErrors: string[];
      crashes: string[];
      stackTracesInBodies: string[];
      hangs: string[];
      changedAlthoughRefused: string[];
      unexpectedStatus: string[];
    };
    cli: {
      runs: number;
      unreadableCases: number;
      internalErrors: string[];
      crashes: string[];
      stackTraces: string[];
      hangs: string[];
      changedAlthoughRefused: string[];
      unexpectedExit: string[];
    };
  };
  availability: {
    catchUp: { backlog: number; answeredWhileBacklogPending: number; unanswered: number };
    lock: { short: LockPhase; long: LockPhase };
  };
  purge: {
    rowsBefore: number;
    rowsAfter: number;
    otherUserMessagesKept: boolean;
    byteHitsAfterClose: { total: number; perFile: Record<string, number> };
  };
}

let results: FaultResults;

beforeAll(async () => {
  expect(existsSync(join(root, 'dist', 'cli', 'mneme.js')), 'run `npm run build` first').toBe(true);
  const output = join(folder, 'faults.json');
  let stderr = '';
  const code = await new Promise<number | null>((resolvePromise) => {
    suite = spawn(process.execPath, [join(root, 'bench', 'faults.mjs'), '--quick', '--json', output], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    suite.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    suite.once('close', resolvePromise);
  });
  // 0: every promise held; 1: one did not (the figures say which); anything else: the suite broke.
  expect([0, 1], `the fault suite itself failed:\n${stderr}`).toContain(code);
  results = JSON.parse(readFileSync(output, 'utf8')) as FaultResults;
}, 300_000);

describe('the fault suite, quick (bench/faults.mjs --quick against dist/)', () => {
  it('runs every part to its end', () => {
    expect(results.errors).toEqual({});
  });

  it('loses no acknowledged write when mneme serve is killed -9 under load, nor when processes share the file', () => {
    const { serve } = results.crash;
    expect(serve.kills).toBe(2);
    expect(serve.acknowledged).toBeGreaterThan(0);
    expect(serve.lost).toBe(0);
    expect(results.concurrency.mixed.acknowledged).toBeGreaterThan(0);
    expect(results.concurrency.mixed.lost).toBe(0);
  });

  it('leaves a sound file (integrity_check, FTS5 integrity-check) after every kill and every concurrent run', () => {
    const { crash, concurrency } = results;
    for (const part of [crash.serve, crash.ingest, concurrency.mixed, concurrency.importers]) {
      expect(part.integrity).toEqual([]);
    }
  });

  it('gives no user-visible error while a server under load and CLI commands write one file at once', () => {
    const { mixed } = results.concurrency;
    expect(mixed.httpErrors).toBe(0);
    expect(mixed.cliFailures).toBe(0);
  });

  it('writes an ingest batch whole or not at all when mneme ingest is killed', () => {
    expect(results.crash.ingest.partialWrites).toBe(0);
  });

  it('extracts every message after kills, concurrent writers and a final catch-up', () => {
    const { crash, concurrency } = results;
    for (const part of [crash.serve, crash.ingest, concurrency.mixed, concurrency.importers]) {
      expect(part.unextracted.count).toBe(0);
    }
  });

  it('writes no duplicate memory when mneme serve is killed and restarted', () => {
    expect(results.crash.serve.duplicates.examples).toEqual([]);
    expect(results.crash.serve.duplicates.extra).toBe(0);
  });

  it('answers malformed HTTP requests with no crash, stack trace or hang, and changes nothing it refused', () => {
    const { http } = results.fuzz;
    expect(http.requests).toBeGreaterThan(0);
    expect(http.unreadableCases).toBe(0);
    expect(http.crashes).toEqual([]);
    expect(http.stackTracesInBodies).toEqual([]);
    expect(http.hangs).toEqual([]);
    expect(http.changedAlthoughRefused).toEqual([]);
    // Each corpus case as the corpus writes it (its long texts expanded), answered with the status it expects.
    expect(http.unexpectedStatus).toEqual([]);
  });

  it('answers malformed command lines with no crash, stack trace or hang, and changes nothing it refused', () => {
    const { cli } = results.fuzz;
    expect(cli.runs).toBeGreaterThan(0);
    expect(cli.unreadableCases).toBe(0);
    expect(cli.crashes).toEqual([]);
    expect(cli.stackTraces).toEqual([]);
    expect(cli.hangs).toEqual([]);
    expect(cli.changedAlthoughRefused).toEqual([]);
    expect(cli.unexpectedExit).toEqual([]);
  });

  it("deletes every row holding a purged user's words and keeps the other users' data", () => {
    const { purge } = results;
    expect(purge.rowsBefore).toBeGreaterThan(0);
    expect(purge.rowsAfter).toBe(0);
    expect(purge.otherUserMessagesKept).toBe(true);
  });

  it('answers a write 503 with Retry-After, not silence, while another process holds the lock past the busy timeout', () => {
    const { long } = results.availability.lock;
    expect(long.writesBusyWithRetryAfter).toBeGreaterThan(0);
    expect(long.writesTimedOut).toBe(0);
    expect(long.timeouts).toBe(0);
  });

  // The promises below do not hold on commit 65172e6; fixes are under way in other branches. Each one
  // is its own test so that a run after a merge shows which now hold.
  describe('promises that failed when the suite was written', () => {
    it('answers no malformed HTTP request with a 5xx (createdAt 1e20, replyTo 999999 gave 500)', () => {
      expect(results.fuzz.http.serverErrors).toEqual([]);
    });

    it('exits with a documented code on malformed command lines, never 1 or 7 (ingest of a directory, createdAt 1e20, replyTo 999999, serve --port 99999)', () => {
      expect(results.fuzz.cli.internalErrors).toEqual([]);
    });

    it('writes no duplicate memory when mneme ingest is killed mid-file and extraction is caught up', () => {
      expect(results.crash.ingest.duplicates.examples).toEqual([]);
      expect(results.crash.ingest.duplicates.extra).toBe(0);
    });

    it('writes no duplicate memory when two mneme ingest of one file run at once, or a server and the CLI share a file', () => {
      const { importers, mixed } = results.concurrency;
      expect(importers.duplicates.examples).toEqual([]);
      expect(importers.duplicates.extra).toBe(0);
      expect(mixed.duplicates.extra).toBe(0);
    });

    it('lets several processes open a new database file at once (the migration is not raced) and both importers succeed', () => {
      const { importers, newFile } = results.concurrency;
      expect(newFile.failures).toEqual([]);
      expect(importers.rounds.flatMap((round) => round.failureExamples)).toEqual([]);
      expect(importers.failures).toBe(0);
    });

    it('answers /api/health while it catches up on a backlog of messages', () => {
      const { catchUp } = results.availability;
      expect(catchUp.backlog).toBeGreaterThan(0);
      expect(catchUp.unanswered).toBe(0);
      expect(catchUp.answeredWhileBacklogPending).toBeGreaterThan(0);
    });

    it('answers /api/health while another process holds the write lock', () => {
      expect(results.availability.lock.short.answeredWhileLocked).toBeGreaterThan(0);
    });

    it("leaves no byte of a purged user's words in the database file, its -wal or its -shm", () => {
      expect(results.purge.byteHitsAfterClose.perFile).toEqual(
        Object.fromEntries(Object.keys(results.purge.byteHitsAfterClose.perFile).map((file) => [file, 0])),
      );
      expect(results.purge.byteHitsAfterClose.total).toBe(0);
    });
  });
});
