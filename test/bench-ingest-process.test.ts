import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const binary = resolve(import.meta.dirname, '../dist/cli/mneme.js');
const folder = mkdtempSync(join(tmpdir(), 'mneme-bench-phase-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('mneme bench from the built package', () => {
  it('runs ingest and the maintenance cycles in a process of their own and reports their figures', async () => {
    expect(existsSync(binary), 'run `npm run build` first').toBe(true);
    const file = join(folder, 'bench.json');
    const args = ['bench', '--sizes', '40', '--queries', '3', '--messages', '6', '--json', file, '--no-progress'];
    const child = spawn(process.execPath, [binary, ...args], { cwd: folder, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.resume();
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(code, stderr).toBe(0);
    const phasePid = Number(/mneme: ingest and maintenance in a process of its own \(pid (\d+)\)/.exec(stderr)?.[1]);
    expect(phasePid).toBeGreaterThan(0);
    expect(phasePid).not.toBe(child.pid);
    // The phase's own lines reach the bench's stderr, after the line naming its process.
    const after = stderr.slice(stderr.indexOf(`(pid ${phasePid})`));
    expect(after).toContain('mneme: the first maintenance cycle over 40 memories');
    expect(after).toContain('mneme: a maintenance cycle after them');
    const figures = JSON.parse(readFileSync(file, 'utf8')).sizes['40'].mneme;
    expect(figures.ingestPerSecond).toBeGreaterThan(0);
    expect(figures.ingestBatchedPerSecond).toBeGreaterThan(0);
    expect(figures.maintenanceMs).toBeGreaterThan(0);
    expect(figures.maintenanceSteadyMs).toBeGreaterThan(0);
    expect(figures.maintenancePeakRssBytes).toBeGreaterThan(0);
  });
});
