import type { Command } from 'commander';
import { type CopyReport, copyDatabase } from '../config/copy-database.js';
import { wholeNumberOption } from './cli-arguments.js';
import type { CliIo } from './cli-io.js';
import { createProgressBar, type ProgressBar } from './progress-bar.js';
import { terminalText } from './terminal-text.js';

/** copy: everything of one database into another (SQLite and PostgreSQL either way), resumable, verified by counts. */
export function registerCopyCommands(program: Command, io: CliIo): void {
  program
    .command('copy')
    .description('copy every memory, message, key, watermark and the policy from one database to another')
    .requiredOption('--from <db>', 'the database to copy: a SQLite file or a postgres:// URL')
    .requiredOption(
      '--to <db>',
      'where to copy it: a new SQLite file or PostgreSQL database (or one an interrupted copy left)',
    )
    .addOption(wholeNumberOption('--batch-size <n>', 'rows per transaction (default 500)', 1, 100_000))
    .action(async (options: { from: string; to: string; batchSize?: number }) => {
      const { batchSize } = options;
      const json = program.opts<{ json?: boolean }>().json === true;
      const bars = new Map<string, ProgressBar>();
      let current: ProgressBar | null = null;
      try {
        const report = await copyDatabase({
          from: options.from,
          to: options.to,
          ...(batchSize === undefined ? {} : { batchSize }),
          onProgress: ({ table, done, total }) => {
            let bar = bars.get(table);
            if (!bar) {
              current?.finish();
              bar = createProgressBar(io.stderr, `copying ${table}`);
              bars.set(table, bar);
              current = bar;
            }
            bar.update(done, total);
          },
        });
        (current as ProgressBar | null)?.finish();
        io.stdout(`${json ? JSON.stringify(report, null, 2) : terminalText(formatCopyReport(report))}\n`);
      } catch (error) {
        (current as ProgressBar | null)?.finish();
        throw error;
      }
    });
}

function formatCopyReport(report: CopyReport): string {
  const rows = report.tables.filter((entry) => entry.source > 0);
  const total = report.tables.reduce((sum, entry) => sum + entry.target, 0);
  return [
    `copied ${total} rows from ${report.from} to ${report.to}; every table's count matches:`,
    ...rows.map((entry) => `  ${entry.table}: ${entry.target}`),
  ].join('\n');
}
