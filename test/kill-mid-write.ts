import { type ChildProcess, spawn } from 'node:child_process';

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
