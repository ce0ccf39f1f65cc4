import { describe, expect, it } from 'vitest';
import { runCli } from '../../test/cli-harness.js';

/** README, Presets: `mneme init --preset salience [--set context.wordBudget=200 ...]`. */
describe('mneme init --set', () => {
  it('takes several settings after one --set, as policy set takes them, and --set repeated too', async () => {
    for (const argv of [
      ['init', '--preset', 'salience', '--set', 'recall.topK=8', 'context.wordBudget=200'],
      ['init', '--set', 'recall.topK=8', '--set', 'context.wordBudget=200', '--preset', 'salience'],
    ]) {
      const run = await runCli(':memory:', ['--json', ...argv]);
      expect(run.stderr, argv.join(' ')).toBe('');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        preset: 'salience',
        overrides: { recall: { topK: 8 }, context: { wordBudget: 200 } },
      });
    }
  });

  it('refuses --set without a setting (exit 2)', async () => {
    const run = await runCli(':memory:', ['init', '--set']);
    expect(run).toEqual({ code: 2, stdout: '', stderr: "mneme: option '--set <key=value...>' argument missing\n" });
  });
});
