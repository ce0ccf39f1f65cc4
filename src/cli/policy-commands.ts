import type { Command } from 'commander';
import { ErrorCode, MnemeError } from '../core/errors.js';
import { type PolicyChange, type PolicyState, settingsToPolicy } from '../core/policy-state.js';
import { presets } from '../core/presets.js';
import { CLI_ACTOR } from '../core/reserved-ids.js';
import type { PolicyVersion } from '../storage/policy-store.js';
import { choiceOption } from './cli-arguments.js';
import type { WithEngine } from './cli-io.js';

/** init, policy show, policy set, policy history: the policy a database runs under. */
export function registerPolicyCommands(program: Command, withEngine: WithEngine): void {
  program
    .command('init')
    .description(`create a database under a preset (${Object.keys(presets).join(', ')}) and settings`)
    .addOption(choiceOption('--preset <name>', 'the preset (default mneme)', Object.keys(presets)))
    // Variadic, as `policy set <key=value...>`: `--set a=1 b=2` and `--set a=1 --set b=2` give both.
    .option(
      '--set <key=value...>',
      'settings on top of the preset, e.g. recall.topK=8 context.wordBudget=200 (several, or --set repeated)',
      [],
    )
    .action(
      withEngine(
        (mneme) => mneme.policy(),
        (state) =>
          `this database runs under the ${state.preset} preset (policy version ${state.version})\n${formatPolicy(state)}`,
        (options: { preset?: string; set: string[] }) => {
          const { preset, ...settings } = parseSettings(options.set);
          if (preset !== undefined && options.preset !== undefined && preset !== options.preset) {
            throw new MnemeError(
              ErrorCode.InvalidInput,
              `--preset ${options.preset} and --set preset=${String(preset)} disagree`,
            );
          }
          return { preset: options.preset ?? (preset as string | undefined), policy: settingsToPolicy(settings) };
        },
      ),
    );

  const policy = program.command('policy').description('the policy this database runs under');
  policy
    .command('show')
    .description('the preset, the settings changed on top of it, and the effective policy')
    .action(withEngine((mneme) => mneme.policy(), formatPolicy));
  policy
    .command('set')
    .description('change settings (or the preset: preset=<name>), validated, kept as a new version')
    .argument('<key=value...>', 'settings by dotted path; values are JSON (8, true, ["decay"]) or plain text')
    .action(
      withEngine(async (mneme, pairs: string[]) => {
        const { preset, ...settings } = parseSettings(pairs);
        return mneme.setPolicy({
          ...(preset === undefined ? {} : { preset: preset as PolicyChange['preset'] }),
          settings,
          actor: CLI_ACTOR,
        });
      }, formatPolicy),
    );
  policy
    .command('history')
    .description('every version of the policy: when, who, what changed')
    .action(withEngine((mneme) => mneme.policyHistory(), formatHistory));
}

/**
 * `key=value` pairs as settings: the value is JSON when it parses as JSON, else the text itself. A key given twice with
 * two values is INVALID_INPUT.
 */
export function parseSettings(pairs: readonly string[]): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) {
      throw new MnemeError(ErrorCode.InvalidInput, `a setting is key=value (e.g. recall.topK=8), not "${pair}"`);
    }
    const text = pair.slice(equals + 1);
    const key = pair.slice(0, equals).trim();
    const value = parseValue(text);
    // Given twice with two values, one of them is a mistake: neither is taken (attack 31c).
    if (Object.hasOwn(settings, key) && JSON.stringify(settings[key]) !== JSON.stringify(value)) {
      throw new MnemeError(
        ErrorCode.InvalidInput,
        `the setting ${key} is given twice (${formatValue(settings[key])}, then ${formatValue(value)}): give it once`,
      );
    }
    settings[key] = value;
  }
  return settings;
}

function formatValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The preset, what is changed, then every effective setting as `path = value`, one a line. */
function formatPolicy(state: PolicyState): string {
  const changed = leaves(state.overrides);
  return [
    `preset: ${state.preset} (${presets[state.preset].from}); policy version ${state.version}`,
    changed.length === 0 ? 'changed settings: none' : `changed settings: ${changed.map(([path]) => path).join(', ')}`,
    ...leaves(state.policy).map(([path, value]) => `  ${path} = ${JSON.stringify(value)}`),
  ].join('\n');
}

function formatHistory(versions: PolicyVersion[]): string {
  return versions
    .map(
      (version) =>
        `v${version.version} ${version.createdAt} ${version.actor ?? '-'} [${version.preset}] ${version.change}`,
    )
    .join('\n');
}

/** Every leaf of a nested settings object as [dotted path, value]; arrays and templates are leaves. */
function leaves(value: unknown, path: string[] = []): Array<[string, unknown]> {
  const isNested =
    typeof value === 'object' && value !== null && !Array.isArray(value) && !('item' in value && 'header' in value);
  if (!isNested) return [[path.join('.'), value]];
  return Object.entries(value).flatMap(([key, inner]) => leaves(inner, [...path, key]));
}
