import { cutoffs, type EvaluationResult, type ScoreSummary } from './locomo-metrics.js';
import type { LocomoReport } from './run-locomo.js';

/** The evaluation as text: one table per figure (recall@k, any-hit@k, context words@k), mneme beside the baseline. */
export function formatLocomoTable(report: LocomoReport, machine: string): string {
  const { mneme, baseline, mode, preset, askAfterDays, minRelevance } = report.figures;
  const when =
    mode === 'live'
      ? `live: each session at its own time, maintenance between sessions, asked ${askAfterDays ? `${askAfterDays} days after` : 'at the end of'} the last session`
      : 'static: every turn ingested, then asked';
  const lines = [
    `mneme eval locomo: ${report.conversations.length} conversations, ${mneme.overall.questions} questions in categories 1-4, ${mneme.adversarial.questions} adversarial; ${machine}`,
    `mneme: preset ${preset}, embedder ${report.settings.embedder}, chat ${report.settings.chat}; ${when}${minRelevance ? `; only hits of calibrated relevance >= ${minRelevance}` : ''}`,
    'baseline: plain FTS5 over raw turns (porter, words OR-ed, stopwords dropped)',
  ];
  const sections: Array<[string, keyof Pick<ScoreSummary, 'recallAt' | 'anyAt' | 'contextWordsAt'>, number]> = [
    ['evidence recall@k', 'recallAt', 3],
    ['any-hit@k', 'anyAt', 3],
    ['words in the top k', 'contextWordsAt', 0],
  ];
  for (const [title, field, digits] of sections) {
    const header = ['', 'questions', ...cutoffs.flatMap((k) => [`mneme@${k}`, `base@${k}`])];
    const rows = groups(mneme, baseline).map(([name, ours, theirs]) => [
      name,
      String(ours.questions),
      ...cutoffs.flatMap((k) => [ours[field][`${k}`].toFixed(digits), theirs[field][`${k}`].toFixed(digits)]),
    ]);
    lines.push('', title, ...table(header, rows));
  }
  lines.push('', 'memories in mneme at question time (created: every memory of the run; decayed: archived by decay)');
  lines.push(
    ...table(
      ['conversation', 'turns', 'questions', 'skipped', 'created', 'decayed', 'active', 'active by category'],
      report.conversations.map((info) => [
        info.sampleId,
        String(info.turns),
        String(info.questions),
        String(info.skippedQuestions),
        String(info.createdMemories),
        String(info.decayedMemories),
        String(Object.values(info.memories).reduce((total, count) => total + count, 0)),
        Object.entries(info.memories)
          .map(([category, count]) => `${category} ${count}`)
          .join(', '),
      ]),
    ),
  );
  const through = Object.entries(report.foundThrough)
    .map(([category, share]) => `${category} ${(share * 100).toFixed(1)}%`)
    .join(', ');
  lines.push(
    `share of the memories created that decay archived by question time: ${(mneme.decayedShare * 100).toFixed(1)}%`,
  );
  lines.push('', `evidence mneme found in its top 10, credited through: ${through || 'nothing found'}`);
  return lines.join('\n');
}

function groups(
  mneme: EvaluationResult,
  baseline: EvaluationResult,
): Array<[name: string, ours: ScoreSummary, theirs: ScoreSummary]> {
  return [
    ['overall (1-4)', mneme.overall, baseline.overall],
    ...(Object.keys(mneme.categories) as Array<keyof EvaluationResult['categories']>).map(
      (name): [string, ScoreSummary, ScoreSummary] => [name, mneme.categories[name], baseline.categories[name]],
    ),
    ['adversarial (5)', mneme.adversarial, baseline.adversarial],
  ];
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const render = (row: string[]) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [render(header), render(widths.map((width) => '-'.repeat(width))), ...rows.map(render)];
}
