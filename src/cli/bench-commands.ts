import { accessSync, constants, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { formatBenchTable } from '../bench/bench-report.js';
import { formatLocomoTable } from '../bench/locomo/locomo-report.js';
import { MAX_ASK_AFTER_DAYS, runLocomo } from '../bench/locomo/run-locomo.js';
import { isBenchPgliteSetting, isBenchServerUrl } from '../bench/postgres-bench-database.js';
import { runBench } from '../bench/run-bench.js';
import { loadConfig } from '../config/load-config.js';
import { ErrorCode, errorMessage, MnemeError } from '../core/errors.js';
import { DEFAULT_PRESET, presetNames } from '../core/presets.js';
import { choiceOption, decimalNumberOption, wholeNumberOption } from './cli-arguments.js';
import { createProgressBar, type ProgressBar, progressMode } from './progress-bar.js';

interface BenchOptions {
  sizes?: number[];
  seed?: number;
  queries?: number;
  messages?: number;
  quick?: boolean;
  json?: string | boolean;
  progress?: boolean;
}

interface EvalOptions {
  data: string;
  conversations?: string;
  embedder?: string;
  chat?: string;
  preset?: string;
  live?: boolean;
  askAfter?: number;
  minRelevance?: number;
  store?: 'sqlite' | 'pglite';
  json?: string | boolean;
  questions?: string;
  progress?: boolean;
}

/** Where the measuring commands write. */
export interface BenchIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Where provider URLs and keys are read from when `--embedder` or `--chat` names a provider. */
  env: NodeJS.ProcessEnv;
}

const DEFAULT_SIZES = [10_000, 100_000];
const QUICK_SIZES = [1_000];

