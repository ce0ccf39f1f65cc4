import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { createMneme } from '../config/create-mneme.js';
import type { EnvironmentConfig } from '../config/load-config.js';
import { describeDatabase, localDatabasePath } from '../config/open-storage.js';
import { diagnoseProviders, type ProviderReport } from '../config/provider-checks.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { ReembedProgress, VectorStatus } from '../core/reembed.js';
import { accessByOthers } from '../storage/make-folders.js';
import { wholeNumberOption } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';
import { createProgressBar, progressMode } from './progress-bar.js';
import { terminalText } from './terminal-text.js';

/** What `mneme doctor` reports. */
export interface DoctorReport {
  embedder: ProviderReport;
  chat: ProviderReport;
  /**
   * The database's vector state and, for a local store other accounts of the machine can read, a sentence saying so
   * (`readableByOthers`, null when they cannot), and what opening it warned of (`warnings`: a PostgreSQL database
   * whose full text lowers no letter outside ASCII, ADR 49), each with what to do; null when the file does not exist
   * yet.
   */
  database: { path: string; vectors: VectorStatus; readableByOthers: string | null; warnings: string[] } | null;
}

/** doctor (which providers are active and why, each checked with a real call) and reembed (with a progress bar). */
export function registerDoctorCommands(
  program: Command,
  withEngine: WithEngine,
  io: CliIo,
  config: EnvironmentConfig,
): void {
  program
    .command('doctor')
    .description('show which model providers are active and why, and check each with a real call')
    .action(async () => {
      const globals = program.opts<{ db?: string; json?: boolean }>();
      const path = globals.db ?? config.databasePath;
      const providers = await diagnoseProviders(config.providers);
      let database: DoctorReport['database'] = null;
      const local = localDatabasePath(path);
      if (local === null || existsSync(local.path)) {
        // What the faces that serve print when they open the database (`createMneme`'s warnings) is listed, not printed.
        const warnings: string[] = [];
        const logger = { warn: (line: string) => warnings.push(line) };
        const mneme = await createMneme({ path, embedder: 'none', backfill: false, logger });
        try {
          database = {
            path: describeDatabase(path),
            vectors: await mneme.vectorStatus(),
            readableByOthers: local && accessByOthers(local.path, local.kind),
            warnings,
          };
        } finally {
          await mneme.close();
        }
      }
      const report: DoctorReport = { ...providers, database };
      io.stdout(`${globals.json ? JSON.stringify(report, null, 2) : terminalText(formatDoctorReport(report))}\n`);
      const failed = [report.embedder, report.chat].filter((provider) => provider.check && !provider.check.ok);
      if (failed.length > 0) {
        throw new MnemeError(
          ErrorCode.ModelFailed,
          `doctor found a problem with ${failed.map((provider) => provider.variable).join(' and ')}; see above`,
        );
      }
    });

  program
    .command('reembed')
    .description('give every memory without a vector of the current embedding model one (resumable)')
    .addOption(wholeNumberOption('--batch-size <n>', 'memories per model call (default 64)', 1))
    .option('--progress', 'draw the progress bar even when stderr is not a terminal')
    .option('--no-progress', 'no progress bar (default: drawn on a terminal, else one final line on stderr)')
    .action(
      withEngine(async (mneme, options: { batchSize?: number; progress?: boolean }) => {
        const mode = progressMode(options.progress);
        const bar = mode.off ? null : createProgressBar(io.stderr, 're-embedding', { interactive: mode.interactive });
        const { batchSize } = options;
        try {
          const result = await mneme.reembed({
            ...(batchSize === undefined ? {} : { batchSize }),
            onProgress: (progress) => bar?.update(progress.done, progress.total),
          });
          bar?.finish();
          return result;
        } finally {
          bar?.interrupt();
        }
      }, formatReembed),
    );
}

function formatReembed(progress: ReembedProgress): string {
  if (progress.total === 0) return `every memory has a vector of ${progress.model}`;
  const failed = progress.failed > 0 ? `; ${progress.failed} failed and stay lexical-only until the next run` : '';
  return `re-embedded ${progress.embedded} of ${progress.total} memories with ${progress.model}${failed}`;
}

/** The report as text: one block per provider, then the database's vectors. */
export function formatDoctorReport(report: DoctorReport): string {
  const lines: string[] = [];
  for (const [name, provider] of [
    ['embedder', report.embedder],
    ['chat', report.chat],
  ] as const) {
    const dimensions = provider.dimensions ? ` (${provider.dimensions} dimensions)` : '';
    lines.push(`${name}: ${provider.model ?? 'none'}${dimensions}`);
    lines.push(`  setting: ${provider.variable}=${provider.setting}`);
    lines.push(`  why: ${provider.reason}`);
    if (provider.check) lines.push(`  check: ${provider.check.ok ? 'ok' : 'FAILED'}: ${provider.check.detail}`);
  }
  if (report.database) {
    const { path, vectors, readableByOthers, warnings } = report.database;
    const index = vectors.index ? `${vectors.index.model} (${vectors.index.dimensions} dimensions)` : 'no model yet';
    lines.push(`database: ${path}`);
    lines.push(`  vector index: ${index}`);
    if (!vectors.search.available) lines.push(`  vector search: unavailable: ${vectors.search.reason}`);
    const model = report.embedder.model;
    if (model && vectors.index && vectors.index.model !== model) {
      lines.push(
        `  the index holds ${vectors.index.model}: using ${model} drops those vectors; run mneme reembed then`,
      );
    } else if (vectors.missing > 0 && (vectors.index || model)) {
      lines.push(`  ${vectors.missing} active memories have no vector yet: run mneme reembed`);
    } else if (vectors.index) {
      lines.push('  every active memory has a vector');
    } else {
      lines.push('  no vectors: lexical search only');
    }
    if (readableByOthers) lines.push(`  WARNING: ${readableByOthers}`);
    for (const warning of warnings) lines.push(`  WARNING: ${warning}`);
  } else {
    lines.push('database: not created yet');
  }
  return lines.join('\n');
}
