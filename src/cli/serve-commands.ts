import { existsSync } from 'node:fs';
import type { Command, Option } from 'commander';
import type { EnvironmentConfig } from '../config/load-config.js';
import { isDatabaseUrl } from '../config/open-storage.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import { isLoopback, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, startHttpServer } from '../http/http-server.js';
import type { ApiKeyRecord } from '../storage/api-key-store.js';
import { wholeNumberOption } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';
import { runService } from './service-lifecycle.js';

/** `--connections-per-address` of `mneme serve` and `mneme proxy` (ADR 33). */
export function connectionsPerAddressOption(): Option {
  return wholeNumberOption(
    '--connections-per-address <n>',
    `connections one client address may hold open at once (default ${MAX_CONNECTIONS_PER_ADDRESS}; raise it behind a reverse proxy)`,
    1,
    MAX_CONNECTIONS,
  );
}

/** `mneme serve` and `mneme keys create|list|revoke`. */
export function registerServeCommands(
  program: Command,
  withEngine: WithEngine,
  io: CliIo,
  config: EnvironmentConfig,
): void {
  program
    .command('serve')
    .description('run the HTTP service with the extraction worker and the maintenance scheduler')
    .option('--host <address>', 'address to bind (default 127.0.0.1; others need an API key)')
    .addOption(wholeNumberOption('--port <port>', 'port (default 7370; 0 picks a free one)', 0, 65_535))
    .option('--open', 'no authentication even though API keys exist (loopback only; every caller is an administrator)')
    .addOption(connectionsPerAddressOption())
    .option('--quiet', 'no access log (one line per request on stderr: time, method, path, status, milliseconds)')
    .action(
      async (options: {
        host?: string;
        port?: number;
        open?: boolean;
        quiet?: boolean;
        connectionsPerAddress?: number;
      }) => {
        const globals = program.opts<{ db?: string }>();
        const { port } = options;
        const path = globals.db ?? config.databasePath;
        // A file not made yet holds no API key: refused before it is made, as the server would refuse it after.
        const host = options.host;
        if (
          host !== undefined &&
          !isLoopback(host) &&
          path !== ':memory:' &&
          !isDatabaseUrl(path) &&
          !existsSync(path)
        ) {
          throw new MnemeError(
            ErrorCode.ConfigInvalid,
            `refusing to listen on ${host} without authentication: ${path} does not exist yet, so it has no API key; create it with one first (mneme --db ${path} --create keys create --label <name>), or bind 127.0.0.1`,
          );
        }
        await runService(io, config, path, {
          listen: (mneme) =>
            startHttpServer({
              mneme,
              ...(options.host ? { host: options.host } : {}),
              ...(port === undefined ? {} : { port }),
              ...(options.open ? { open: true } : {}),
              ...(options.connectionsPerAddress === undefined
                ? {}
                : { connectionsPerAddress: options.connectionsPerAddress }),
              ...(options.quiet ? {} : { accessLog: (line: string) => io.stderr(`mneme: ${line}\n`) }),
              logError: (error) =>
                io.stderr(`mneme: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`),
            }),
          listening: (url, setting) => `mneme listening on ${url} (${setting})`,
        });
      },
    );

  const keys = program.command('keys').description('API keys of the HTTP service');
  keys
    .command('create')
    .description('create an API key (shown once): an administrator key, or one bound to a user')
    .requiredOption('--label <label>', 'what the key is for')
    .option('--user <id>', 'bind the key to this user: it acts only as them')
    .action(
      withEngine(
        (mneme, options: { label: string; user?: string }) =>
          // An empty --user (an unset variable) is refused by the schema, never read as no user: that is an administrator key.
          mneme.apiKeys.create({
            label: options.label,
            ...(options.user === undefined ? {} : { userId: options.user }),
          }),
        (key) =>
          `${key.key}\n(${key.userId ? `bound to user ${key.userId}` : 'administrator'} key "${key.label}", prefix ${key.prefix}; shown once, store it now)`,
      ),
    );
  keys
    .command('list')
    .description('list API keys (prefixes only)')
    .action(withEngine((mneme) => mneme.apiKeys.list(), formatKeys));
  keys
    .command('revoke')
    .description('revoke an API key by its prefix')
    .argument('<prefix>', 'the prefix shown by keys list')
    .action(
      withEngine(
        (mneme, prefix: string) => mneme.apiKeys.revoke(prefix),
        (key) => `revoked ${key.prefix}`,
      ),
    );
}

function formatKeys(keys: ApiKeyRecord[]): string {
  if (keys.length === 0) return 'no API keys (until one is created, the service runs open on loopback only)';
  return keys
    .map(
      (key) =>
        `${key.prefix}\t${key.label}\t${key.userId ? `user ${key.userId}` : 'admin'}\t${key.revokedAt ? `revoked ${key.revokedAt}` : `created ${key.createdAt}`}`,
    )
    .join('\n');
}
