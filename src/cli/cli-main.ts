import { accessSync, constants, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import { createMneme } from '../config/create-mneme.js';
import { loadConfig } from '../config/load-config.js';
import { describeDatabase, localDatabasePath } from '../config/open-storage.js';
import type { Principal } from '../core/access.js';
import { ErrorCode, errorMessage, isMnemeError, MnemeError } from '../core/errors.js';
import { parseInput, UserIdSchema } from '../core/schemas.js';
import { entryAt, makeFolders } from '../storage/make-folders.js';
import { registerBenchCommands } from './bench-commands.js';
import { registerChannelCommands } from './channel-commands.js';
import { defined } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';
import { registerCopyCommands } from './copy-commands.js';
import { registerDoctorCommands } from './doctor-commands.js';
import { fileSize, registerIngestCommands } from './ingest-commands.js';
import { registerMaintainCommands } from './maintain-commands.js';
import { registerMcpCommands } from './mcp-commands.js';
import { registerMemoryCommands } from './memory-commands.js';
import { registerPolicyCommands } from './policy-commands.js';
import { registerProxyCommands } from './proxy-commands.js';
import { registerSearchCommands } from './search-commands.js';
import { registerServeCommands } from './serve-commands.js';
import { terminalText } from './terminal-text.js';
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
const withoutDatabase = new Set(['bench', 'eval', 'help', 'copy']);

/**
 * Commands for which a missing database file is no error: those that create it, and doctor, which reports
 * it. Every other command refuses a missing file unless `--create` is given.
 */
/**
 * Commands that open the database themselves, not through `withEngine`, so `--as` could not restrict them:
 * refused with it (each says what to use instead) rather than run with every right.
 */
const notAsUser: Record<string, string> = {
  mcp: "leave out --as and start it with --user <id> (or MNEME_USER) for a session with that user's rights",
  serve: "leave out --as; the service acts for each request's API key (mneme keys create --user <id>)",
  proxy: "leave out --as; the proxy acts for each request's API key (mneme keys create --user <id>)",
  copy: 'leave out --as; a copy holds every row of the database',
  bench: 'leave out --as; the benchmark runs on a database of its own',
  eval: 'leave out --as; the evaluation runs on a database of its own',
  doctor: "leave out --as; it reads the vector index of the whole database, which a user's rights do not",
};

const mayStartWithoutDatabase = new Set(['init', 'serve', 'proxy', 'mcp', 'ingest', 'import', 'doctor']);

interface GlobalOptions {
  db?: string;
  json?: boolean;
  as?: string;
  create?: boolean;
}

/** The package's version, from the package.json two folders up (`src/cli/` and `dist/cli/` alike). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return manifest.version ?? 'unknown';
}

/** True when `--json` comes before a `--` that ends the options: errors are then printed as JSON too. */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((word) => word === '--json' || word.startsWith('--json='));
}

/** Prints an error on stderr: one line `mneme: <message>`, or `{ "error": { "code", "message" } }` with --json. */
function printError(io: CliIo, json: boolean, code: string, message: string): void {
  io.stderr(json ? `${JSON.stringify({ error: { code, message } })}\n` : `mneme: ${terminalText(message)}\n`);
}

