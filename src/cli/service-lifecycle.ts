import { createMneme } from '../config/create-mneme.js';
import type { EnvironmentConfig } from '../config/load-config.js';
import { describeDatabase } from '../config/open-storage.js';
import { resolveChatModel } from '../config/providers.js';
import { errorMessage } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import type { RunningHttpServer } from '../http/http-server.js';
import { createMaintenanceScheduler } from '../workers/maintenance-scheduler.js';
import type { CliIo } from './cli-io.js';

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

/** How often a service reads the stored policy again. */
const POLICY_CHECK_MS = 60_000;

/** What a long-running command (`mneme serve`, `mneme proxy`) listens with. */
export interface ServiceFace {
  /** Starts listening for the opened engine. */
  listen(mneme: Mneme): Promise<RunningHttpServer>;
  /** The startup line (`setting`: the database and the active models), without its newline. */
  listening(url: string, setting: string): string;
}

/**
 * Runs a service until SIGTERM or SIGINT: catches the signals before anything slow, opens the engine
 * with the configured models (its extraction worker included), listens before the extraction catch-up,
 * adds the maintenance scheduler and re-reads the policy every minute, then stops in order: no new
 * requests (1 s for those in flight), the worker after its message, a maintenance task (1 s), the database.
 */
export async function runService(io: CliIo, config: EnvironmentConfig, path: string, face: ServiceFace): Promise<void> {
  const stop = catchStopSignals(io);
  try {
    io.stderr(`mneme: opening ${describeDatabase(path)}\n`);
    const chat = (await resolveChatModel(config.providers.chat, config.providers)).model;
    // The embedder is resolved by createMneme: a model mneme does not know takes the dimensions the database's index
    // holds for it, without asking its provider (which may be down: the service then starts, lexical only).
    const mneme = await createMneme({
      path,
      // A service on a file it may not write would refuse every write: it does not start.
      writable: true,
      embedder: config.providers.embedder,
      providers: config.providers,
      ...(chat ? { chat } : {}),
      logger: { warn: (message) => io.stderr(`mneme: ${message}\n`) },
    });
    const embedder = (await mneme.vectorStatus()).embedder;
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
        server = await face.listen(mneme);
        const setting = `database ${describeDatabase(path)}; ${activeModels(embedder ?? undefined, chat?.modelId)}`;
        io.stderr(`${face.listening(server.url, setting)}\n`);
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
}

/** `models: embedding ollama:nomic-embed-text, chat offline`, or `models: offline` when neither is set. */
export function activeModels(embedder: string | undefined, chat: string | undefined): string {
  if (!embedder && !chat) return 'models: offline (lexical search, offline extractor)';
  return `models: embedding ${embedder ?? 'none (lexical search)'}, chat ${chat ?? 'none (offline extractor)'}`;
}
