// The fault suite: runs the built mneme (`dist/cli/mneme.js`) as real processes on 127.0.0.1 and
// measures what its reliability promises rest on (docs/reliability.md):
//
//   crash         kill -9 of `mneme serve` under HTTP write load and of `mneme ingest` mid-file
//   concurrency   a server and CLI processes on one file; two importers of one file at once
//   fuzz          malformed HTTP requests and command lines (corpus + seeded mutations)
//   availability  /api/health during a backlog catch-up, and while another process holds the write lock
//   purge         raw bytes of the database files after a user is purged
//
//   npm run faults                          # build, then node bench/faults.mjs
//   node bench/faults.mjs [--quick] [--write-doc] [--json <file>] [--seed 42] [--parts crash,fuzz] [--keep]
//
// Prints one table (what was measured, what it must be, whether it held); --write-doc puts it in
// docs/reliability.md between the faults markers, --json writes every detail. Exit code 0 when every
// promise held, 1 when one did not, 2 when the suite itself failed. Every loop is bounded; temporary
// folders and child processes are removed, also on failure and on Ctrl-C.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { catchUpAvailability, lockAvailability } from './faults/availability-part.mjs';
import { killEveryChild, mnemeBinary, repositoryRoot } from './faults/child-processes.mjs';
import { mixedWriters, newFileOpeners, twoImporters } from './faults/concurrency-part.mjs';
import { crashIngest, crashServer } from './faults/crash-part.mjs';
import { failureNotes, figureRows, markdownTable, writeIntoDoc } from './faults/fault-report.mjs';
import { fuzzCli, fuzzHttp } from './faults/fuzz-part.mjs';
import { purgeScan } from './faults/purge-part.mjs';

const allParts = ['crash', 'concurrency', 'fuzz', 'availability', 'purge'];
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'write-doc': { type: 'boolean', default: false },
    json: { type: 'string' },
    seed: { type: 'string', default: '42' },
    parts: { type: 'string', default: allParts.join(',') },
    keep: { type: 'boolean', default: false },
  },
});
const quick = values.quick;
const seed = Number(values.seed);
const parts = values.parts.split(',').map((part) => part.trim());
const unknown = parts.filter((part) => !allParts.includes(part));
if (unknown.length > 0 || !Number.isInteger(seed)) {
  console.error(
    `usage: node bench/faults.mjs [--quick] [--write-doc] [--json <file>] [--seed <integer>] [--parts ${allParts.join(',')}]`,
  );
  process.exit(2);
}
if (!existsSync(mnemeBinary)) {
  console.error(`${mnemeBinary} is missing: run npm run build first (npm run faults builds, then runs this)`);
  process.exit(2);
}

/** How much each part does; --quick is what test/faults.test.ts runs. */
const settings = quick
  ? {
      serveKills: 2,
      ingestKills: 2,
      ingestLines: 1500,
      cliAdds: 2,
      mixedLines: 200,
      importerLines: 300,
      backlog: 1000,
      shortLockMs: 3000,
      longLockMs: 6000,
      newFileRounds: 3,
      healthIntervalMs: 50,
      lockWriteIntervalMs: 250,
      purgeWords: 12,
    }
  : {
      serveKills: 8,
      ingestKills: 4,
      ingestLines: 1500,
      cliAdds: 6,
      mixedLines: 800,
      importerLines: 800,
      backlog: 3000,
      shortLockMs: 4000,
      longLockMs: 8000,
      newFileRounds: 5,
      healthIntervalMs: 50,
      lockWriteIntervalMs: 250,
      purgeWords: 24,
    };

const folder = mkdtempSync(join(tmpdir(), 'mneme-faults-'));
const removeFolder = () => {
  if (!values.keep) rmSync(folder, { recursive: true, force: true });
};
process.on('exit', removeFolder);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killEveryChild();
    removeFolder();
    process.exit(2);
  });
}
// A bound on the whole run, whatever hangs: 10 minutes (a default run takes about 3).
const watchdog = setTimeout(() => {
  console.error('the fault suite ran for 10 minutes; stopping');
  killEveryChild();
  removeFolder();
  process.exit(2);
}, 600_000);
watchdog.unref();

