import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

const folder = mkdtempSync(join(tmpdir(), 'mneme-bench-cli-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const tinyLocomo = new URL('../../test/fixtures/locomo-tiny.json', import.meta.url).pathname;
/** Two sessions 150 days apart (see src/bench/locomo/run-locomo.test.ts). */
const liveLocomo = new URL('../../test/fixtures/locomo-live.json', import.meta.url).pathname;

/** Runs the CLI in-process; bench and eval make their own databases, so `--db` is not used. */
const cli = (...argv: string[]) => runCli(join(folder, 'unused.db'), argv);

const latency = { p50Ms: expect.any(Number), p95Ms: expect.any(Number), p99Ms: expect.any(Number) };
const legs = { unscoped: latency, scoped: latency };

describe('mneme bench', () => {
  it('measures mneme and the baseline on a tiny store and writes the figures as JSON', async () => {
    const file = join(folder, 'bench.json');
    const run = await cli('bench', '--sizes', '40', '--queries', '3', '--messages', '4', '--seed', '7', '--json', file);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('40 memories');
    expect(run.stdout).toMatch(/recall hybrid, scoped: p95 ms/);
    expect(run.stdout).toMatch(/vector leg recall@10 vs exact, unscoped +1\.000/);
    expect(run.stderr).toContain('storing 40 memories in each system');
    expect(run.stderr).toContain('the first maintenance cycle over 40 memories');
    expect(run.stdout).toMatch(/steady maintenance cycle: ms +\d/);
    expect(run.stdout).toMatch(/recall hybrid after a write, scoped: p50 ms +\d/);
    expect(run.stdout).toMatch(/ingest, one ingest\(\) each: messages\/s +\d/);
    expect(run.stdout).toMatch(/ingest, ingestMany batches: messages\/s +\d/);
    const report = JSON.parse(readFileSync(file, 'utf8'));
    expect(Object.keys(report)).toEqual(['sizes']);
    expect(report.sizes['40']).toEqual({
      mneme: {
        recall: { lexical: legs, vector: legs, hybrid: legs },
        rememberPerSecond: expect.any(Number),
        ingestPerSecond: expect.any(Number),
        ingestBatchedPerSecond: expect.any(Number),
        maintenanceMs: expect.any(Number),
        maintenanceSteadyMs: expect.any(Number),
        maintenancePeakRssBytes: expect.any(Number),
        vectorRecallVsExact: { unscoped: expect.any(Number), scoped: expect.any(Number) },
        recallAfterWrite: legs,
        bytesPer10k: expect.any(Number),
        peakRssBytes: expect.any(Number),
      },
      baseline: {
        recall: { lexical: legs, vector: legs, hybrid: legs },
        rememberPerSecond: expect.any(Number),
        recallAfterWrite: legs,
        bytesPer10k: expect.any(Number),
        peakRssBytes: expect.any(Number),
      },
    });
    // Timed recalls after a write (3 queries for each viewer), each after a new memory written to the store.
    expect(report.sizes['40'].mneme.recallAfterWrite.scoped.p50Ms).toBeGreaterThan(0);
  });

  // A CLI process starting PGlite and a whole bench cycle: 10 s on a quiet machine, over 30 s on loaded cores.
  it('measures mneme on PGlite with --db pglite:, the engines of one store sharing its folder', {
    timeout: 120_000,
  }, async () => {
    const run = await runCli('pglite:memory:', ['bench', '--sizes', '30', '--queries', '2', '--messages', '3']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('30 memories');
    // pgvector's search of 30 vectors is exact, as the baseline's.
    expect(run.stdout).toMatch(/vector leg recall@10 vs exact, unscoped +1\.000/);
    expect(run.stderr).toContain('the first maintenance cycle over 30 memories');
  });

  it('draws no progress bar with --no-progress, and draws them in place with --progress (README: long commands)', async () => {
    const args = ['bench', '--sizes', '20', '--queries', '2', '--messages', '2'];
    const quiet = await cli(...args, '--no-progress');
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain('20 memories');
    expect(quiet.stderr).not.toContain('storing 20 memories in each system');
    expect(quiet.stderr).not.toContain('[###');
    // Its lines of steps without units are not bars: they stay.
    expect(quiet.stderr).toContain('the first maintenance cycle over 20 memories');
    const drawn = await cli(...args, '--progress');
    expect(drawn.code).toBe(0);
    expect(drawn.stderr).toContain(`\rstoring 20 memories in each system [${'#'.repeat(30)}] 100% 40/40\n`);
  });

  it('refuses a size that is not a whole number', async () => {
    const run = await cli('bench', '--sizes', '10,ten');
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "mneme: option '--sizes <list>' argument '10,ten' is invalid. expected whole numbers from 1 to 10000000, comma-separated, e.g. 10000,100000\n",
    );
  });
});

describe('mneme eval locomo', () => {
  it('scores mneme and the FTS5 baseline on a tiny conversation and writes them as JSON', async () => {
    const file = join(folder, 'locomo.json');
    const run = await cli('eval', 'locomo', '--data', tinyLocomo, `--json=${file}`);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('evidence recall@k');
    expect(run.stdout).toContain('tiny-1');
    const report = JSON.parse(readFileSync(file, 'utf8'));
    expect(Object.keys(report)).toEqual(['mode', 'preset', 'mneme', 'baseline']);
    expect(report.mode).toBe('static');
    expect(report.preset).toBe('mneme');
    expect(report.mneme.decayedShare).toBe(0);
    expect(Object.keys(report.mneme)).toEqual(['overall', 'categories', 'adversarial', 'decayedShare']);
    expect(Object.keys(report.baseline)).toEqual(['overall', 'categories', 'adversarial']);
    for (const system of [report.mneme, report.baseline]) {
      expect(Object.keys(system.categories)).toEqual(['multi-hop', 'temporal', 'open-domain', 'single-hop']);
      expect(system.overall.questions).toBe(3);
      expect(system.adversarial.questions).toBe(1);
      expect(Object.keys(system.overall.recallAt)).toEqual(['1', '5', '10', '20']);
    }
    // The baseline finds "Ada: I adopted a puppy named Biscuit last week." first for the puppy's name.
    expect(report.baseline.categories['single-hop'].recallAt['1']).toBe(1);
  });

  it('draws no progress bar with --no-progress, and draws them in place with --progress', async () => {
    const quiet = await cli('eval', 'locomo', '--data', tinyLocomo, '--no-progress');
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain('evidence recall@k');
    expect(quiet.stderr).not.toContain('ingesting turns');
    const drawn = await cli('eval', 'locomo', '--data', tinyLocomo, '--progress');
    expect(drawn.code).toBe(0);
    expect(drawn.stderr).toMatch(/\rtiny-1: asking questions \[#{30}\] 100% \d+\/\d+\n/);
  });

  it('prints the figures as JSON on stdout with --json alone, and is the same on a second run', async () => {
    const first = await cli('--json', 'eval', 'locomo', '--data', tinyLocomo);
    const second = await cli('eval', 'locomo', '--data', tinyLocomo, '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual(JSON.parse(second.stdout));
  });

  it('replays live with --live, says so in the JSON, and writes the same bytes on a second run', async () => {
    const first = join(folder, 'live-1.json');
    const second = join(folder, 'live-2.json');
    const runs = [
      await cli('eval', 'locomo', '--data', liveLocomo, '--live', '--preset', 'mneme', `--json=${first}`),
      await cli('eval', 'locomo', '--data', liveLocomo, '--live', `--json=${second}`),
    ];
    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    expect(runs[0]?.stdout).toContain('live: each session at its own time');
    expect(runs[0]?.stdout).toMatch(/share of the memories created that decay archived by question time: \d/);
    const text = readFileSync(first, 'utf8');
    expect(readFileSync(second, 'utf8')).toBe(text);
    const report = JSON.parse(text);
    expect(Object.keys(report)).toEqual(['mode', 'preset', 'askAfterDays', 'mneme', 'baseline']);
    expect([report.mode, report.preset, report.askAfterDays]).toEqual(['live', 'mneme', 0]);
    expect(report.mneme.decayedShare).toBeGreaterThan(0);
  });

  it('asks later with --ask-after, under the preset of --preset', async () => {
    const run = await cli(
      '--json',
      'eval',
      'locomo',
      '--data',
      liveLocomo,
      '--live',
      '--ask-after',
      '90',
      '--preset',
      'salience',
    );
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect([report.mode, report.preset, report.askAfterDays]).toEqual(['live', 'salience', 90]);
  });

  it('writes each question of the run to the file of --questions, beside the figures', async () => {
    const file = join(folder, 'questions.json');
    const run = await cli('--json', 'eval', 'locomo', '--data', tinyLocomo, '--questions', file);
    expect(run.code).toBe(0);
    const figures = JSON.parse(run.stdout);
    expect(figures.questions).toBeUndefined();
    const questions = JSON.parse(readFileSync(file, 'utf8'));
    const scored = figures.mneme.overall.questions + figures.mneme.adversarial.questions;
    expect(questions).toHaveLength(scored);
    expect(questions[0]).toEqual({
      sampleId: expect.any(String),
      category: expect.any(Number),
      question: expect.any(String),
      evidence: expect.arrayContaining([
        { diaId: expect.any(String), rank: expect.toBeOneOf([null, expect.any(Number)]) },
      ]),
      top: expect.any(Array),
    });
  });

  it('scores only the hits above --min-relevance, keeping their places, as context keeps fewer of its top k', async () => {
    const runs = await Promise.all(
      [[], ['--min-relevance', '0.5']].map((flags) => cli('--json', 'eval', 'locomo', '--data', tinyLocomo, ...flags)),
    );
    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    const [all, strict] = runs.map((run) => JSON.parse(run.stdout));
    expect(all.minRelevance).toBeUndefined();
    expect(strict.minRelevance).toBe(0.5);
    for (const k of ['1', '5', '10', '20']) {
      expect(strict.mneme.overall.recallAt[k]).toBeLessThanOrEqual(all.mneme.overall.recallAt[k]);
      expect(strict.mneme.overall.contextWordsAt[k]).toBeLessThanOrEqual(all.mneme.overall.contextWordsAt[k]);
    }
    expect(strict.mneme.overall.contextWordsAt['20']).toBeLessThan(all.mneme.overall.contextWordsAt['20']);
  });

  it.each([
    [['--min-relevance', '1.5'], "argument '1.5' is invalid. expected a number from 0 to 1"],
    [['--min-relevance', 'high'], "argument 'high' is invalid. expected a number from 0 to 1"],
    [['--live', '--ask-after', '-1'], "argument '-1' is invalid. expected a number from 0 to 36500"],
    [['--live', '--ask-after', 'abc'], "argument 'abc' is invalid. expected a number from 0 to 36500"],
    [['--live', '--ask-after', '1e3'], "option '--ask-after <days>' argument '1e3' is invalid"],
    [['--ask-after', '90'], '--ask-after needs --live'],
    [['--preset', 'nope'], 'Allowed choices are mneme, matrix-bot, scoped-rest, memo-rag, salience.'],
  ])('refuses %j with exit code 2 and one line', async (flags, message) => {
    const run = await cli('eval', 'locomo', '--data', liveLocomo, ...flags);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stdout).toBe('');
  });

  it('says a --data file that does not exist is not found (exit code 3), and one that is not JSON is bad input', async () => {
    const missing = join(folder, 'no-such-locomo.json');
    const run = await cli('eval', 'locomo', '--data', missing);
    expect(run).toMatchObject({ code: 3, stdout: '' });
    expect(run.stderr).toBe(`mneme: cannot read the LoCoMo file ${missing}: it does not exist; check --data\n`);
    const notJson = join(folder, 'not-json.json');
    writeFileSync(notJson, 'not json');
    expect(await cli('eval', 'locomo', '--data', notJson)).toMatchObject({ code: 2, stdout: '' });
  });

  it('says which conversations exist when asked for one that does not', async () => {
    const run = await cli('eval', 'locomo', '--data', tinyLocomo, '--conversations', 'conv-99');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^mneme: no conversation conv-99 in /);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('tiny-1');
  });
});

describe('a --json or --questions file that cannot be written', () => {
  it.each([
    ['bench', '--sizes', '40', '--queries', '3', '--messages', '4', '--json'],
    ['eval', 'locomo', '--data', tinyLocomo, '--json'],
    ['eval', 'locomo', '--data', tinyLocomo, '--questions'],
  ])('is refused before the run, with exit code 2 and one line: %j', async (...argv) => {
    const file = join(folder, 'no-such-folder', 'figures.json');
    const run = await cli(...argv, file);
    expect(run.code).toBe(2);
    // With --json the error is the JSON object every command prints under the global --json.
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(`cannot write ${file}: its folder does not exist`);
    expect(run.stderr).not.toMatch(/unexpected|ingesting/i);
    expect(run.stdout).toBe('');
  });
});
