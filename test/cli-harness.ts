import { main } from '../src/cli/cli-main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the `mneme` CLI in-process against `database`; no embedding model unless `env` names one. The
 * database is created when missing (`--create`) unless `create: false`: the tests of the refusal pass that.
 */
export async function runCli(
  database: string,
  argv: readonly string[],
  options: { env?: NodeJS.ProcessEnv; stdin?: NodeJS.ReadableStream; create?: boolean } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(['--db', database, ...(options.create === false ? [] : ['--create']), ...argv], {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: options.env ?? { MNEME_EMBEDDER: 'none' },
    ...(options.stdin ? { stdin: options.stdin } : {}),
  });
  return { code, stdout, stderr };
}
