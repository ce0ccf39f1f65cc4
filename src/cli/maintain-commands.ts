import type { Command } from 'commander';
import type { MaintenanceReport } from '../core/maintenance/maintain.js';
import { maintenanceTasks } from '../core/maintenance/maintenance-task.js';
import { choiceOption, defined } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

/** maintain. */
export function registerMaintainCommands(program: Command, withEngine: WithEngine): void {
  program
    .command('maintain')
    .description('run background maintenance now: decay, episodes, consolidation, links, dream')
    .addOption(choiceOption('--task <task>', 'which task (default all)', [...maintenanceTasks, 'all']))
    .option('--now <time>', 'run as of this ISO 8601 time (default: now)')
    .action(
      withEngine(
        (mneme, options: { task?: string; now?: string }) =>
          mneme.maintain(defined({ tasks: options.task, now: options.now }) as Parameters<typeof mneme.maintain>[0]),
        formatMaintenanceReport,
      ),
    );
}

/** One line per task that ran: what it counted, or why it was skipped. */
export function formatMaintenanceReport(report: MaintenanceReport): string {
  const line = (name: string, skipped: string | null, counts: string) =>
    `${name}: ${skipped === null ? counts : `skipped (${skipped})`}`;
  const lines = [`maintenance at ${report.now}`];
  const { decay, episodes, consolidate, link, dream } = report;
  if (decay) {
    lines.push(
      line(
        `decay (${decay.policy})`,
        decay.skipped,
        `${decay.checked} checked, ${decay.decayed} decayed, ${decay.archived} archived`,
      ),
    );
  }
  if (episodes) {
    lines.push(
      line(
        'episodes',
        episodes.skipped,
        `${episodes.episodes} episodes from ${episodes.messages} messages in ${episodes.channels} channels`,
      ),
    );
  }
  if (consolidate) {
    lines.push(
      line(
        'consolidate',
        consolidate.skipped,
        `${consolidate.checked} checked, ${consolidate.merged} merged into ${consolidate.clusters}`,
      ),
    );
  }
  if (link) {
    const counts = `${link.checked} checked, ${link.created} links created, ${link.removed} removed`;
    lines.push(link.skipped === null ? `link: ${counts}` : `link: ${counts} (${link.skipped})`);
  }
  if (dream) lines.push(line('dream', dream.skipped, `${dream.insights} insights about ${dream.owners} owners`));
  return lines.join('\n');
}
