import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll } from 'vitest';

const dist = resolve(import.meta.dirname, '../dist');

/** What a crash test file shares: its folder, the built library its writers import, and the kill. */
export interface CrashTest {
  /** A temporary folder, removed (after every child is killed) when the file's tests end. */
  folder: string;
  /** The import URL of a file of the built library (`dist/`), for a writer's script. */
  built(file: string): string;
  /** Whether the library is built (the writers need `npm run build`). */
  isBuilt(): boolean;
  /** {@link killMidWrite} with the file's children. */
  killMidWrite(script: string, path: string, round: number, writes: number): Promise<void>;
}

/** Sets up a crash test file: its folder (named after `prefix`) and its children, cleaned up after its tests. */
export function crashTest(prefix: string): CrashTest {
  const folder = mkdtempSync(join(tmpdir(), `mneme-${prefix}-`));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(folder, { recursive: true, force: true });
  });
  return {
    folder,
    built: (file) => pathToFileURL(join(dist, file)).href,
    isBuilt: () => existsSync(join(dist, 'index.js')),
    killMidWrite: (script, path, round, writes) => killMidWrite(script, path, round, writes, children),
  };
}

/**
 * Starts `node -e <script> <path> <round>` (a writer that prints one line a commit), waits for `writes` lines,
 * then kills it with SIGKILL; fails if it stops on its own. The child goes into `children`, for the file's cleanup.
 */
export async function killMidWrite(
  script: string,
  path: string,
  round: number,
  writes: number,
  children: ChildProcess[],
): Promise<void> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, path, String(round)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  await new Promise<void>((done, fail) => {
    let written = 0;
    child.stdout?.on('data', (chunk: Buffer) => {
      written += chunk.toString().split('\n').length - 1;
      if (written >= writes) {
        child.kill('SIGKILL');
        done();
      }
    });
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') fail(new Error(`the writer stopped on its own (${code}): ${errors}`));
    });
  });
  await new Promise((done) => child.once('close', done));
}