const log = (text) => console.error(text);
if (values.keep) log(`keeping the temporary folder ${folder}`);
const results = { settings: { quick, seed, ...settings }, errors: {} };
const started = performance.now();

/** Runs one part; an error of the suite itself becomes a failing row instead of stopping the run. */
async function part(name, work) {
  if (!parts.includes(name)) return;
  const partStarted = performance.now();
  try {
    results[name] = await work();
  } catch (error) {
    results.errors[name] = error instanceof Error ? error.message : String(error);
    log(`${name}: ${results.errors[name]}`);
    killEveryChild();
  }
  log(`${name}: ${((performance.now() - partStarted) / 1000).toFixed(1)} s`);
}

try {
  await part('crash', async () => ({
    serve: await crashServer({ folder, seed, kills: settings.serveKills, log }),
    ingest: await crashIngest({ folder, seed, kills: settings.ingestKills, lines: settings.ingestLines, log }),
  }));
  await part('concurrency', async () => ({
    mixed: await mixedWriters({ folder, seed, adds: settings.cliAdds, lines: settings.mixedLines, log }),
    importers: await twoImporters({ folder, seed, lines: settings.importerLines, log }),
    newFile: await newFileOpeners({ folder, processes: 4, rounds: settings.newFileRounds, log }),
  }));
  await part('fuzz', async () => ({
    http: await fuzzHttp({ folder, seed, quick, log }),
    cli: await fuzzCli({ folder, quick, log }),
  }));
  await part('availability', async () => ({
    catchUp: await catchUpAvailability({
      folder,
      backlog: settings.backlog,
      intervalMs: settings.healthIntervalMs,
      timeoutMs: 10_000,
      maxSeconds: 120,
      log,
    }),
    lock: await lockAvailability({
      folder,
      shortHoldMs: settings.shortLockMs,
      longHoldMs: settings.longLockMs,
      intervalMs: settings.healthIntervalMs,
      writeIntervalMs: settings.lockWriteIntervalMs,
      timeoutMs: 10_000,
      log,
    }),
  }));
  await part('purge', () => purgeScan({ folder, seed, wordCount: settings.purgeWords, log }));
} finally {
  killEveryChild();
  removeFolder();
}

results.seconds = Math.round((performance.now() - started) / 100) / 10;
const rows = figureRows(results);
results.rows = rows;
const failed = rows.filter((row) => row.held === 'FAILS');
const table = markdownTable(rows);
const notes = failureNotes(results);
console.log(table);
if (notes.length > 0) console.log(`\nWhat failed, examples:\n${notes.join('\n')}`);
console.log(`\n${failed.length} of ${rows.filter((row) => row.held).length} promises failed; ${results.seconds} s`);

if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
if (values['write-doc']) {
  const command = `node bench/faults.mjs${quick ? ' --quick' : ''} --write-doc${seed === 42 ? '' : ` --seed ${seed}`}${values.parts === allParts.join(',') ? '' : ` --parts ${values.parts}`}`;
  const commit = gitDescription();
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GB RAM, ${process.platform} ${process.arch}, Node ${process.version}`;
  const block = [
    `Command: \`${command}\` (what \`npm run faults -- --write-doc\` runs after building), seed ${seed}${quick ? ', quick settings' : ''}.`,
    `Measured on ${new Date().toISOString().slice(0, 10)}, ${commit}; ${machine}. The run took ${results.seconds} s.`,
    '',
    table,
    ...(notes.length > 0 ? ['', 'What failed, examples (the `--json` file has every case):', '', ...notes] : []),
  ].join('\n');
  writeIntoDoc(join(repositoryRoot, 'docs', 'reliability.md'), block);
  log('wrote the figures into docs/reliability.md');
}
clearTimeout(watchdog);
process.exitCode = Object.keys(results.errors).length > 0 ? 2 : failed.length > 0 ? 1 : 0;

/** The commit the run measured, and whether the working tree differed from it. */
function gitDescription() {
  try {
    const run = (...gitArguments) =>
      execFileSync('git', gitArguments, { cwd: repositoryRoot, encoding: 'utf8' }).trim();
    const dirty = run('status', '--porcelain', '--untracked-files=no', '--', 'src') !== '';
    return `commit ${run('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes in src/' : ''}`;
  } catch {
    return 'commit unknown';
  }
}
