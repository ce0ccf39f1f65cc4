import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.js';
import { mnemeBinary } from './serve-process.js';
import { tmpfsMounts } from './tmpfs-mounts.js';

/**
 * wt-attack24b: `mneme export` writing to a disk that fills up. To standard output redirected to a file, Node writes
 * with `writeSync` and does not look at how much was written: the last write was cut short without an error, and
 * the export exited 0 with a file that has no end line (a backup script took it for a backup). An earlier write
 * that met ENOSPC ended it with exit code 1 and "unexpected error", a code the CLI does not document.
 */
const folder = mkdtempSync(join(tmpdir(), 'mneme-attack24b-export-'));
const database = join(folder, 'mneme.db');
const { mount, canMount, unmountAll } = tmpfsMounts(folder);

afterAll(() => {
  unmountAll();
  rmSync(folder, { recursive: true, force: true });
});

/** Runs the built `mneme export` with its standard output on `out` (a path opened for writing). */
function exportTo(out: string, args: readonly string[] = []): Promise<{ code: number | null; stderr: string }> {
  const descriptor = openSync(out, 'w');
  const child = spawn(process.execPath, [mnemeBinary, '--db', database, 'export', ...args], {
    env: { ...process.env, MNEME_EMBEDDER: 'none', MNEME_CHAT: 'none' },
    stdio: ['ignore', descriptor, 'pipe'],
  });
  closeSync(descriptor);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

beforeAll(async () => {
  for (let index = 0; index < 30; index++) {
    const added = await runCli(database, ['add', `memory ${index}: ${'a sentence worth keeping '.repeat(8)}`]);
    expect(added.code).toBe(0);
  }
});

describe('mneme export on a disk that fills up', () => {
  it('exits with code 2 and one line when standard output takes no byte', async () => {
    const result = await exportTo('/dev/full');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^mneme: cannot write the export to standard output: ENOSPC[^\n]*\n$/);
  });

  it.skipIf(!canMount)(
    'does not exit 0 when the disk fills during the last write to a redirected standard output (needs the right to mount)',
    async () => {
      const whole = join(folder, 'whole.jsonl');
      expect((await exportTo(whole)).code).toBe(0);
      const size = statSync(whole).size;
      const lines = readFileSync(whole, 'utf8').trimEnd().split('\n');
      expect(JSON.parse(lines.at(-1) ?? '{}')).toMatchObject({ type: 'end' });
      // One write of fewer than 64 KiB (the export's chunk), on a disk a page too small for it.
      expect(size).toBeGreaterThan(4096);
      expect(size).toBeLessThan(64 * 1024);
      const disk = mount('short', Math.floor((size - 1) / 4096) * 4096);
      if (disk === null) throw new Error('mount failed after the probe');
      const cut = await exportTo(join(disk, 'export.jsonl'));
      expect(statSync(join(disk, 'export.jsonl')).size).toBeLessThan(size);
      expect(cut.code).toBe(2);
      expect(cut.stderr).toMatch(/^mneme: cannot write the export to standard output: ENOSPC[^\n]*\n$/);
      // With --out, the partial file is removed and the target never appears.
      rmSync(join(disk, 'export.jsonl'));
      const out = await exportTo('/dev/null', ['--out', join(disk, 'named.jsonl')]);
      expect(out.code).toBe(2);
      expect(out.stderr).toMatch(/^mneme: cannot write [^\n]*ENOSPC[^\n]*\n$/);
      expect(existsSync(join(disk, 'named.jsonl'))).toBe(false);
      expect(readdirSync(disk)).toEqual([]);
    },
  );
});
