// Child processes of the fault suite: the built `mneme` CLI as a server or a one-shot command, and
// helper scripts. Every child is tracked and killed when the suite exits, also on failure or Ctrl-C.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const mnemeBinary = join(repositoryRoot, 'dist', 'cli', 'mneme.js');

/** The environment of every mneme child: no model, no network, nothing from the caller's MNEME_* settings. */
export function offlineEnvironment() {
  const environment = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('MNEME_') && value !== undefined) environment[name] = value;
  }
  return { ...environment, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' };
}

const running = new Set();

/** Kills every child still running (SIGKILL); called on exit, on failure and on Ctrl-C. */
export function killEveryChild() {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
}

process.on('exit', killEveryChild);

/** Spawns a node script with the offline environment and tracks it until it exits. */
export function spawnNode(scriptArguments, options = {}) {
  const child = spawn(process.execPath, scriptArguments, {
    cwd: options.cwd ?? repositoryRoot,
    env: options.environment ?? offlineEnvironment(),
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (text) => {
    output.stdout += text;
  });
  child.stderr.on('data', (text) => {
    output.stderr += text;
  });
  if (options.stdin !== undefined) {
    child.stdin.on('error', () => {});
    child.stdin.end(options.stdin);
  }
  const exited = new Promise((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, output, exited };
}

/**
 * Runs one `mneme` command to its end (or kills it at `timeoutMs`) and returns its exit code, signal,
 * output and duration.
 */
export async function runMneme(commandArguments, options = {}) {
  const started = performance.now();
  const { child, output, exited } = spawnNode([mnemeBinary, ...commandArguments], options);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? 60_000);
  const { code, signal } = await exited;
  clearTimeout(timer);
  return { code, signal, timedOut, ...output, milliseconds: performance.now() - started };
}

/** A free TCP port on 127.0.0.1 (a listener is opened on port 0, then closed). */
export async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts `mneme serve` on 127.0.0.1 and resolves once it prints its address. `port` 0 lets the server
 * pick one; `readyTimeoutMs` bounds the wait (a server that never listens is killed).
 */
export async function startServer(database, options = {}) {
  const started = performance.now();
  const port = options.port ?? 0;
  const serveArguments = [mnemeBinary, '--db', database, 'serve', '--host', '127.0.0.1', '--port', String(port)];
  const server = spawnNode([...serveArguments, ...(options.extraArguments ?? [])]);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      server.child.kill('SIGKILL');
      reject(new Error(`mneme serve did not listen within ${options.readyTimeoutMs ?? 60_000} ms`));
    }, options.readyTimeoutMs ?? 60_000);
    const check = () => {
      const match = /mneme listening on (http:\/\/[^\s]+)/.exec(server.output.stderr);
      if (match) {
        clearTimeout(timer);
        server.child.stderr.off('data', check);
        resolve(match[1]);
      }
    };
    server.child.stderr.on('data', check);
    server.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`mneme serve exited (${signal ?? code}) before listening: ${server.output.stderr.trim()}`));
    });
    check();
  });
  return {
    url,
    child: server.child,
    output: server.output,
    exited: server.exited,
    listeningAfterMs: performance.now() - started,
    /** kill -9: no clean stop. */
    async kill() {
      server.child.kill('SIGKILL');
      return server.exited;
    },
    /** SIGTERM: the documented clean stop; SIGKILL after `graceMs`. */
    async stop(graceMs = 20_000) {
      server.child.kill('SIGTERM');
      const timer = setTimeout(() => server.child.kill('SIGKILL'), graceMs);
      const result = await server.exited;
      clearTimeout(timer);
      return result;
    },
  };
}

export const sleep = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));