/** Runs the `mneme` command line with `argv` (without `node` and the script) and returns the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const config = loadConfig(io.env);
  const json = wantsJson(argv);
  const program = new Command('mneme')
    .description('Long-term memory for conversational AI agents.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .option('--db <path>', 'database file, or a postgres:// URL (MNEME_DB, else ./data/mneme.db)')
    .option(
      '--create',
      'create the database when the file does not exist (init, serve, proxy, mcp, ingest and import always do)',
    )
    .option('--json', 'print JSON for scripts (errors too, on stderr)')
    .option('--as <user>', "act as this user, with a user key's rights (ADR 5), instead of as the administrator")
    .exitOverride()
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // Commander's own errors (a bad option value, an unknown command) are printed by the catch below.
      outputError: () => {},
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
        logger: { warn: (message) => io.stderr(`mneme: ${terminalText(message)}\n`) },
        ...defined(policyOf?.(...commandArguments) ?? {}),
      }).catch((error: unknown) => {
        throw isMnemeError(error)
          ? error
          : new MnemeError(
              ErrorCode.StoreFailed,
              `cannot open the database at ${describeDatabase(path)}: ${errorMessage(error)}`,
              {
                cause: error,
              },
            );
      });
      try {
        const principal = globals.as === undefined ? null : userPrincipal(globals.as);
        const result = await run(principal ? mneme.as(principal) : mneme, ...commandArguments);
        // A command that printed its own output (`mneme export` to stdout) returns nothing more to print.
        if (result !== undefined) {
          io.stdout(`${globals.json ? JSON.stringify(result, null, 2) : terminalText(print(result))}\n`);
        }
      } finally {
        await mneme.close();
      }
    };

  program.hook('preAction', (_program, command) => {
    let top = command;
    while (top.parent && top.parent !== program) top = top.parent;
    if (program.opts<GlobalOptions>().as !== undefined && notAsUser[top.name()]) {
      throw new MnemeError(
        ErrorCode.InvalidInput,
        `--as does not apply to mneme ${top.name()}, which would run with every right: ${notAsUser[top.name()]}`,
      );
    }
    if (withoutDatabase.has(top.name())) return;
    if (top.name() === 'init' && program.opts<GlobalOptions>().as !== undefined) {
      throw new MnemeError(
        ErrorCode.Forbidden,
        'creating a database under a preset needs an administrator; leave out --as',
      );
    }
    // A file to read that is missing or a folder is refused before the database is opened (or created).
    const input = command.args[0];
    if ((top.name() === 'ingest' || top.name() === 'import') && input !== undefined && input !== '-') {
      fileSize(input);
    }
    const globals = program.opts<GlobalOptions>();
    checkDatabasePath(globals.db ?? config.databasePath, {
      createFolder: top.name() !== 'doctor',
      mayCreate: globals.create === true || mayStartWithoutDatabase.has(top.name()),
    });
  });

  registerPolicyCommands(program, withEngine);
  registerMemoryCommands(program, withEngine);
  registerChannelCommands(program, withEngine);
  registerIngestCommands(program, withEngine, io);
  registerTurnsCommands(program, withEngine);
  registerSearchCommands(program, withEngine, io);
  registerMaintainCommands(program, withEngine);
  registerDoctorCommands(program, withEngine, io, config);
  registerBenchCommands(program, io);
  registerCopyCommands(program, io);
  registerServeCommands(program, withEngine, io, config);
  registerProxyCommands(program, io, config);
  registerMcpCommands(program, io, config);
  registerTransferCommands(program, withEngine, io, () => program.opts<GlobalOptions>().db ?? config.databasePath);

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0;
      // `mneme` alone printed its help; any other commander error is a usage error: one line.
      if (error.code !== 'commander.help' && error.code !== 'commander.helpDisplayed') {
        printError(io, json, ErrorCode.InvalidInput, error.message.replace(/^error: /, '').trim());
      }
      return 2;
    }
    if (isMnemeError(error)) {
      printError(io, json, error.code, error.message);
      return exitCodes[error.code];
    }
    printError(io, json, 'UNEXPECTED', `unexpected error: ${errorMessage(error)}`);
    return 1;
  }
}

/** The principal of `--as <user>`: the id is checked like every user id. */
function userPrincipal(userId: string): Principal {
  return { kind: 'user', userId: parseInput(UserIdSchema, userId, '--as'), label: `cli --as ${userId}` };
}

/**
 * STORE_FAILED, before anything opens it, unless `path` is `:memory:` or a server URL, a regular file, a
 * `pglite:<folder>` that is a folder, or a new file or PGlite folder in a writable folder (created when
 * `createFolder`, by `makeFolders`, which the SQLite adapter uses too). A file or PGlite folder that does
 * not exist is NOT_FOUND unless `mayCreate`, so that a mistyped --db is not a new empty database.
 */
function checkDatabasePath(path: string, options: { createFolder: boolean; mayCreate: boolean }): void {
  const local = localDatabasePath(path);
  if (local === null) return;
  const refuse = (reason: string) =>
    new MnemeError(
      ErrorCode.StoreFailed,
      `cannot use ${path} as the database: ${reason}; give another --db or MNEME_DB`,
    );
  const entry = entryAt(local.path, refuse);
  if (entry && local.kind === 'folder') {
    if (!entry.isDirectory()) throw refuse(`${local.path} is not a folder (PGlite keeps a database in a folder)`);
    return;
  }
  if (entry) {
    if (!entry.isFile()) throw refuse(entry.isDirectory() ? 'it is a folder' : 'it is not a regular file');
    return;
  }
  if (!options.mayCreate) {
    throw new MnemeError(
      ErrorCode.NotFound,
      `no database at ${path}: check --db or MNEME_DB, or create it (mneme init, or --create)`,
    );
  }
  if (!options.createFolder) return;
  // The folders it goes in (a PGlite folder's too: PGlite makes the folder itself, not its parents).
  const parent = dirname(resolve(local.path));
  try {
    makeFolders(parent);
  } catch (error) {
    throw refuse(errorMessage(error));
  }
  try {
    accessSync(parent, constants.W_OK);
  } catch {
    throw refuse(`the folder ${parent} is not writable`);
  }
}