/** `mneme bench` and `mneme eval locomo`: the instruments of docs/performance.md and docs/evaluation.md. */
export function registerBenchCommands(program: Command, io: BenchIo): void {
  /**
   * A bar per step; the runners sample their updates, so a finished step is drawn whole. `--progress` draws
   * it in place even when stderr is not a terminal, `--no-progress` not at all (as for ingest and reembed).
   */
  const progressBars =
    (option: boolean | undefined) =>
    (label: string, total: number): Pick<ProgressBar, 'update' | 'finish'> => {
      const mode = progressMode(option);
      if (mode.off) return { update: () => {}, finish: () => {} };
      const bar = createProgressBar({ write: io.stderr, label, total, interactive: mode.interactive });
      return {
        update: (done) => bar.update(done),
        finish() {
          bar.update(total);
          bar.finish();
        },
      };
    };
  const progressHelp = 'draw the progress bars even when stderr is not a terminal';
  const noProgressHelp = 'no progress bars (default: drawn on a terminal, else one final line each on stderr)';

  program
    .command('bench')
    .description(
      'measure recall latency, throughput and size beside a naive sqlite-vec + FTS5 baseline (with --db postgres://..., mneme on that server; with --db pglite:, on PGlite)',
    )
    .addOption(new Option('--sizes <list>', 'store sizes, comma-separated (default 10000,100000)').argParser(sizeList))
    .addOption(wholeNumberOption('--seed <n>', 'seed of the synthetic corpus (default 42)', 0))
    .addOption(wholeNumberOption('--queries <n>', 'recalls timed per leg and viewer (default 200; 30 with --quick)', 1))
    .addOption(wholeNumberOption('--messages <n>', 'messages ingested per size (default 1000; 100 with --quick)', 0))
    .option('--quick', 'a run under a minute: 1,000 memories unless --sizes is given, fewer recalls and messages')
    .option('--json <file>', 'also write the figures as JSON to <file> (--json alone: JSON on stdout)')
    .option('--progress', progressHelp)
    .option('--no-progress', noProgressHelp)
    .allowExcessArguments()
    .action(async (options: BenchOptions, command: Command) => {
      const json = jsonTarget(command, options.json);
      if (json !== null && json !== 'stdout') checkWritable(json);
      const quick = options.quick === true;
      const sizes = options.sizes ?? (quick ? QUICK_SIZES : DEFAULT_SIZES);
      const seed = options.seed ?? 42;
      const queries = options.queries ?? (quick ? 30 : 200);
      const messages = options.messages ?? (quick ? 100 : 1_000);
      const directory = mkdtempSync(join(tmpdir(), 'mneme-bench-'));
      try {
        const log = (line: string) => io.stderr(`${line}\n`);
        // A PostgreSQL URL as the database: mneme is measured there; a pglite: setting: on PGlite folders
        // of its own (a file path is not used: the bench builds its own stores).
        const database = program.opts<{ db?: string }>().db;
        const server = database !== undefined && isBenchServerUrl(database) ? database : undefined;
        const pglite = database !== undefined && isBenchPgliteSetting(database);
        const report = await runBench({
          sizes,
          seed,
          queries,
          messages,
          directory,
          progress: progressBars(options.progress),
          log,
          ...(server ? { server } : {}),
          ...(pglite ? { pglite } : {}),
        });
        const table = formatBenchTable(report, { seed, queries, messages, machine: machine() });
        writeResult(io, json, report, table);
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });

  program
    .command('eval')
    .description('evaluate retrieval quality on a public benchmark')
    .command('locomo')
    .description('evidence recall on LoCoMo conversations, through ingest and recall, beside plain FTS5 over turns')
    .requiredOption('--data <file>', 'the LoCoMo JSON file (a list of samples)')
    .option('--conversations <ids>', 'only these sample ids, comma-separated (e.g. conv-26,conv-30)')
    .option('--embedder <setting>', "mneme's embedding model: none (default, offline), auto, ollama[:model], ...")
    .option('--chat <setting>', "mneme's chat model for extraction and episodes: none (default, offline), auto, ...")
    .addOption(choiceOption('--preset <name>', `the preset of the databases (default ${DEFAULT_PRESET})`, presetNames))
    .addOption(
      choiceOption(
        '--store <kind>',
        "each conversation's database: sqlite (default) or pglite (PostgreSQL in-process, pgvector)",
        ['sqlite', 'pglite'],
      ),
    )
    .option('--live', 'replay each conversation on its own clock, maintenance (decay) between sessions')
    .addOption(
      decimalNumberOption(
        '--ask-after <days>',
        'with --live: ask the questions this many days after the last session (default 0)',
        0,
        MAX_ASK_AFTER_DAYS,
      ),
    )
    .addOption(
      decimalNumberOption(
        '--min-relevance <t>',
        'score only hits of at least this calibrated relevance, as context keeps them',
        0,
        1,
      ),
    )
    .option('--json <file>', 'also write the figures as JSON to <file> (--json alone: JSON on stdout)')
    .option('--questions <file>', "write each question of mneme's run as JSON to <file>: evidence ranks, the top 10")
    .option('--progress', progressHelp)
    .option('--no-progress', noProgressHelp)
    .allowExcessArguments()
    .action(async (options: EvalOptions, command: Command) => {
      const json = jsonTarget(command, options.json);
      if (json !== null && json !== 'stdout') checkWritable(json);
      if (typeof options.questions === 'string') checkWritable(options.questions);
      const preset = options.preset ?? DEFAULT_PRESET;
      const live = options.live === true;
      const askAfterDays = options.askAfter;
      if (askAfterDays !== undefined && !live) {
        throw new MnemeError(ErrorCode.InvalidInput, '--ask-after needs --live: a static run asks with no time passed');
      }
      const conversations =
        typeof options.conversations === 'string'
          ? options.conversations
              .split(',')
              .map((id) => id.trim())
              .filter((id) => id.length > 0)
          : undefined;
      const directory = mkdtempSync(join(tmpdir(), 'mneme-eval-'));
      try {
        const report = await runLocomo({
          dataPath: String(options.data),
          ...(conversations ? { conversations } : {}),
          directory,
          progress: progressBars(options.progress),
          embedder: typeof options.embedder === 'string' ? options.embedder : 'none',
          chat: typeof options.chat === 'string' ? options.chat : 'none',
          providers: loadConfig(io.env).providers,
          preset,
          mode: live ? 'live' : 'static',
          store: options.store ?? 'sqlite',
          ...(askAfterDays === undefined ? {} : { askAfterDays }),
          ...(options.minRelevance === undefined ? {} : { minRelevance: options.minRelevance }),
        });
        if (typeof options.questions === 'string') {
          writeFile(options.questions, `${JSON.stringify(report.questions, null, 1)}\n`);
        }
        writeResult(io, json, report.figures, formatLocomoTable(report, machine()));
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });
}

/**
 * Where --json sends the figures. The program's own `--json` flag takes the word `--json` wherever
 * it appears, so `bench --json out.json` arrives as the flag plus an extra argument; `--json=out.json`
 * reaches the command's option. `stdout` when the flag came without a file.
 */
function jsonTarget(command: Command, own: string | boolean | undefined): string | 'stdout' | null {
  if (typeof own === 'string') return own;
  const globalJson = command.optsWithGlobals<{ json?: unknown }>().json === true;
  const [file, ...rest] = command.args;
  if (rest.length > 0 || (file !== undefined && !globalJson)) {
    throw new MnemeError(ErrorCode.InvalidInput, `unexpected argument ${JSON.stringify(rest[0] ?? file)}`);
  }
  if (globalJson) return file ?? 'stdout';
  return null;
}

function writeResult(io: BenchIo, json: string | 'stdout' | null, figures: unknown, table: string): void {
  const text = `${JSON.stringify(figures, null, 2)}\n`;
  if (json === 'stdout') {
    io.stdout(text);
    return;
  }
  if (json !== null) writeFile(json, text);
  io.stdout(`${table}\n`);
}

/** Why a file cannot be written, in words. */
function cannotWrite(file: string, error: unknown): MnemeError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const reason =
    code === 'ENOENT'
      ? 'its folder does not exist'
      : code === 'EISDIR'
        ? 'it is a folder'
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? 'permission denied'
          : errorMessage(error);
  return new MnemeError(ErrorCode.InvalidInput, `cannot write ${file}: ${reason}`, { cause: error });
}

/** Refuses, before a run that may take hours, a file its figures could not be written to. */
function checkWritable(file: string): void {
  try {
    if (existsSync(file)) {
      if (statSync(file).isDirectory()) throw Object.assign(new Error('a folder'), { code: 'EISDIR' });
      accessSync(file, constants.W_OK);
    } else {
      accessSync(dirname(resolve(file)), constants.W_OK);
    }
  } catch (error) {
    throw cannotWrite(file, error);
  }
}

function writeFile(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (error) {
    throw cannotWrite(file, error);
  }
}

/** `--sizes 10000,100_000`: whole numbers from 1 to 10,000,000. */
function sizeList(value: string): number[] {
  const sizes = value.split(',').map((part) => Number(part.trim().replace(/_/g, '')));
  if (sizes.some((size) => !Number.isInteger(size) || size < 1 || size > 10_000_000)) {
    throw new InvalidArgumentError('expected whole numbers from 1 to 10000000, comma-separated, e.g. 10000,100000');
  }
  return sizes;
}

/** `2 cores (model), Node v20.x, linux x64`: printed with every figure. */
function machine(): string {
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${availableParallelism()} cores (${model}), Node ${process.version}, ${process.platform} ${process.arch}`;
}
