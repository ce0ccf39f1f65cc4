// crash: kill -9 of `mneme serve` under HTTP write load, and of `mneme ingest` in the middle of a
// file, at seeded random moments; after each kill the file is opened and checked, and after the last
// one a catch-up run (`mneme ingest -` with nothing to read: it waits for extraction) must leave
// nothing unextracted and nothing twice.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mnemeBinary, runMneme, sleep, spawnNode, startServer } from './child-processes.mjs';
import {
  duplicateMemories,
  integrityProblems,
  lostWrites,
  openDatabase,
  unextractedMessages,
  withDatabase,
} from './database-checks.mjs';
import { between, ingestLines, seededRandom } from './seeded-text.mjs';
import { startWriteLoad } from './write-load.mjs';

/** A run of `mneme ingest -` with empty input: the catch-up pass, then exit. */
export async function catchUp(database) {
  const run = await runMneme(['--db', database, 'ingest', '-', '--no-progress'], { stdin: '', timeoutMs: 120_000 });
  if (run.code !== 0) throw new Error(`the catch-up run failed (${run.signal ?? run.code}): ${run.stderr.trim()}`);
  return run;
}

/** Integrity, duplicates and unextracted messages of a file no process has open. */
export function finalChecks(database) {
  return withDatabase(database, (opened) => ({
    integrity: integrityProblems(opened),
    duplicates: duplicateMemories(opened),
    unextracted: unextractedMessages(opened),
  }));
}

export async function crashServer({ folder, seed, kills, log }) {
  const database = join(folder, 'crash-serve.db');
  const random = seededRandom(seed);
  const moments = Array.from({ length: kills }, () => between(random, 250, 2000));
  const acknowledged = [];
  const lost = [];
  const integrity = [];
  const refused = [];
  for (const [round, moment] of moments.entries()) {
    const server = await startServer(database);
    const load = startWriteLoad(server.url, { seed: seed + round, tag: `crash${round}` });
    await sleep(moment);
    await server.kill();
    await load.stop();
    acknowledged.push(...load.acknowledged);
    refused.push(...load.refused);
    withDatabase(database, (opened) => {
      integrity.push(...integrityProblems(opened).map((problem) => `after kill ${round + 1}: ${problem}`));
      lost.push(...lostWrites(opened, acknowledged));
    });
    log(
      `crash: serve kill ${round + 1}/${kills} at ${moment} ms, ${load.acknowledged.length} writes acknowledged, ${lost.length} lost so far`,
    );
  }
  await catchUp(database);
  const final = finalChecks(database);
  withDatabase(database, (opened) => lost.push(...lostWrites(opened, acknowledged)));
  return {
    kills,
    moments,
    acknowledged: acknowledged.length,
    lost: new Set(lost.map((write) => `${write.kind}:${write.id}`)).size,
    refused: refused.length,
    integrity: [...integrity, ...final.integrity],
    duplicates: final.duplicates,
    unextracted: final.unextracted,
  };
}

/** Which lines of round `prefix` are in the file: present line numbers, and exchanges with one message of two. */
function linesPresent(opened, prefix) {
  const rows = opened
    .prepare(`SELECT role, content FROM messages WHERE content LIKE ?`)
    .all(`%${prefix}-%`)
    .map((row) => ({ role: row.role, line: Number(new RegExp(`${prefix}-(\\d+)`).exec(row.content)?.[1]) }));
  const byLine = new Map();
  for (const row of rows) byLine.set(row.line, [...(byLine.get(row.line) ?? []), row.role]);
  return byLine;
}

/**
 * Resolves `'killed'` once `trigger` is reached, or `'finished'` when the run ends first. A trigger is
 * `{ after: ms }` (a moment), or `{ extracted: n }`: n exchange memories of this round exist in the file
 * (the run is then killed in the middle of extraction).
 */
