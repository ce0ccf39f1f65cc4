import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

/** The built CLI: tests of the package as users run it. */
export const mnemeBinary = resolve(import.meta.dirname, '../dist/cli/mneme.js');

/** A running `mneme serve` child process. */
export interface ServeProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  /** Sends JSON (with the key, when given) and returns the status and the parsed body. */
  call: (
    method: string,
    path: string,
    body?: unknown,
    key?: string,
  ) => Promise<{ status: number; body: Record<string, unknown> }>;
}

/**
 * Starts the built `mneme serve` on a free port of 127.0.0.1 (offline, no models unless `env` names
 * them; `args` are added to the command line) and resolves once it listens. The caller kills the child
 * (`children` collects it for an afterAll).
 */
export function startServeProcess(
  database: string,
  children: ChildProcess[],
  options: { args?: readonly string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [mnemeBinary, 'serve', '--port', '0', '--db', database, ...(options.args ?? [])],
    {
      env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let stderr = '';
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`mneme serve did not start: ${stderr}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (match?.[1]) {
        clearTimeout(timer);
        const url = match[1];
        resolvePromise({
          url,
          child,
          stderr: () => stderr,
          async call(method, path, body, key) {
            const response = await fetch(`${url}${path}`, {
              method,
              headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            });
            return { status: response.status, body: (await response.json()) as Record<string, unknown> };
          },
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`mneme serve exited with ${code}: ${stderr}`)));
  });
}
