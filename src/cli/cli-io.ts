import type { Mneme } from '../core/mneme.js';
import type { PolicyRequest } from '../core/policy-state.js';

/** Where the CLI writes; tests pass their own to run `main` in-process. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Read by `mneme ingest -`; process.stdin when left out. */
  stdin?: NodeJS.ReadableStream;
  /** Where `mneme export` streams (with back-pressure); `stdout` when left out. */
  stdoutStream?: NodeJS.WritableStream;
}

/**
 * Wraps a command's work: `run` gets an open engine and the command's arguments, `print` turns
 * its result into text (with --json the result is printed as JSON instead). `policyOf` gives the
 * preset and settings to open the database with (`mneme init`); other commands open it under its own.
 */
export type WithEngine = <Arguments extends unknown[], Result>(
  run: (mneme: Mneme, ...commandArguments: Arguments) => Promise<Result>,
  print: (result: Result) => string,
  policyOf?: (...commandArguments: Arguments) => PolicyRequest,
) => (...commandArguments: Arguments) => Promise<void>;
