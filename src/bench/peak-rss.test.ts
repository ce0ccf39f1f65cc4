import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { peakRssBytes, resetPeakRss } from './peak-rss.js';

const MiB = 1024 * 1024;

describe('resetPeakRss', () => {
  it.runIf(process.platform === 'linux')('brings the peak back down to what the process holds now', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // A block of 256 MiB, every page written, raises the peak by about that much; freed, the pages go back.
    let block: Buffer | null = Buffer.alloc(256 * MiB, 1);
    const before = process.memoryUsage.rss();
    const raised = peakRssBytes();
    expect(raised).toBeGreaterThanOrEqual(before);
    expect(block.length).toBe(256 * MiB);
    block = null;
    gc();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const held = process.memoryUsage.rss();
    expect(raised - held).toBeGreaterThan(128 * MiB);
    // Without the reset, the peak stays where the block took it.
    expect(peakRssBytes()).toBeGreaterThanOrEqual(raised);
    expect(resetPeakRss()).toBe(true);
    // After the reset the peak is the resident set now. Other threads of the test process (the runner's workers,
    // V8's) may have grown it a little since `held` was read, so the bound keeps half the block as slack: the CI once
    // saw the peak 0.7 MiB above `raised - 128 MiB`.
    expect(peakRssBytes()).toBeLessThan(raised - 64 * MiB);
  });
});
