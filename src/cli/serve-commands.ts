import type { Command } from 'commander';
import { createMneme } from '../config/create-mneme.js';
import type { EnvironmentConfig } from '../config/load-config.js';
import { describeDatabase } from '../config/open-storage.js';
import { resolveChatModel, resolveEmbedder } from '../config/providers.js';
import { errorMessage } from '../core/errors.js';
import { type RunningHttpServer, startHttpServer } from '../http/http-server.js';
import type { ApiKeyRecord } from '../storage/api-key-store.js';
import { createMaintenanceScheduler } from '../workers/maintenance-scheduler.js';
import { wholeNumberOption } from './cli-arguments.js';
import type { CliIo, WithEngine } from './cli-io.js';

/** Milliseconds a stopping service waits for a maintenance task in progress before closing the database under it. */
const MAINTENANCE_STOP_GRACE_MS = 1000;

/** The first SIGTERM or SIGINT: how the service is asked to stop. */
interface StopSignals {
  /** Resolves with the first signal's name. */
  readonly received: Promise<string>;
  /** The first signal's name, or null while none came. */
  signal(): string | null;
  dispose(): void;
}

/**
 * Catches SIGTERM and SIGINT from now on (the service installs this before anything slow, so a
 * signal never kills it half-open) and says at once that it stops. A second signal exits at once,
 * with 128 + the signal's number.
 */
function catchStopSignals(io: CliIo): StopSignals {
  let first: string | null = null;
  let resolveReceived: (signal: string) => void = () => {};
  const received = new Promise<string>((resolve) => {
    resolveReceived = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    if (first !== null) {
      io.stderr(`mneme: ${signal} again, exiting at once\n`);
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    first = signal;
    io.stderr(`mneme: ${signal}, stopping: no new requests, extraction stops after the message in progress\n`);
    resolveReceived(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    received,
    signal: () => first,
    dispose() {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
}

/** Waits for `work`, at most `ms` milliseconds; true when it finished. */
async function finishesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const overdue = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), overdue]);
  } finally {
    clearTimeout(timer);
  }
}

/** How often `mneme serve` reads the stored policy again. */
const POLICY_CHECK_MS = 60_000;

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
    .option('--quiet', 'no access log (one line per request on stderr: time, method, path, status, milliseconds)')
    .action(async (options: { host?: string; port?: number; open?: boolean; quiet?: boolean }) => {
      const globals = program.opts<{ db?: string }>();
      const path = globals.db ?? config.databasePath;
      const { port } = options;
      const stop = catchStopSignals(io);
      try {
        io.stderr(`mneme: opening ${describeDatabase(path)}\n`);
        const embedder = (await resolveEmbedder(config.providers.embedder, config.providers)).model;
        const chat = (await resolveChatModel(config.providers.chat, config.providers)).model;
        const mneme = await createMneme({
          path,
          ...(embedder ? { embedder } : {}),
          ...(chat ? { chat } : {}),
          logger: { warn: (message) => io.stderr(`mneme: ${message}\n`) },
        });
        const scheduler = createMaintenanceScheduler({
          mneme,
          onError: (task, error) =>
            io.stderr(
              stop.signal()
                ? `mneme: maintenance task ${task} was interrupted by the stop; it runs again after the next start\n`
                : `mneme: maintenance task ${task} failed: ${errorMessage(error)}\n`,
            ),
        });
        let server: RunningHttpServer | null = null;
        let policyCheck: ReturnType<typeof setInterval> | null = null;
        try {
          if (stop.signal() === null) {
            server = await startHttpServer({
              mneme,
              ...(options.host ? { host: options.host } : {}),
              ...(port === undefined ? {} : { port }),
              ...(options.open ? { open: true } : {}),
              ...(options.quiet ? {} : { accessLog: (line: string) => io.stderr(`mneme: ${line}\n`) }),
              logError: (error) =>
                io.stderr(`mneme: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`),
            });
            io.stderr(
              `mneme listening on ${server.url} (database ${describeDatabase(path)}; ${activeModels(embedder?.modelId, chat?.modelId)})\n`,
            );
            mneme.whenIdle().catch((error) => io.stderr(`mneme: extraction catch-up failed: ${errorMessage(error)}\n`));
            scheduler.start();
          }
          // A policy changed by another process (`mneme policy set`) is taken up within a minute.
          policyCheck = setInterval(() => {
            mneme.policy().catch((error) => io.stderr(`mneme: keeping the current policy: ${errorMessage(error)}\n`));
          }, POLICY_CHECK_MS);
          policyCheck.unref();
          await stop.received;
          await server?.close();
        } finally {
          if (policyCheck) clearInterval(policyCheck);
          await finishesWithin(scheduler.stop(), MAINTENANCE_STOP_GRACE_MS);
          await mneme.close();
        }
      } finally {
        stop.dispose();
      }
    });

  const keys = program.command('keys').description('API keys of the HTTP service');
  keys
    .command('create')
    .description('create an API key (shown once): an administrator key, or one bound to a user')
    .requiredOption('--label <label>', 'what the key is for')
    .option('--user <id>', 'bind the key to this user: it acts only as them')
    .action(
      withEngine(
        (mneme, options: { label: string; user?: string }) =>
          mneme.apiKeys.create({ label: options.label, ...(options.user ? { userId: options.user } : {}) }),
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

/** `models: embedding ollama:nomic-embed-text, chat offline`, or `models: offline` when neither is set. */
export function activeModels(embedder: string | undefined, chat: string | undefined): string {
  if (!embedder && !chat) return 'models: offline (lexical search, offline extractor)';
  return `models: embedding ${embedder ?? 'none (lexical search)'}, chat ${chat ?? 'none (offline extractor)'}`;
}
