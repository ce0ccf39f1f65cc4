// concurrency: one database file written at once by a server (under HTTP write load) and by CLI
// processes (`mneme add`, `mneme ingest`); then two `mneme ingest` of the same file at once. Counts
// what a user sees (non-2xx answers, non-zero exits) and what the file holds afterwards.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runMneme, startServer } from './child-processes.mjs';
import { catchUp, finalChecks } from './crash-part.mjs';
import { lostWrites, withDatabase } from './database-checks.mjs';
import { ingestLines, seededRandom } from './seeded-text.mjs';
import { startWriteLoad } from './write-load.mjs';

/** First line of a failed command's stderr, for the report. */
const firstLine = (text) => text.trim().split('\n')[0] ?? '';

export async function mixedWriters({ folder, seed, adds, lines, log }) {
  const database = join(folder, 'concurrency-mixed.db');
  const random = seededRandom(seed + 11);
  const file = join(folder, 'mixed.jsonl');
  writeFileSync(file, `${ingestLines(random, { prefix: 'mixed', count: lines, channels: 4 }).join('\n')}\n`);
  const server = await startServer(database);
  const load = startWriteLoad(server.url, { seed: seed + 100, tag: 'mixed-http', writers: 2 });
  const exits = [];
  const acknowledged = [];
  const adder = async (worker) => {
    for (let index = 0; index < adds; index++) {
      const content = `CLI note ${worker}-${index}: the build server is rebooted on Sundays`;
      const run = await runMneme(['--db', database, '--json', 'add', content, '--scope', 'personal', '--user', 'ben']);
      exits.push({ command: 'add', code: run.code, signal: run.signal, error: firstLine(run.stderr) });
      if (run.code === 0) acknowledged.push({ kind: 'memory', id: JSON.parse(run.stdout).id, content });
    }
  };
  const importer = async () => {
    const run = await runMneme(['--db', database, '--json', 'ingest', '--no-progress', file], { timeoutMs: 120_000 });
    exits.push({ command: 'ingest', code: run.code, signal: run.signal, error: firstLine(run.stderr) });
  };
  await Promise.all([adder(1), adder(2), importer()]);
  await load.stop();
  acknowledged.push(...load.acknowledged);
  const stopped = await server.stop();
  await catchUp(database);
  const final = finalChecks(database);
  const lost = withDatabase(database, (opened) => lostWrites(opened, acknowledged));
  const failedExits = exits.filter((exit) => exit.code !== 0);
  log(
    `concurrency: server + CLI: ${load.requests()} HTTP writes (${load.refused.length + load.failures.length} not acknowledged), ${exits.length} CLI runs (${failedExits.length} failed)`,
  );
  return {
    httpWrites: load.requests(),
    httpErrors: load.refused.length + load.failures.length,
    httpErrorExamples: [...load.refused, ...load.failures].slice(0, 3),
    cliRuns: exits.length,
    cliFailures: failedExits.length,
    cliFailureExamples: failedExits.slice(0, 3),
    serverStop: stopped,
    acknowledged: acknowledged.length,
    lost: lost.length,
    integrity: final.integrity,
    duplicates: final.duplicates,
    unextracted: final.unextracted,
  };
}

/**
 * Two `mneme ingest` of one file at once, twice: first on a file that does not exist yet (both open and
 * migrate it), then on the file the first round made (both extract the same channels).
 */
export async function twoImporters({ folder, seed, lines, log }) {
  const database = join(folder, 'concurrency-importers.db');
  const random = seededRandom(seed + 13);
  const rounds = [];
  for (const round of ['new file', 'existing file']) {
    const prefix = round === 'new file' ? 'same1' : 'same2';
    const file = join(folder, `${prefix}.jsonl`);
    const content = ingestLines(random, { prefix, count: lines, channels: 4 });
    writeFileSync(file, `${content.join('\n')}\n`);
    const runs = await Promise.all(
      [1, 2].map(() => runMneme(['--db', database, '--json', 'ingest', '--no-progress', file], { timeoutMs: 120_000 })),
    );
    const failed = runs.filter((run) => run.code !== 0);
    rounds.push({
      round,
      exits: runs.map((run) => run.signal ?? run.code),
      failures: failed.length,
      failureExamples: failed.map((run) => firstLine(run.stderr)),
      messagesExpected: 2 * content.reduce((sum, line) => sum + ('userMessage' in JSON.parse(line) ? 2 : 1), 0),
      messages: withDatabase(
        database,
        (opened) =>
          opened.prepare('SELECT COUNT(*) AS count FROM messages WHERE content LIKE ?').get(`%${prefix}-%`).count,
      ),
    });
  }
  await catchUp(database);
  const final = finalChecks(database);
  log(
    `concurrency: two importers of ${lines} lines: exits ${rounds.map((round) => `${round.round} ${round.exits.join(', ')}`).join('; ')}, ${final.duplicates.extra} duplicate memories`,
  );
  return {
    lines,
    rounds,
    failures: rounds.reduce((sum, round) => sum + round.failures, 0),
    integrity: final.integrity,
    duplicates: final.duplicates,
    unextracted: final.unextracted,
  };
}

/**
 * `processes` commands opening one database file that does not exist yet, all at once, `rounds` times:
 * each creates and migrates it. Counts the runs that failed.
 */
export async function newFileOpeners({ folder, processes, rounds, log }) {
  const failures = [];
  for (let round = 0; round < rounds; round++) {
    const database = join(folder, `new-file-${round}.db`);
    const runs = await Promise.all(
      Array.from({ length: processes }, () => runMneme(['--db', database, '--create', 'stats'], { timeoutMs: 60_000 })),
    );
    failures.push(
      ...runs.filter((run) => run.code !== 0).map((run) => `exit ${run.signal ?? run.code}: ${firstLine(run.stderr)}`),
    );
  }
  log(`concurrency: ${processes} processes opening a new file at once, ${rounds} times: ${failures.length} failed`);
  return { processes, rounds, runs: processes * rounds, failures };
}
