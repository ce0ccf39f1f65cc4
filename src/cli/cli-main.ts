import { accessSync, constants, mkdirSync, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import { createMneme } from '../config/create-mneme.js';
import { loadConfig } from '../config/load-config.js';
import type { Principal } from '../core/access.js';
import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../core/errors.js';
import { parseInput, UserIdSchema } from '../core/schemas.js';
import { registerBenchCommands } from './bench-commands.js';
import { registerChannelCommands } from './channel-commands.js';
import { defined } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';
import { registerDoctorCommands } from './doctor-commands.js';
import { registerIngestCommands } from './ingest-commands.js';
import { registerMaintainCommands } from './maintain-commands.js';
import { registerMemoryCommands } from './memory-commands.js';
import { registerPolicyCommands } from './policy-commands.js';
import { registerSearchCommands } from './search-commands.js';
import { registerServeCommands } from './serve-commands.js';
import { registerTransferCommands } from './transfer-commands.js';
import { registerTurnsCommands } from './turns-commands.js';

/** Exit code for each error code; a new code does not compile until it is mapped here. */
const exitCodes: Record<ErrorCode, number> = {
  [ErrorCode.InvalidInput]: 2,
  [ErrorCode.NotFound]: 3,
  [ErrorCode.Conflict]: 4,
  [ErrorCode.Forbidden]: 5,
  [ErrorCode.StoreBusy]: 6,
  [ErrorCode.StoreFailed]: 7,
  [ErrorCode.StoreIncompatible]: 7,
  [ErrorCode.ModelFailed]: 8,
  [ErrorCode.ConfigInvalid]: 9,
};

/** Commands that never open the database; `doctor` opens it only when the file exists. */
const withoutDatabase = new Set(['bench', 'eval', 'help']);

interface GlobalOptions {
  db?: string;
  json?: boolean;
  as?: string;
}

/** Runs the `mneme` command line with `argv` (without `node` and the script) and returns the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const config = loadConfig(io.env);
  const program = new Command('mneme')
    .description('Long-term memory for conversational AI agents.')
    .option('--db <path>', 'database file (MNEME_DB, else ./data/mneme.db)')
    .option('--json', 'print JSON for scripts')
    .option('--as <user>', "act as this user, with a user key's rights (ADR 5), instead of as the administrator")
    .exitOverride()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(text),
    });

  /** Opens the engine for one command, runs it, prints its result (or JSON with --json), closes the engine. */
  const withEngine: WithEngine =
    (run, print, policyOf) =>
    async (...commandArguments) => {
      const globals = program.opts<GlobalOptions>();
      const path = globals.db ?? config.databasePath;
      // Models come from the environment (MNEME_EMBEDDER defaults to auto). No background re-embed in a
      // short command (`mneme reembed` does it); warnings go to stderr, notices are not printed.
      const mneme = await createMneme({
        path,
        embedder: config.providers.embedder,
        chat: config.providers.chat,
        providers: config.providers,
        backfill: false,
        logger: { warn: (message) => io.stderr(`mneme: ${message}\n`) },
        ...defined(policyOf?.(...commandArguments) ?? {}),
      }).catch((error: unknown) => {
        throw isMnemeError(error)
          ? error
          : new MnemeError(ErrorCode.StoreFailed, `cannot open the database at ${path}: ${errorMessage(error)}`, {
              cause: error,
            });
      });
      try {
        const principal = globals.as === undefined ? null : userPrincipal(globals.as);
        const result = await run(principal ? mneme.as(principal) : mneme, ...commandArguments);
        // A command that printed its own output (`mneme export` to stdout) returns nothing more to print.
        if (result !== undefined) io.stdout(`${globals.json ? JSON.stringify(result, null, 2) : print(result)}\n`);
      } finally {
        await mneme.close();
      }
    };

  program.hook('preAction', (_program, command) => {
    let top = command;
    while (top.parent && top.parent !== program) top = top.parent;
    if (withoutDatabase.has(top.name())) return;
    if (top.name() === 'init' && program.opts<GlobalOptions>().as !== undefined) {
      throw new MnemeError(
        ErrorCode.Forbidden,
        'creating a database under a preset needs an administrator; leave out --as',
      );
    }
    checkDatabasePath(program.opts<GlobalOptions>().db ?? config.databasePath, top.name() !== 'doctor');
  });

  registerPolicyCommands(program, withEngine);
  registerMemoryCommands(program, withEngine);
  registerChannelCommands(program, withEngine);
  registerIngestCommands(program, withEngine, io);
  registerTurnsCommands(program, withEngine);
  registerSearchCommands(program, withEngine);
  registerMaintainCommands(program, withEngine);
  registerDoctorCommands(program, withEngine, io, config);
  registerBenchCommands(program, io);
  registerServeCommands(program, withEngine, io, config);
  registerTransferCommands(program, withEngine, io);

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (isMnemeError(error)) {
      io.stderr(`mneme: ${error.message}\n`);
      return exitCodes[error.code];
    }
    io.stderr(`mneme: unexpected error: ${errorMessage(error)}\n`);
    return 1;
  }
}

/** The principal of `--as <user>`: the id is checked like every user id. */
function userPrincipal(userId: string): Principal {
  return { kind: 'user', userId: parseInput(UserIdSchema, userId, '--as'), label: `cli --as ${userId}` };
}

/**
 * STORE_FAILED, before anything opens it, unless `path` is `:memory:`, a regular file, or a new file
 * in a writable folder (created, one level at a time, when `createFolder`; Node's recursive mkdir never
 * returns for some paths under /proc).
 */
function checkDatabasePath(path: string, createFolder: boolean): void {
  if (path === ':memory:') return;
  const refuse = (reason: string) =>
    new MnemeError(
      ErrorCode.StoreFailed,
      `cannot use ${path} as the database: ${reason}; give another --db or MNEME_DB`,
    );
  const existing = (candidate: string): Stats | null => {
    try {
      return statSync(candidate);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      throw refuse(code === 'ENOTDIR' ? 'a part of its path is a file, not a folder' : errorMessage(error));
    }
  };
  const file = existing(path);
  if (file) {
    if (!file.isFile()) throw refuse(file.isDirectory() ? 'it is a folder' : 'it is not a regular file');
    return;
  }
  if (!createFolder) return;
  const missing: string[] = [];
  let folder = dirname(resolve(path));
  for (let stats = existing(folder); !stats; stats = existing(folder)) {
    missing.unshift(folder);
    if (dirname(folder) === folder) break;
    folder = dirname(folder);
  }
  if (missing.length === 0 && !existing(folder)?.isDirectory()) throw refuse(`${folder} is not a folder`);
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (error) {
      throw refuse(
        `cannot create the folder ${level} (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`,
      );
    }
  }
  try {
    accessSync(dirname(resolve(path)), constants.W_OK);
  } catch {
    throw refuse(`the folder ${dirname(resolve(path))} is not writable`);
  }
}