async function killWhen(run, database, prefix, trigger) {
  const finished = run.exited.then(() => 'finished');
  if ('after' in trigger) {
    const outcome = await Promise.race([finished, sleep(trigger.after).then(() => 'killed')]);
    if (outcome === 'killed') run.child.kill('SIGKILL');
    return outcome;
  }
  let reader = null;
  try {
    for (;;) {
      const outcome = await Promise.race([finished, sleep(20).then(() => 'poll')]);
      if (outcome === 'finished') return outcome;
      try {
        reader ??= existsSync(database) ? openDatabase(database) : null;
        const count = reader
          ?.prepare(`SELECT COUNT(*) AS count FROM memories WHERE category = 'exchange' AND content LIKE ?`)
          .get(`%${prefix}-%`).count;
        if (count >= trigger.extracted) {
          run.child.kill('SIGKILL');
          return 'killed';
        }
      } catch {
        // the file is still being created or migrated: poll again
      }
    }
  } finally {
    reader?.close();
  }
}

/**
 * `mneme ingest` of a new file each round, killed with SIGKILL: on even rounds at a moment (mostly while
 * it appends), on odd rounds once some of the round's messages are extracted (in the middle of
 * extraction). Both are seeded.
 */
export async function crashIngest({ folder, seed, kills, lines, log }) {
  const database = join(folder, 'crash-ingest.db');
  const random = seededRandom(seed + 7);
  const triggers = Array.from({ length: kills }, (_, round) =>
    round % 2 === 0 ? { after: between(random, 100, 2500) } : { extracted: between(random, 20, 400) },
  );
  const integrity = [];
  const rounds = [];
  // The database exists before the first kill: a kill at a moment is about ingest, not about a process
  // killed (on a loaded machine) before it created the file's tables.
  const created = await runMneme(['--db', database, 'init']);
  if (created.code !== 0) throw new Error(`crash: mneme init failed: ${created.stderr}`);
  for (const [round, trigger] of triggers.entries()) {
    const prefix = `ingest${round}`;
    const content = ingestLines(random, { prefix, count: lines, channels: 6 });
    const file = join(folder, `${prefix}.jsonl`);
    writeFileSync(file, `${content.join('\n')}\n`);
    const exchangeLines = new Set(
      content.flatMap((line, index) => ('userMessage' in JSON.parse(line) ? [index + 1] : [])),
    );
    const run = spawnNode([mnemeBinary, '--db', database, 'ingest', '--no-progress', file]);
    const outcome = await killWhen(run, database, prefix, trigger);
    await run.exited;
    withDatabase(database, (opened) => {
      integrity.push(...integrityProblems(opened).map((problem) => `after ingest kill ${round + 1}: ${problem}`));
      const present = linesPresent(opened, prefix);
      const count = present.size;
      const prefixShaped = [...present.keys()].every((line) => line <= count);
      const wholeBatches = count % 500 === 0 || count === lines;
      const tornExchanges = [...exchangeLines].filter((line) => present.has(line) && present.get(line).length !== 2);
      rounds.push({
        trigger,
        killed: outcome === 'killed',
        linesWritten: count,
        partialBatch: prefixShaped && wholeBatches ? 0 : 1,
        tornExchanges: tornExchanges.length,
      });
      const when = 'after' in trigger ? `at ${trigger.after} ms` : `after ${trigger.extracted} exchange memories`;
      log(`crash: ingest kill ${round + 1}/${kills} ${when} (${outcome}), ${count} of ${lines} lines in the file`);
    });
  }
  await catchUp(database);
  const final = finalChecks(database);
  return {
    kills,
    lines,
    triggers,
    rounds,
    killedMidFile: rounds.filter((round) => round.killed && round.linesWritten < lines).length,
    partialWrites: rounds.reduce((sum, round) => sum + round.partialBatch + round.tornExchanges, 0),
    integrity: [...integrity, ...final.integrity],
    duplicates: final.duplicates,
    unextracted: final.unextracted,
  };
}
